"""The validation kit under every layer: msgspec models with per-field checks and pydantic-style first problems.

Not decision logic (``core/``) nor shared configuration (``settings``): the event models of ``core/events.py``
and the settings of ``settings.py`` are both built on :mod:`ecs_guardrail.validation.fields`, and it imports
nothing of the package.
"""

__all__ = ["fields"]
