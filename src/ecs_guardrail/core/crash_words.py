"""What on-call reads in a decision's alert beyond the counts (ARCHITECTURE.md, "What on-call reads"):
the crash's own words and the change that started the loop. Pure: the lines come in already read
(:mod:`ecs_guardrail.adapters.logs`, or the replay's ``logs.jsonl``), the deployments already described.

**The crash's own words.** The last lines the crashed container wrote before its task stopped, as
CloudWatch Logs holds them (FilterLogEvents ``events[].timestamp``/``message``; the ``awslogs`` driver
writes one event per line of the container's stdout/stderr): at most :data:`MAX_LINES` lines and
:data:`MAX_CHARS` characters in all, the newest kept, each line cut to :data:`LINE_MAX`; secret-looking
values masked (:func:`mask`): what follows ``password=``, ``token=``, ``secret=`` (also ``:`` and
quoted JSON keys), AWS access key ids (``AKIA``/``ASIA`` + 16), a URL's ``user:pass@``. A message that
is not text (invalid UTF-8, control bytes) is made printable, never dropped. Lines that cannot be read
say why in one line (:class:`CrashWords`.``note``); the alert goes out either way.

**The change that started it** (:func:`change_line`): the task definition revision and image the
crashing tasks run; when the loop's first failure came within ``window`` after a deployment started,
also the revision and image that ran before (``DescribeServices`` ``deployments[]``: the deployment
with another ``taskDefinition``, the one being replaced or rolled back to).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from ecs_guardrail.core.lazy import lazy_module, lazy_pattern

if TYPE_CHECKING:
    import base64
    import binascii
else:  # imported by the first ``basic`` credential to check (_basic), not by every alert (issue 33 item 2)
    base64, binascii = lazy_module("base64"), lazy_module("binascii")

__all__ = ["MAX_LINES", "MAX_CHARS", "LINE_MAX", "CrashWords", "Revision", "clean", "mask", "masked", "quote",
           "change_line", "revision_name", "image_tag"]

#: lines quoted at most (ARCHITECTURE.md, "What on-call reads")
MAX_LINES = 10
#: characters quoted at most, all lines together (line breaks not counted)
MAX_CHARS = 1500
#: characters of one quoted line at most (a 1 MB line is cut here, marked with an ellipsis)
LINE_MAX = 300
#: characters of a message looked at at most before cutting (masking a 1 MB line would cost for nothing)
_READ_MAX = 4 * LINE_MAX
#: characters read past :data:`_READ_MAX` before masking, at least the longest start of a secret that does
#: not match its shape yet (a URL's ``scheme://user:password`` before its ``@``: 31 + 3 + 200 + 1 + 200)
_READ_TAIL = 440

_MASK = "****"
# words in a key that names a secret (password, passwd, pwd, token, secret and compounds such as
# api_token, client_secret, secret_access_key; passphrase, a signature, api keys, private keys, credentials)
_SECRET_WORD = r"(?:password|passwd|passphrase|pwd|token|secret|signature|api[_-]?key|private[_-]?key|credentials?)"
# key=value, key: value, key => value, "key": "value", \"key\": \"value\" (JSON inside a JSON string),
# key%3Dvalue (URL-encoded): a quoted value is masked to its closing quote (spaces, escaped quotes and
# all; to the end of the line when it is not closed), an unquoted one to a space or separator
_KEYED = lazy_pattern(
    r"""(?ix)
    (?P<key>(?:\\?["'])?(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{0,80}""" + _SECRET_WORD + r"""[A-Za-z0-9_.-]{0,80}(?:\\?["'])?
        \s*(?:=>|==?|:|%3D|%3A)\s*)
    (?:
        (?P<eq>\\")(?:(?!\\").)*(?:\\"|$)
      | (?P<dq>")(?:[^"\\]|\\.)*(?:"|$)
      | (?P<sq>')(?:[^'\\]|\\.)*(?:'|$)
      | [^\s"',;&}<]+
    )
    """)
# <password>value</password>
_XML = lazy_pattern(r"(?i)(<(?P<tag>[A-Za-z0-9_.:-]{0,40}" + _SECRET_WORD + r"[A-Za-z0-9_.-]{0,40})>)[^<]*")
# AWS access key ids: AKIA (long-term) and ASIA (temporary) + 16 upper-case letters or digits
_ACCESS_KEY = lazy_pattern(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")
# scheme://user:password@host: the credentials (a password may hold an @: up to the authority's last)
_URL_CREDENTIALS = lazy_pattern(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,30}://)[^/\s:@]{0,200}:[^/\s]{1,200}@")
# what a terminal or Slack would not show as text: C0/C1 controls, lone surrogates, line/paragraph separators
_CONTROL = lazy_pattern("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_SPACE = lazy_pattern("[\t\r\n]")
# Bearer tokens in a logged header; an Authorization header's credentials whatever their scheme
_BEARER = lazy_pattern(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")
_AUTHORIZATION = lazy_pattern(
    r"(?i)\b(authorization[\"']?\s*[=:]\s*[\"']?(?:(?:basic|bearer|digest|token|negotiate)\s+)?)[^\s\"',;]+")
# an HTTP Basic credential wherever it is written (a base64 ``user:pass``: :func:`_basic` masks only what decodes so)
_BASIC = lazy_pattern(r"(?i)\b(basic\s+)([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])")
# a port mapping, as docker run -p / ssh -p write it: [ip:]port[-port][:port[-port]][/proto] (not a secret)
_PORT = r"[0-9]{1,5}(?:-[0-9]{1,5})?"
_PORTS = r"(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}:)?" + _PORT + "(?::" + _PORT + r")?(?:/(?:tcp|udp|sctp))?"
# a secret passed as a command line's argument with a space: --password value, --api-token value, -p value
# (-p followed by a port mapping is docker's or ssh's port, not mysql's password)
_CLI_ARG = lazy_pattern(r"(?i)((?<!\S)(?:--?[A-Za-z0-9_.-]{0,40}" + _SECRET_WORD
                        + r"[A-Za-z0-9_-]{0,40}|-p(?!\s+" + _PORTS + r"""(?:[\s"',;&]|$)))\s+)(?!-)"""
                        + r"""(?:"[^"]*"?|'[^']*'?|[^\s"',;&]+)""")
# tokens known by their shape: GitHub, Slack, Stripe, JWTs, a Slack webhook's path
_TOKEN_SHAPES = lazy_pattern(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abposr]-[A-Za-z0-9-]{8,}"
    r"|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)")
_SLACK_HOOK = lazy_pattern(r"(?i)(hooks\.slack\.com/(?:services|workflows|triggers)/)[^\s\"'<>]+")
# a PEM private key's first and last lines (the lines between are masked whole: :func:`quote`)
_PEM_BEGIN = lazy_pattern(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_PEM_END = lazy_pattern(r"-----END [A-Z0-9 ]*PRIVATE KEY-----")
# a PEM private key written on one line (an event holding the whole key): what follows its BEGIN line
_PEM_INLINE = lazy_pattern(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(?:(?!-----END ).)+")
# a line that ends with a secret's key and no value (pretty-printed JSON, YAML): its value is on the next
_DANGLING = lazy_pattern(r"(?i)(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{0,80}" + _SECRET_WORD
                       + r"[A-Za-z0-9_.-]{0,80}(?:\\?[\"'])?\s*(?:=>|==?|:)\s*(?:\\?[\"'])?\s*$")

# a YAML block scalar under a secret's key (``password: |``, ``private_key: >-``): the more-indented lines are its value
_BLOCK = lazy_pattern(r"(?i)(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{0,80}" + _SECRET_WORD
                      + r"[A-Za-z0-9_.-]{0,80}[\"']?\s*:\s*[|>][0-9+-]{0,2}\s*$")


def _basic(m: re.Match[str]) -> str:
    """An HTTP Basic credential masked when it decodes to ``user:pass`` (RFC 7617), else as it was."""
    value = m.group(2)
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return m.group(0)
    return f"{m.group(1)}{_MASK}" if b":" in decoded else m.group(0)


def _keyed(m: re.Match[str]) -> str:
    q = m.group("eq") or m.group("dq") or m.group("sq") or ""
    closed = q and m.group(0).endswith(q) and len(m.group(0)) - len(m.group("key")) > len(q)
    return f"{m.group('key')}{q}{_MASK}{q if closed else ''}"


def clean(message: object) -> str:
    """One printable line of a log event's ``message``: bytes decoded as UTF-8 with invalid sequences
    as U+FFFD, a lone surrogate (a JSON ``\\ud800``) likewise, control characters (a terminal's escape
    sequences, NUL) as U+FFFD, tabs and line breaks as spaces, trailing space dropped, cut to :data:`LINE_MAX`."""
    line, long, _ = _flat(message)
    return _cut(line, long)


def _flat(message: object, read: int = _READ_MAX) -> tuple[str, bool, bool]:
    """``message`` as one printable line of at most ``read`` characters (:func:`clean` but
    not cut to :data:`LINE_MAX`), whether it was longer than :data:`LINE_MAX`, and whether longer than
    ``read`` (its end not read)."""
    if isinstance(message, bytes | bytearray):  # UTF-8: 1 to 4 bytes a character
        unread = len(message) > read * 4
        text = bytes(message[:read * 4]).decode("utf-8", "replace")
    else:
        text = str(message)
        unread = False
    unread = unread or len(text) > read
    text = text[:read]
    line = _CONTROL.sub("\ufffd", _SPACE.sub(" ", text)).rstrip()
    return line, len(text) > LINE_MAX, unread


def _cut(line: str, long: bool) -> str:
    return line[:LINE_MAX - 1] + "…" if long or len(line) > LINE_MAX else line


def _shown(message: object) -> str:
    """``message`` cleaned and masked, masked *before* it is cut to :data:`LINE_MAX`: a token the cut
    would split (``ghp_`` and 16 of its characters) no longer matches its shape and would be shown.
    The same holds for the read's own cut: :data:`_READ_MAX` and :data:`_READ_TAIL` more characters are
    masked, and when the message goes on past them, whatever came from that last :data:`_READ_TAIL` is
    dropped, masked or not (a secret the read cut starts there: ``https://user:pass`` without its ``@``, maybe
    with a token inside it that was masked), so a secret cut by the read is masked or not shown, never
    half-shown."""
    line, long, unread = _flat(message, _READ_MAX + _READ_TAIL)
    if not unread:
        masked_line = mask(line)
        return _cut(masked_line, long if masked_line == line else unread)
    # the message goes on past what was read: keep only what the first _READ_MAX characters became, masked
    # with the tail's context (a secret starting there has its whole shape within _READ_TAIL); anything that
    # starts in the tail is dropped, masked or not (a token masked there said nothing of a URL's password
    # before it, whose "@" the read cut off)
    return _cut(_mask_upto(line, _READ_MAX), True)


def _mask_upto(line: str, end: int) -> str:
    """:func:`mask` of ``line``, keeping only the text that came from ``line[:end]`` (a masked value stands
    where its match started)."""
    origin = list(range(len(line)))  # each character's index in line; a replacement's: its match's start
    for pattern, repl in _steps():
        parts: list[str] = []
        where: list[int] = []
        last = 0
        for m in pattern.finditer(line):
            parts.append(line[last:m.start()])
            where.extend(origin[last:m.start()])
            new = m.expand(repl) if isinstance(repl, str) else repl(m)
            parts.append(new)
            where.extend([origin[m.start()] if m.start() < len(origin) else len(line)] * len(new))
            last = m.end()
        parts.append(line[last:])
        where.extend(origin[last:])
        line, origin = "".join(parts), where
    return "".join(c for c, at in zip(line, origin, strict=True) if at < end).rstrip()


def mask(line: str) -> str:
    """``line`` with secret-looking values replaced by ``****``: the value after a key naming a
    password, token, secret, API key, private key or credentials (``password=``, ``token:``,
    ``"client_secret": "..."`` whole to its closing quote, ``\\"password\\": \\"...\\"``, ``key%3D``,
    ``<password>``), a bearer token, an ``Authorization`` header's credentials, an AWS access key id
    (``AKIA``/``ASIA``...), GitHub/Slack/Stripe tokens and JWTs, a Slack webhook's path, a PEM private
    key on one line, and a URL's ``user:pass@``."""
    for pattern, repl in _steps():
        line = pattern.sub(repl, line)
    return line


def _steps() -> tuple[tuple[re.Pattern[str], Any], ...]:
    """:func:`mask`'s substitutions, in order."""
    return (
        (_URL_CREDENTIALS, lambda m: f"{m.group('scheme')}{_MASK}@"),
        (_PEM_INLINE, lambda m: f"{m.group(1)}{_MASK}"),
        (_SLACK_HOOK, lambda m: f"{m.group(1)}{_MASK}"),
        (_AUTHORIZATION, lambda m: f"{m.group(1)}{_MASK}"),
        (_CLI_ARG, lambda m: f"{m.group(1)}{_MASK}"),
        (_KEYED, _keyed),
        (_XML, lambda m: f"{m.group(1)}{_MASK}"),
        (_BEARER, lambda m: f"{m.group(1)}{_MASK}"),
        (_BASIC, _basic),
        (_TOKEN_SHAPES, _MASK),
        (_ACCESS_KEY, _MASK),
    )


def quote(messages: Iterable[object]) -> tuple[str, ...]:
    """The lines an alert quotes from ``messages`` (oldest first, as FilterLogEvents returns a
    stream's events): each cleaned (:func:`clean`) and masked (:func:`mask`), a ```` ``` ```` made
    ``'''`` (as the last stops' reasons: it would turn the rest of the field into code), empty ones dropped, the
    newest :data:`MAX_LINES` kept, then the oldest of those dropped until all fit :data:`MAX_CHARS`
    (a single line longer than that is cut)."""
    messages = list(messages)
    hidden = _hidden(messages)
    lines: list[str] = []
    for n in range(len(messages) - 1, -1, -1):  # the newest first: only what can be shown is cleaned and masked
        line = _shown(messages[n]).replace("```", "'''")  # never a code block in Slack or Chatbot
        if hidden[n] and line:
            line = _MASK
        if line:
            lines.insert(0, line)
            if len(lines) == MAX_LINES:
                break
    while len(lines) > 1 and sum(len(x) for x in lines) > MAX_CHARS:
        lines.pop(0)
    if lines and len(lines[0]) > MAX_CHARS:
        lines[0] = lines[0][:MAX_CHARS - 1] + "…"
    return tuple(lines)


def masked(messages: Iterable[object]) -> list[str]:
    """Every one of ``messages`` (oldest first) as :func:`quote` shows a line, none dropped: cleaned
    (:func:`clean`), masked (:func:`mask`), and ``****`` for a line of a secret written over several lines
    (inside a PEM private key, the value after a dangling key); an empty line stays empty. For text that
    leaves the account (``capture``'s ``logs.jsonl``): quoting it again masks nothing more."""
    messages = list(messages)
    return [_MASK if hide and line else line
            for hide, line in zip(_hidden(messages), (_shown(m) for m in messages), strict=True)]


def _hidden(messages: list[object]) -> list[bool]:
    """Which of ``messages`` are masked whole, being a secret written over several lines: those inside a
    PEM private key (after its ``-----BEGIN ... PRIVATE KEY-----``, to its ``END`` line; after an
    ``END`` seen with no ``BEGIN`` before it, the lines before it too), and the first non-empty line after
    one that ends with a secret's key and no value (``"password":`` then the value, pretty-printed)."""
    text = [_flat(m, _READ_MAX + _READ_TAIL)[0] for m in messages]  # as read, not cut to LINE_MAX
    out = [False] * len(text)
    inside = dangling = False
    block = -1  # the indentation of a secret's YAML block key (``password: |``), -1 outside one
    for n, line in enumerate(text):
        if block >= 0 and line:
            if len(line) - len(line.lstrip(" ")) > block:
                out[n] = True
                continue
            block = -1
        if _PEM_BEGIN.search(line):
            inside = not _PEM_END.search(line)
            continue
        if _PEM_END.search(line):
            if not inside:  # the BEGIN line is not among these: everything before the END is the key's
                out[:n] = [bool(x) for x in text[:n]]
            inside = False
            continue
        if inside or (dangling and line):
            out[n] = True
            dangling = False
            continue
        if line:  # only a line ending in a separator or a quote can end with a key (a cheap test first)
            dangling = line[-1] in "=:>\"'" and bool(_DANGLING.search(line[-200:]))
            if line[-1] in "|>+-0123456789" and _BLOCK.search(line[-200:]):
                block, dangling = len(line) - len(line.lstrip(" ")), False
    return out


class CrashWords(Struct, frozen=True):
    """What an alert says of the crashed container's log: ``lines`` (already quoted: :func:`quote`),
    ``container`` and ``task_id`` (whose stream), ``group`` (its ``awslogs`` log group), and ``note``:
    one line when the lines could not be read or there were none (why, for the alert)."""

    lines: tuple[str, ...] = ()
    container: str | None = None
    task_id: str | None = None
    group: str | None = None
    note: str | None = None

    def field(self) -> tuple[str, str] | None:
        """``(label, value)`` of the alert's field: the quoted lines, or the note; ``None`` when there
        is nothing to say (no task definition names an ``awslogs`` destination)."""
        if self.lines:  # on the lines after the label: a quoted line never reads as part of it
            return f"Last log lines ({self.container}, task {self.task_id})", "\n" + "\n".join(self.lines)
        if self.note:
            return "Last log lines", self.note
        return None


class Revision(Struct, frozen=True):
    """A task definition revision as an alert names it: ``arn`` (``taskDefinitionArn``), ``image`` (the
    essential container's ``image``, from DescribeTaskDefinition ``containerDefinitions[].image``;
    ``None`` unknown), ``since`` (when its deployment was created, ``deployments[].createdAt``)."""

    arn: str
    image: str | None = None
    since: datetime | None = None


def revision_name(arn: str) -> str:
    """``family:revision`` of a task definition ARN (``arn:...:task-definition/checkout:14`` ->
    ``checkout:14``); anything else as it is."""
    return arn.rsplit("/", 1)[-1]


def image_tag(image: str | None) -> str:
    """The short form an alert shows of an image: its tag or digest (``repo/app:2026.6.2`` ->
    ``:2026.6.2``, ``repo/app@sha256:abcd...`` -> ``@sha256:abcd1234ef01``), the name when it has
    neither, ``unknown`` for ``None``."""
    if not image:
        return "unknown"
    name, at, digest = image.partition("@")
    if at:
        return "@" + digest[:19]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return ":" + last.split(":", 1)[1]
    return name


def change_line(crashing: Revision | None, before: Revision | None, deployment_at: datetime | None,
                first_failure: datetime, window: timedelta, *, unknown_before: str | None = None,
                before_crashed: bool = False) -> str | None:
    """The alert's one line about the change that started the loop.

    ``crashing``: the revision the crashing tasks run (``None``: no failure named one: no line);
    ``deployment_at``: when the newest deployment before the loop started (a deployment event's time,
    or ``deployments[].createdAt``), ``None`` when there was none; the loop "began within the window of
    a deployment" when ``first_failure - deployment_at`` is at most ``window`` (the crash window);
    ``before``: the revision that ran before it (``None``: not known; ``unknown_before`` says why);
    ``before_crashed``: a failure the watchdog keeps ran ``before`` too (then it "ran before", not
    "without crashes").

    ``"started with checkout:14 (image :2026.6.2) at 10:02; checkout:13 (:2026.6.1) ran without
    crashes"``, or ``"runs checkout:14 (image :2026.6.2); no deployment in the 30 min before the first
    crash"``.
    """
    if crashing is None:
        return None
    now = f"{revision_name(crashing.arn)} (image {image_tag(crashing.image)})"
    if deployment_at is None or not (timedelta(0) <= first_failure - deployment_at <= window):
        minutes = round(window.total_seconds() / 60)
        return f"runs {now}; no deployment in the {minutes} min before the first crash"
    line = f"started with {now} at {deployment_at:%H:%M}Z"
    if before is not None and before.arn != crashing.arn:
        same = before.image is not None and before.image == crashing.image
        shown = "same image" if same else image_tag(before.image) if before.image else "image unknown"
        line += (f"; {revision_name(before.arn)} ({shown}) "
                 + ("ran before (it crashed too)" if before_crashed else "ran without crashes"))
    elif unknown_before:
        line += f"; {unknown_before}"
    return line
