"""ASCII-only case mapping for the enum values AWS writes (ECS, ELB, CloudWatch): pure, no imports.

ECS's enum values are ASCII: a deployment's ``status`` (``PRIMARY``, ``ACTIVE``, ``INACTIVE``), its
``rolloutState`` (``IN_PROGRESS``, ``COMPLETED``, ``FAILED``), a service deployment's ``status``
(``ROLLBACK_IN_PROGRESS``...), a task's ``lastStatus`` and ``stopCode`` (``EssentialContainerExited``...),
the deployment controller and strategy (ECS API Reference, data types ``Deployment``, ``ServiceDeployment``,
``Task``, ``DeploymentController``, ``DeploymentConfiguration``). Python's ``str.upper()``/``str.lower()``
map some non-ASCII letters onto ASCII ones (``ı`` -> ``I``, ``ſ`` -> ``S``, ``ﬆ`` -> ``ST``, the Kelvin
sign ``K`` -> ``k``), so ``prımary`` would read as ``PRIMARY``. These helpers change the case of ASCII
letters only: a non-ASCII look-alike stays unequal to every ASCII enum value, an unknown value, handled as
the caller handles any other unknown value. Free text that humans read (reasons, log lines) is not an enum:
its comparisons keep ``str.lower()`` unless a look-alike could turn a non-crash into a crash.

Whitespace: AWS writes these values unpadded (the API Reference lists each enum's exact values; ECS-EVENTS.md
names no padding), so a padded value is hand-made or hostile. :func:`ascii_strip` trims only ASCII whitespace
(what a hand-written file or a shell adds), never Unicode's (``str.strip()`` also drops a no-break space,
an em space, U+180E...): ``\u2003STOPPED`` stays an unknown value, as a look-alike letter does. A task's
``lastStatus``/``desiredStatus`` is not trimmed at all (:func:`~ecs_guardrail.core.classify.is_stopped`: the
watchdog's EventBridge rule matches ``STOPPED`` exactly).
"""

from __future__ import annotations

__all__ = ["ascii_upper", "ascii_lower", "ascii_strip"]

_TO_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}
_TO_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
#: ASCII whitespace: what ``str.strip()`` drops of an ASCII text (space, tab, LF, VT, FF, CR, and the
#: separators 0x1c-0x1f, which ``str.isspace()`` counts too)
_ASCII_SPACE = " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"


def ascii_upper(text: str) -> str:
    """``text`` with its ASCII letters ``a``-``z`` upper-cased and every other character (any non-ASCII
    letter included) left as it is, length unchanged. ``str.upper()`` where ``text`` is ASCII."""
    return text.upper() if text.isascii() else text.translate(_TO_UPPER)


def ascii_lower(text: str) -> str:
    """``text`` with its ASCII letters ``A``-``Z`` lower-cased and every other character (the Kelvin sign
    ``K`` included) left as it is, length unchanged. ``str.lower()`` where ``text`` is ASCII."""
    return text.lower() if text.isascii() else text.translate(_TO_LOWER)


def ascii_strip(text: str) -> str:
    """``text`` without leading and trailing ASCII whitespace (:data:`_ASCII_SPACE`); any non-ASCII space
    (no-break, em, ideographic...) is kept, so the value stays unequal to every enum value. ``str.strip()``
    where ``text`` is ASCII."""
    return text.strip() if text.isascii() else text.strip(_ASCII_SPACE)
