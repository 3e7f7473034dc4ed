"""PNG of a timeline: healthy hosts per service over time, with stops and decisions marked.

matplotlib is an optional extra (``pip install ecs-guardrail[plot]``) so the Lambda package stays
small; :func:`plot_timeline` raises :class:`PlotUnavailableError` without it.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from ecs_guardrail.core.errors import GuardrailError, PlotUnavailableError
from ecs_guardrail.core.timeline import Timeline

__all__ = ["plot_timeline", "PlotUnavailableError"]

#: stop kind -> (marker, colour, legend label); crashes and health-check kills always in the legend, the
#: others (they never count toward a loop, but explain lost capacity) only where drawn
_MARKS = {"crash": ("x", "tab:red", "crash"), "health_check_kill": ("v", "tab:orange", "health-check kill"),
          "spot": ("o", "tab:green", "Spot interruption"),
          "scheduler": ("s", "0.45", "scheduler stop (deployment, scale-in)")}
_ALWAYS = ("crash", "health_check_kill")
#: a decision's line: (matplotlib line style, colour, legend label)
_Style = tuple[Literal["-", "--", ":", "-."], str, str]
#: decision action -> its line: a hold and a scale-down never look alike
_DECISIONS: dict[str, _Style] = {"scale_to_zero": ("-", "tab:purple", "scaled to 0"),
              "hold": ("--", "tab:brown", "held (mass failure)"),
              "alert_only": (":", "tab:purple", "alert only")}
_OTHER_DECISION: _Style = ("-.", "tab:purple", "watchdog decision")


def plot_timeline(tl: Timeline, path: Path | str, max_services: int = 16) -> Path:
    """Write ``path`` (PNG): one small panel per service (at most ``max_services``), healthy hosts as
    a step line (grey band where there was no datapoint), stops as markers (crash, health-check kill,
    Spot interruption, scheduler stop), decisions as vertical lines, one style per action (a hold is
    never drawn like a scale-down). Without samples the y axis has no ticks (there is no count). With the clients' view,
    the minutes where the observers disagree are hatched (green: checker down while clients were served;
    orange: checker up while clients failed).

    Raises:
        PlotUnavailableError: no matplotlib.
        GuardrailError: nothing to draw in the window.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.dates as mdates
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise PlotUnavailableError("the PNG needs matplotlib: pip install 'ecs-guardrail[plot]'") from exc

    per: dict[str, list] = defaultdict(list)
    if tl.availability is not None:
        for sm in tl.availability.minutes:
            per[sm.service].append(sm)
    marks = [m for m in tl.marks if m[2] in _MARKS or m[2].startswith("decision:")]
    services = sorted(per) or sorted({m[1] for m in marks})
    services = services[:max_services]
    times = [sm.minute for s in services for sm in per.get(s, [])] + [m[0] for m in marks if m[1] in services]
    if not services or not times:
        raise GuardrailError("nothing to plot: no healthy-host samples or stops in this window")
    lo, hi = min(times) - timedelta(minutes=1), max(times) + timedelta(minutes=2)
    fig, axes = plt.subplots(len(services), 1, sharex=True, squeeze=False,
                             figsize=(11, 1.0 + 0.75 * len(services)))
    top = max([sm.healthy_host_count or 0 for s in services for sm in per.get(s, [])] + [1])
    for ax, service in zip(axes[:, 0], services, strict=False):
        _draw_service(ax, service, per.get(service, []), marks, top, bool(per))
    ax = axes[-1, 0]
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
    ax.set_xlabel("UTC")
    handles = _legend_handles(tl, bool(per), {what for _, svc, what in marks if svc in services})
    # the title on top, the legend under the time axis: they never overlap, whatever the figure's height
    legend_in, title_in = 0.2 + 0.18 * -(-len(handles) // 4), 0.4  # inches below and above the axes
    height = 0.6 + 0.75 * len(services) + legend_in + title_in
    fig.set_figheight(height)
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.0), fontsize=7, ncol=4, frameon=False)
    a = tl.attribution
    what = "healthy hosts per service" if per else "stops and decisions per service (no healthy-host samples)"
    home = f" (account {tl.account}, {tl.region})" if tl.account and tl.region else ""
    fig.suptitle(f"{tl.cluster}{home}: {what}; attribution: {a.verdict.value}", x=0.01, ha="left", fontsize=10)
    fig.tight_layout(rect=(0, legend_in / height, 1, 1 - title_in / height))
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _draw_service(ax: Any, service: str, ms: list[Any], marks: list[tuple[Any, str, str]], top: int,
                  sampled: bool) -> None:
    """One service's panel: its healthy hosts (``ms``, its minutes) as a step line with the minutes of
    no datapoint, no healthy host and the observers' disagreement shaded, its stops as markers at
    ``top`` x 1.15, its decisions as vertical lines; no y ticks when the timeline has no samples."""
    if ms:
        xs = [sm.minute for sm in ms] + [ms[-1].minute + timedelta(minutes=1)]
        ys = [sm.healthy_host_count if sm.healthy_host_count is not None else float("nan") for sm in ms]
        ax.step(xs, ys + ys[-1:], where="post", color="tab:blue", linewidth=1.5)
        for sm in ms:
            if sm.disagreement is not None:  # the clients' view says otherwise: hatched over the minute
                color = "tab:green" if sm.disagreement.value == "checker_down_clients_served" else "tab:orange"
                ax.axvspan(sm.minute, sm.minute + timedelta(minutes=1), facecolor="none", edgecolor=color,
                           hatch="////", linewidth=0, alpha=0.6)
            if sm.healthy_host_count is None:
                ax.axvspan(sm.minute, sm.minute + timedelta(minutes=1), color="0.85", linewidth=0)
            elif sm.healthy_host_count < 1:
                ax.axvspan(sm.minute, sm.minute + timedelta(minutes=1), color="tab:red", alpha=0.12,
                           linewidth=0)
    for t, svc, what in marks:
        if svc != service:
            continue
        if what in _MARKS:
            marker, color, _ = _MARKS[what]
            ax.plot([t], [top * 1.15], marker=marker, color=color, markersize=5, linestyle="none")
        else:
            style, color, _ = _DECISIONS.get(what.split(":", 1)[1], _OTHER_DECISION)
            ax.axvline(t, color=color, linestyle=style, linewidth=1.2)
    ax.set_ylim(-0.2, top * 1.35)
    ax.set_yticks([0, top] if sampled else [])  # without samples there is no count to scale: no 0-1 axis
    ax.set_ylabel(service, rotation=0, ha="right", va="center", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(axis="x", color="0.92")


def _legend_handles(tl: Timeline, sampled: bool, drawn: set[str]) -> list[Any]:
    """The legend's entries: the healthy-host line and its shadings (with samples; the observers'
    hatching with the clients' view), crashes and health-check kills always and the other stop kinds
    where ``drawn``, one line per decision style drawn (or the generic one)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = []
    if sampled:  # the healthy-host line and its shading exist only with samples (healthy_hosts.csv)
        handles.append(Line2D([], [], color="tab:blue", label="healthy hosts (min per minute)"))
        handles.append(Patch(color="tab:red", alpha=0.12, label="no healthy host"))
        handles.append(Patch(color="0.85", label="no datapoint"))
        if tl.availability is not None and tl.availability.clients_view:
            handles.append(Patch(facecolor="none", edgecolor="tab:green", hatch="////",
                                 label="checker down, clients served"))
            handles.append(Patch(facecolor="none", edgecolor="tab:orange", hatch="////",
                                 label="checker up, clients failing"))
    handles += [Line2D([], [], marker=m, color=c, linestyle="none", label=label)
                for kind, (m, c, label) in _MARKS.items() if kind in _ALWAYS or kind in drawn]
    actions = sorted({what.split(":", 1)[1] for what in drawn if what.startswith("decision:")})
    styles = list(dict.fromkeys(_DECISIONS.get(a, _OTHER_DECISION) for a in actions)) or [_OTHER_DECISION]
    handles += [Line2D([], [], color=c, linestyle=style, label=label) for style, c, label in styles]
    return handles
