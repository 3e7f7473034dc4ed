"""``replay DIR --sweep KEY=V1,V2 ...``: one replay per combination of settings, one row each.

A row says what the policy would have done with those settings on the same events: decisions by
action, services scaled to 0, services held (left running by a hold not followed by their scale-down),
and the service-minutes the watchdog's own scale-downs
cost (``null`` without ``healthy_hosts.csv``). With ``RECOVERY=probe`` a row also carries ``probes``
(started, passed, failed) and ``image_pulls`` (unstopped, manual, probe), so ``--sweep
RECOVERY=manual,probe`` shows what probing would have saved and what it costs in pulls.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ecs_guardrail.core.errors import ScenarioError

__all__ = ["parse_sweep", "grid", "SweepRow", "run_sweep", "ACTIONS"]

ACTIONS = ("scale_to_zero", "alert_only", "hold")


def parse_sweep(text: str) -> tuple[str, list[str]]:
    """``"CRASH_THRESHOLD=3,5,8"`` -> ``("CRASH_THRESHOLD", ["3", "5", "8"])``.

    Raises:
        ScenarioError: no ``=``, no value, or a value given twice (``3,3``: the same replay twice).
    """
    if "=" not in text:
        raise ScenarioError(f"--sweep: expected KEY=V1,V2,..., got {text!r}")
    key, values = text.split("=", 1)
    vals = [v.strip() for v in values.split(",") if v.strip()]
    if not key.strip() or not vals:
        raise ScenarioError(f"--sweep: expected KEY=V1,V2,..., got {text!r}")
    twice = next((v for i, v in enumerate(vals) if v in vals[:i]), None)
    if twice is not None:  # the same row twice says nothing twice: refused, not silently deduplicated
        raise ScenarioError(f"--sweep {key.strip()}: value {twice!r} is given twice; give each value once")
    return key.strip(), vals


def grid(sweeps: Sequence[tuple[str, list[str]]]) -> list[dict[str, str]]:
    """Every combination, the first key varying slowest (the CLI refuses a key given twice, and
    :func:`parse_sweep` a value given twice)."""
    merged = dict(sweeps)
    keys = list(merged)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(merged[k] for k in keys))]


@dataclass(slots=True)
class SweepRow:
    settings: dict[str, str]
    decisions_by_action: dict[str, int] = field(default_factory=dict)
    services_scaled: int = 0
    services_held: int = 0
    watchdog_service_minutes: int | None = None
    unavailable_service_minutes: int | None = None
    decisions: int = 0
    probes: dict[str, int] | None = None
    image_pulls: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"type": "sweep_row", "settings": self.settings, "decisions": self.decisions,
               "decisions_by_action": self.decisions_by_action, "services_scaled": self.services_scaled,
               "services_held": self.services_held, "watchdog_service_minutes": self.watchdog_service_minutes,
               "unavailable_service_minutes": self.unavailable_service_minutes}
        if self.probes is not None:  # RECOVERY=probe only: a manual row keeps its shape
            out.update(probes=self.probes, image_pulls=self.image_pulls)
        return out


def row_of(settings: dict[str, str], result: Any) -> SweepRow:
    """One row of ``result`` (its ``decisions`` in the order made, its ``summary``). ``services_held``:
    the services a hold left running, whose last hold was not followed by a scale-down of theirs (a
    service held, then scaled to 0 when the rest of the cluster recovered, counts under ``services_scaled``
    only; a service held twice is one)."""
    by_action = Counter(d["action"] for d in result.decisions)
    last: dict[tuple[str, str], str] = {}
    for d in result.decisions:
        if d["action"] in ("hold", "scale_to_zero"):
            last[(d["cluster"], d["service"])] = d["action"]
    held = [k for k, action in last.items() if action == "hold"]
    s = result.summary
    return SweepRow(settings=settings, decisions_by_action={a: by_action.get(a, 0) for a in
                                                            sorted(set(ACTIONS) | set(by_action))},
                    services_scaled=len(s["scaled_to_zero"]), services_held=len(held),
                    watchdog_service_minutes=s.get("watchdog_service_minutes"),
                    unavailable_service_minutes=s.get("unavailable_service_minutes"), decisions=len(result.decisions),
                    probes=s.get("probes"), image_pulls=s.get("image_pulls"))


def run_sweep(folder: Path, base: dict[str, str], sweeps: Sequence[tuple[str, list[str]]], *, engine: str = "fast",
              on_warning: Callable[[str], None] | None = None,
              on_row: Callable[[int, int], None] | None = None,
              fan_out: Callable[[Path, list[dict[str, str]], str], Sequence[Any]] | None = None) -> list[SweepRow]:
    """Replay ``folder`` once per combination of ``sweeps`` on top of ``base`` (``--set``).

    ``on_row(done, total)``: called after each combination's replay (the CLI's progress bar).
    ``fan_out(folder, settings per combination, engine)``: replays every combination elsewhere (``--jobs``,
    ``--scheduler``: :func:`ecs_guardrail.replay.parallel.sweep_replays`), each result with its
    ``decisions``, ``summary`` and ``warnings``, in order.

    Every combination is validated before the first replay runs.

    Raises:
        ScenarioError: an unknown setting or an invalid value (named with its combination).
    """
    from ecs_guardrail.replay.run import replay
    from ecs_guardrail.replay.scenario import load_scenario
    from ecs_guardrail.settings import SETTING_NAMES, unknown_setting

    for key, _ in sweeps:  # named as the user wrote it: --sweep, not --set
        if key not in SETTING_NAMES:
            raise ScenarioError(f"--sweep: {unknown_setting(key)}")
    combos = grid(sweeps)
    scenarios = []
    for combo in combos:
        try:
            scenarios.append(load_scenario(folder, {**base, **combo}))
        except ScenarioError as exc:
            raise ScenarioError(f"--sweep {','.join(f'{k}={v}' for k, v in combo.items())}: {exc}") from None
    rows = []
    warned: set[str] = set()

    def warn_once(text: str) -> None:
        if text not in warned and on_warning:
            warned.add(text)
            on_warning(text)

    if fan_out is not None:
        for combo, res in zip(combos, fan_out(folder, [{**base, **c} for c in combos], engine), strict=True):
            for text in res.warnings:
                warn_once(text)
            rows.append(row_of(combo, res))
            if on_row is not None:
                on_row(len(rows), len(combos))
        return rows
    for combo, scenario in zip(combos, scenarios, strict=True):
        rows.append(row_of(combo, replay(scenario, engine=engine, on_warning=warn_once)))
        if on_row is not None:
            on_row(len(rows), len(combos))
    return rows


def summary(rows: list[SweepRow]) -> dict[str, Any]:
    """The last JSON line: how many combinations, and the trade between them.

    Fewer watchdog service-minutes are bought by acting later or never: a combination that scales no
    service costs 0 minutes and leaves every crash loop running (each crashed task is replaced, and
    each replacement pulls the image again: ``image_pulls`` with ``RECOVERY=probe``). So:

    - ``least_watchdog_service_minutes``: the settings that cost least *among those that act* (scale a
      service to 0; more services stopped first on a tie); ``None`` when none acts or without
      ``healthy_hosts.csv``. "Never act" is never called the best.
    - ``never_act``: the settings that scale nothing (their 0 minutes are the loops left running).
    - ``trade``: the combinations no other beats on both sides: watchdog service-minutes against the
      services left looping (and, where known, image pulls), fewest minutes first, each as
      ``{"settings", "watchdog_service_minutes", "services_scaled", "image_pulls"}``.
    """
    acting = [r for r in rows if r.services_scaled > 0]
    known = [r for r in acting if r.watchdog_service_minutes is not None]
    best = min(known, key=lambda r: (r.watchdog_service_minutes, -r.services_scaled)) if known else None

    def pulls(r: SweepRow) -> int | None:
        return r.image_pulls.get("probe" if r.probes is not None else "manual") if r.image_pulls else None

    def beaten(r: SweepRow, by: SweepRow) -> bool:
        sides = [(by.watchdog_service_minutes or 0, r.watchdog_service_minutes or 0),
                 (-by.services_scaled, -r.services_scaled)]
        if pulls(r) is not None and pulls(by) is not None:
            sides.append((pulls(by), pulls(r)))  # type: ignore[arg-type]
        return all(b <= a for b, a in sides) and any(b < a for b, a in sides)

    measured = [r for r in rows if r.watchdog_service_minutes is not None]
    front = [r for r in measured if not any(beaten(r, o) for o in measured if o is not r)]
    trade = [{"settings": r.settings, "watchdog_service_minutes": r.watchdog_service_minutes,
              "services_scaled": r.services_scaled, "image_pulls": pulls(r)}
             for r in sorted(front, key=lambda r: (r.watchdog_service_minutes or 0, -r.services_scaled))]
    return {"type": "sweep_summary", "combinations": len(rows),
            "keys": sorted({k for r in rows for k in r.settings}),
            "least_watchdog_service_minutes": best.settings if best else None,
            "never_act": [r.settings for r in rows if r.services_scaled == 0],
            "trade": trade}


def render_rows(rows: list[SweepRow], console: Any) -> None:
    """The rich table: one row per combination."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    keys = list(rows[0].settings) if rows else []
    actions = sorted({a for r in rows for a in r.decisions_by_action}, key=lambda a: (a not in ACTIONS, a))
    t = Table(title="Sweep: one replay per combination", title_justify="left", box=box.SIMPLE_HEAD)
    probing = any(r.probes is not None for r in rows)

    def n(v: int | None) -> str:
        return "n/a" if v is None else str(v)

    cells: list[list[str]] = []
    for r in rows:
        extra: list[str] = []
        if probing:
            p, q = r.probes, r.image_pulls
            extra = [f"{p['started']} ({p['passed']}/{p['failed']})" if p else "-",
                     f"{q['unstopped']}/{q['manual']}/{q['probe']}" if q else "-"]
        cells.append([*[r.settings[k] for k in keys], *[str(r.decisions_by_action.get(a, 0)) for a in actions],
                      str(r.services_scaled), str(r.services_held), n(r.watchdog_service_minutes),
                      n(r.unavailable_service_minutes), *extra])
    names = [*keys, *actions, "services scaled", "held", "watchdog svc-min", "unavailable svc-min",
             *(("probes (pass/fail)", "pulls (unstopped/manual/probe)") if probing else ())]
    for i, name in enumerate(names):
        # on a narrow terminal a header wraps instead of ending in "…" (two swept settings of one prefix,
        # PROBE_DELAY_MINUTES and PROBE_PASS_MINUTES, both read "PROBE_…"), and a value is never cut
        t.add_column(Text(name, overflow="fold"), justify="right",
                     min_width=max((len(c[i]) for c in cells), default=1))
    for c in cells:
        t.add_row(*c)
    console.print(t)
    for line in trade_lines(rows):
        console.print(line, highlight=False, markup=False)


def trade_lines(rows: list[SweepRow]) -> list[str]:
    """The trade under the table, in words (:func:`summary`): the cheapest settings that act, and the
    ones that never act, whose 0 minutes are loops left running unless they held the services (a mass hold,
    said as such). Empty without watchdog minutes."""
    s = summary(rows)

    def name(settings: dict[str, str]) -> str:
        return " ".join(f"{k}={v}" for k, v in settings.items())

    out = []
    if s["least_watchdog_service_minutes"] is not None:
        best = next(r for r in rows if r.settings == s["least_watchdog_service_minutes"])
        out.append(f"fewest watchdog service-minutes among settings that act: {name(best.settings)} "
                   f"({best.watchdog_service_minutes} min, {best.services_scaled} service(s) stopped)")
    never = s["never_act"]
    if never and any(r.watchdog_service_minutes is not None for r in rows):
        more = f" and {len(never) - 3} more" if len(never) > 3 else ""
        # a setting that held services (a mass hold: ARCHITECTURE.md's rule 3) did what the policy asks when
        # everything looks broken; only one that left crash loops running without a hold bought nothing
        held = sum(1 for r in rows if r.settings in never and r.services_held)
        loops = ("crash loops run on (each crashed task is replaced and pulls its image again): not a saving")
        hold = ("held the failing services instead (a mass hold: so many failed at once that a shared dependency "
                "or the health checker is the likelier fault, so nobody was stopped)")
        why = (f"their {loops}" if not held else hold if held == len(never) else
               f"{held} of them {hold}; the others' {loops}")
        out.append(f"never act: {', '.join(name(x) for x in never[:3])}{more}: 0 watchdog minutes"
                   + (f"; {why}" if held else f" because {why}"))
    if rows and all(r.watchdog_service_minutes is None for r in rows):  # said, not left to a column of n/a
        more = f" and {len(never) - 3} more" if len(never) > 3 else ""
        out.append("service-minutes n/a: the scenario has no healthy_hosts.csv, so no trade is named"
                   + (f"; scale nothing: {', '.join(name(x) for x in never[:3])}{more}" if never else ""))
    return out
