"""A scenario folder read and checked: ``fleet.json``, ``settings.env``, ``events.jsonl`` (SCENARIOS.md,
"Folder"), and the warnings a scenario earns before a single event is replayed.

Never touches AWS, embedded or real.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from msgspec import Struct

from ecs_guardrail.core.errors import ScenarioError, SettingsError
from ecs_guardrail.replay.fleet import check_fleet
from ecs_guardrail.settings import SETTING_NAMES, Settings, load_settings, unknown_setting

__all__ = ["TABLE", "TOPIC", "Scenario", "load_scenario", "read_settings_env", "check_events_file",
           "alert_only_warnings", "opt_out_warnings", "samples_overlap_warning", "pretty_printed_runs",
           "default_warnings", "scenario_warnings"]

#: the replay's history table and alert topic names (in the embedded AWS; a Lambda reads its own settings)
TABLE = "ecs-guardrail-history"
TOPIC = "ecs-guardrail-alerts"


def read_settings_env(path: Path) -> dict[str, str]:
    """A scenario's ``settings.env``, parsed as dotenv files are (python-dotenv's parser, the one
    pydantic-settings reads ``.env`` files with): ``KEY=VALUE`` lines, ``export KEY=VALUE``, blank
    lines and ``#`` comment lines; a `` # comment`` after an unquoted value is a comment, not part of
    the value; single or double quotes around a value are removed (a ``#`` inside them is kept); a
    UTF-8 byte order mark is accepted. A key set on two lines is an error (a Lambda environment has
    one value per key, and a forgotten ``ALERT_ONLY_CLUSTERS=none`` below the real value would
    silently take production's protection away).

    Raises:
        ScenarioError: a line dotenv cannot parse or without ``=`` (its line number), a key no
            function reads, or a key set twice (both line numbers).
    """
    import io

    from dotenv.parser import parse_stream

    out: dict[str, str] = {}
    lines: dict[str, int] = {}
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path.name}: cannot be read ({exc})") from None
    for binding in parse_stream(io.StringIO(text)):
        # dotenv folds blank lines into the next binding's text: count to the line that holds it
        raw = binding.original.string
        n = binding.original.line + raw[: len(raw) - len(raw.lstrip())].count("\n")
        line = raw.strip()
        if binding.error or (binding.key is not None and binding.value is None):
            raise ScenarioError(f"{path.name}:{n}: expected KEY=VALUE, got {line[:60]!r}")
        if binding.key is None:
            continue  # a comment or blank line
        if binding.key not in SETTING_NAMES:
            raise ScenarioError(f"{path.name}:{n}: {unknown_setting(binding.key)}")
        if binding.key in lines:
            raise ScenarioError(f"{path.name}:{n}: {binding.key} is set twice (first on line {lines[binding.key]}); "
                                "keep one line")
        lines[binding.key] = n
        out[binding.key] = (binding.value or "").strip()  # never None here: checked above
    return out


def check_events_file(path: Path, *, has_samples: bool) -> None:
    """Refuse an ``events.jsonl`` no line of which could be accepted, before anything is replayed.

    ``has_samples``: the folder has a ``healthy_hosts.csv`` (then an empty file is an availability-only
    replay, and fine). Reads at most 64 KiB past any leading blank lines. A UTF-8 byte order mark is ignored. Messages
    name the file with its folder (``FOLDER/events.jsonl``), as every per-line message does.

    Raises:
        ScenarioError: no line but blanks (and no samples); a UTF-16 file (its byte order mark, or a
            NUL byte beside most ASCII characters: what Windows PowerShell 5's ``>`` writes), with the
            fix; or the file is one pretty-printed JSON object or array (its first line is ``{`` or
            ``[`` alone, as in ``events/ecs/``), or one JSON array of events on one line, with the fix.
    """
    with path.open("rb") as fh:
        head = fh.read(65536)
        while head and not head.strip():  # blank lines only so far: the replay reads past them, so does this
            head = fh.read(65536)
    where = f"{path.parent.name}/{path.name}" if path.parent.name else path.name
    # the fix as a command to paste where the user stands, ending in the file replay reads (a new user told
    # "use that file" had no way to: replay reads FOLDER/events.jsonl and no other name); shlex only then
    if _utf16(head):
        from shlex import quote

        src, out = quote(str(path)), quote(str(path.with_name("events.utf8.jsonl")))
        raise ScenarioError(f"{where}: this file is UTF-16 (what Windows PowerShell 5's `>` writes), not UTF-8: "
                            f"`iconv -f UTF-16 -t UTF-8 {src} > {out} && mv {out} {src}` (or save it with "
                            "PowerShell's `Out-File -Encoding utf8`)")
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), None)
    if first is None:
        if has_samples:
            return
        raise ScenarioError(f"{where}: no events: one EventBridge event per line (copy lines from "
                            "events/scenarios/*/events.jsonl)")
    if first in ("{", "[") or (first.startswith("[") and first[1:].lstrip().startswith("{")):
        from shlex import quote

        src = quote(str(path))
        shape = "object" if first == "{" else "array"
        fix = f"jq -c . {src}" if first == "{" else f"jq -c '.[]' {src}"
        printed = "a pretty-printed JSON" if first in ("{", "[") else "one JSON"
        out = quote(str(path.with_name("events.one-per-line.jsonl")))
        raise ScenarioError(f"{where}: one event per line: this looks like {printed} {shape}; "
                            f"`{fix} > {out} && mv {out} {src}`")


def _utf16(head: bytes) -> bool:
    """UTF-16 by its byte order mark, or (none written) by NUL bytes in every other position of mostly
    ASCII text: UTF-8 JSON never holds a NUL byte outside an escape."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    sample = head[:4096]
    if len(sample) < 16:
        return False
    return min(sample[0::2].count(0), sample[1::2].count(0)) == 0 and \
        max(sample[0::2].count(0), sample[1::2].count(0)) > len(sample) // 4


def pretty_printed_runs(path: Path, rejected: list[int]) -> list[tuple[int, int]]:
    """The runs of consecutive rejected lines of ``path`` that together are one JSON object or array
    (a pretty-printed event pasted among good lines), as ``(first line, last line)``, 1-based.

    ``rejected``: the rejected line numbers, in order. Blank lines inside a run are part of it. Reads
    the file once, only when some run has two lines or more.
    """
    runs: list[list[int]] = []
    for n in rejected:
        if runs and n - runs[-1][-1] <= 2:  # a blank line between two rejected lines keeps the run
            runs[-1].append(n)
        else:
            runs.append([n])
    runs = [r for r in runs if len(r) >= 2]
    if not runs:
        return []
    wanted = {n for r in runs for n in range(r[0], r[-1] + 1)}
    lines: dict[int, str] = {}
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if n in wanted:
                lines[n] = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
            if n >= max(wanted):
                break
    out = []
    for r in runs:
        text = "".join(lines.get(n, "") for n in range(r[0], r[-1] + 1))
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict | list):
            out.append((r[0], r[-1]))
    return out


class Scenario(Struct):
    """A scenario folder, read and checked (SCENARIOS.md, "Folder")."""

    folder: Path
    fleet: dict[str, Any]
    settings_env: dict[str, str]
    settings: Settings

    @property
    def events_path(self) -> Path:
        return self.folder / "events.jsonl"

    @property
    def healthy_hosts_path(self) -> Path | None:
        p = self.folder / "healthy_hosts.csv"
        return p if p.exists() else None

    @property
    def delivered_path(self) -> Path | None:
        """``delivered.csv`` (when each line was delivered), or ``None``."""
        p = self.folder / "delivered.csv"
        return p if p.exists() else None

    @property
    def region(self) -> str:
        return str(self.fleet.get("region") or "us-east-1")

    @property
    def account(self) -> str:
        return str(self.fleet.get("account") or "123456789012")


def load_scenario(folder: Path, overrides: dict[str, str] | None = None) -> Scenario:
    """Read ``fleet.json`` and ``settings.env``, apply ``overrides`` (``--set``), validate.

    Raises:
        ScenarioError: missing or malformed ``fleet.json``/``events.jsonl``, an unknown or invalid setting.
    """
    folder = Path(folder)
    if not folder.is_dir():
        hint = ""
        if folder.is_file() and folder.parent.is_dir() and (folder.parent / "fleet.json").exists():
            hint = f" (a file of one: replay {folder.parent})"  # `replay X/events.jsonl`
        elif not folder.exists():
            hint = " (no such folder)"
        raise ScenarioError(f"{folder}: not a scenario folder{hint}")
    fleet_path = folder / "fleet.json"
    if not fleet_path.exists():
        inside = sorted(p.name for p in folder.iterdir() if (p / "fleet.json").is_file())
        if inside:  # `replay events/scenarios`: a folder of scenarios, not one
            more = f" and {len(inside) - 3} more" if len(inside) > 3 else ""
            raise ScenarioError(f"{folder}: missing fleet.json; it holds scenario folders: give one of them "
                                f"({', '.join(inside[:3])}{more}), e.g. replay {folder / inside[0]}")
        raise ScenarioError(f"{folder}: missing fleet.json")
    if not (folder / "events.jsonl").exists():
        raise ScenarioError(f"{folder}: missing events.jsonl")
    for name in ("fleet.json", "events.jsonl", "settings.env", "healthy_hosts.csv", "delivered.csv",
                 "container_restarts.csv"):
        if (folder / name).exists() and not (folder / name).is_file():
            raise ScenarioError(f"{folder / name}: not a file")
    try:
        fleet = json.loads(fleet_path.read_text(encoding="utf-8-sig"))  # a byte order mark is no error
    except UnicodeDecodeError as exc:  # a ValueError too: named for what it is, not "not JSON"
        utf16 = ", a UTF-16 file" if exc.object[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise ScenarioError(f"fleet.json: not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
                            f"{utf16}); save it as UTF-8") from None
    except ValueError as exc:  # JSONDecodeError, an integer past int_max_str_digits
        raise ScenarioError(f"fleet.json: not JSON ({exc})") from None
    except RecursionError:
        raise ScenarioError("fleet.json: not JSON (nested too deeply)") from None
    except OSError as exc:
        raise ScenarioError(f"fleet.json: cannot be read ({exc})") from None
    check_fleet(fleet)
    env = read_settings_env(folder / "settings.env") if (folder / "settings.env").exists() else {}
    for key, value in (overrides or {}).items():
        if key not in SETTING_NAMES:
            raise ScenarioError(f"--set: {unknown_setting(key)}")
        env[key] = value
    try:
        settings = load_settings({**env, "HISTORY_TABLE": TABLE})
    except SettingsError as exc:
        raise ScenarioError(str(exc)) from None
    return Scenario(folder, fleet, env, settings)


def alert_only_warnings(scenario: Scenario) -> list[str]:
    """One warning per ``ALERT_ONLY_CLUSTERS`` entry that matches no cluster of ``fleet.json`` (by name,
    or by ARN in the fleet's account and region): a typo such as ``prodution`` protects nothing, and
    the cluster it meant is acted on; then one per cluster an entry matches only without case (the IAM
    deny would not cover it: :func:`~ecs_guardrail.core.clusters.case_only_warning`)."""
    from ecs_guardrail.core.clusters import case_only_warning, parse_alert_only_clusters
    from ecs_guardrail.core.links import partition_of

    scope = parse_alert_only_clusters(scenario.settings.ALERT_ONLY_CLUSTERS)
    prefix = f"arn:{partition_of(scenario.region)}:ecs:{scenario.region}:{scenario.account}:cluster/"
    clusters = [(str(c["name"]), prefix + str(c["name"])) for c in scenario.fleet["clusters"]]
    names = ", ".join(n for n, _ in clusters) or "none"
    return [f"ALERT_ONLY_CLUSTERS entry {e.text!r} matches no cluster of fleet.json ({names}): it makes "
            f"nothing alert-only (a typo?)" for e in scope.unmatched(clusters)] + [
        case_only_warning(e, name) for e, name in scope.case_only(clusters)]


def opt_out_warnings(scenario: Scenario) -> list[str]:
    """One warning per ``fleet.json`` service whose ``ecs-guardrail:`` tags are not exactly
    ``ecs-guardrail:mode=alert-only`` (:func:`ecs_guardrail.core.policy.read_opt_out`): a typo such as
    ``alert_only`` is read as opted out (fail safe), so the service is only alerted on, never stopped."""
    from ecs_guardrail.core.policy import read_opt_out

    out = []
    for c in scenario.fleet["clusters"]:
        for svc in c.get("services", []):
            tags = svc.get("tags") if isinstance(svc.get("tags"), dict) else {}
            mistyped = read_opt_out({str(k): str(v) for k, v in tags.items()}).mistyped
            if mistyped:
                out.append(f"fleet.json: {c['name']}/{svc['name']}: tag {', '.join(mistyped)} is not "
                           "ecs-guardrail:mode=alert-only: read as opted out (alert only, fail safe)")
    return out


def default_warnings(scenario: Scenario) -> list[str]:
    """One warning per value a hand-written ``fleet.json`` leaves to a silent default: a REPLICA service
    without ``desiredCount`` (built with 1), no ``region`` (us-east-1) or no ``account`` (123456789012,
    moto's default account). Events of another account or region are then treated as a member
    account's (alert-only), and a scale-down records 1 as the count to restore."""
    fleet = scenario.fleet
    out = []
    if not fleet.get("region"):
        out.append(f"fleet.json has no \"region\": the fleet is built in {scenario.region}; set it to the events' "
                   "region (their \"region\" field)")
    if not fleet.get("account"):
        out.append(f"fleet.json has no \"account\": the fleet is built in account {scenario.account} (moto's "
                   "default); set it to the events' account (their \"account\" field)")
    for c in fleet.get("clusters", []):
        for svc in c.get("services", []):
            if "desiredCount" not in svc and svc.get("schedulingStrategy", "REPLICA") != "DAEMON":
                out.append(f"fleet.json: {c['name']}/{svc['name']} has no desiredCount: built with 1 (a scale-down "
                           "would record 1 as the count to restore); give the count it had during the incident")
    return out


def scenario_warnings(scenario: Scenario) -> list[str]:
    """The warnings a scenario's own files earn before any event is replayed: :func:`alert_only_warnings`,
    :func:`opt_out_warnings` and :func:`default_warnings`."""
    return alert_only_warnings(scenario) + opt_out_warnings(scenario) + default_warnings(scenario)


def samples_overlap_warning(events: tuple[datetime, datetime] | None,
                            samples: tuple[datetime, datetime] | None) -> str | None:
    """One line when ``healthy_hosts.csv``'s minutes and the events' times do not overlap, else None.

    ``events``: first and last event ``time`` (UTC); ``samples``: first and last sample minute (UTC).
    A CSV written in local time (a wrong UTC offset) shifts every sample away from its incident: the
    availability report then measures other minutes than the ones the events describe. An overlap of
    one minute is enough (SCENARIOS.md: the sampler ticks on the events' clock).
    """
    if events is None or samples is None:
        return None
    ev_first, ev_last = events
    s_first, s_last = samples
    if s_last + timedelta(minutes=1) > ev_first and s_first <= ev_last:
        return None
    gap = (ev_first - s_last) if s_last < ev_first else (s_first - ev_last)
    hours = gap / timedelta(hours=1)
    return (f"healthy_hosts.csv covers {s_first:%Y-%m-%dT%H:%MZ} to {s_last:%Y-%m-%dT%H:%MZ} and the events "
            f"{ev_first:%Y-%m-%dT%H:%M:%SZ} to {ev_last:%Y-%m-%dT%H:%M:%SZ}: no overlap ({hours:.1f} h apart; "
            "times are UTC: write them with Z, or with their offset such as +02:00)")
