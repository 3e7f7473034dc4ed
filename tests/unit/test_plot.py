"""The PNG: its legend lists what is drawn (no healthy-host line without samples, the shading with them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.core.timeline import build_timeline

pytest.importorskip("matplotlib")

T0 = datetime(2025, 8, 21, 12, 0, tzinfo=UTC)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _items(with_samples: bool, cluster: str = "dev") -> list[dict]:
    items = [{"type": "task", "cluster": cluster, "service": "api", "task_arn": f"arn:t/{n}", "kind": "crash",
              "time": _iso(T0 + timedelta(minutes=n)), "last_status": "STOPPED"} for n in range(3)]
    if with_samples:
        items += [{"type": "healthy_hosts", "cluster": cluster, "service": "api", "target_group": "api",
                   "time": _iso(T0 + timedelta(minutes=n)), "healthy_host_count": 0 if n == 1 else 2}
                  for n in range(4)]
    return items


def _legend(tmp_path, monkeypatch, with_samples: bool) -> list[str]:
    import matplotlib.figure

    from ecs_guardrail.app.plot import plot_timeline

    seen: list[str] = []
    original = matplotlib.figure.Figure.legend

    def legend(self, *args, handles=(), **kwargs):
        seen.extend(h.get_label() for h in handles)
        return original(self, *args, handles=handles, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "legend", legend)
    tl = build_timeline(_items(with_samples), "dev", T0 - timedelta(minutes=5), T0 + timedelta(minutes=30))
    assert plot_timeline(tl, tmp_path / "p.png").exists()
    return seen


def test_legend_without_samples_has_no_healthy_hosts(tmp_path, monkeypatch):
    labels = _legend(tmp_path, monkeypatch, with_samples=False)
    assert "crash" in labels and not any("healthy" in lb for lb in labels)


def test_legend_with_samples_names_the_shading(tmp_path, monkeypatch):
    labels = _legend(tmp_path, monkeypatch, with_samples=True)
    assert "healthy hosts (min per minute)" in labels
    assert "no healthy host" in labels and "no datapoint" in labels


@pytest.mark.parametrize("with_samples", [False, True])
def test_title_legend_and_axes_never_overlap(tmp_path, monkeypatch, with_samples):
    """The saved figure's title, legend and axes have disjoint boxes (one service: the smallest figure;
    a long cluster name: the widest title)."""
    import matplotlib.figure

    from ecs_guardrail.app.plot import plot_timeline

    boxes: dict[str, list] = {}
    original = matplotlib.figure.Figure.savefig

    def savefig(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        renderer = self.canvas.get_renderer()
        boxes["title"] = [self._suptitle.get_window_extent(renderer)]
        boxes["legend"] = [lg.get_window_extent(renderer) for lg in self.legends]
        boxes["axes"] = [ax.get_tightbbox(renderer) for ax in self.axes]
        return out

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    cluster = "production-eu-west-1-checkout-platform-blue"
    tl = build_timeline(_items(with_samples, cluster), cluster, T0 - timedelta(minutes=5), T0 + timedelta(minutes=30))
    plot_timeline(tl, tmp_path / "p.png")
    assert boxes["legend"] and boxes["axes"]
    for a, b in [("title", "legend"), ("title", "axes"), ("legend", "axes")]:
        for x in boxes[a]:
            for y in boxes[b]:
                assert not x.overlaps(y), f"{a} overlaps {b}: {x} / {y}"


def _drawn(tmp_path, monkeypatch, items: list[dict]):
    """(legend labels, {ax: y tick values}, vertical lines' (style, colour)) of the saved figure."""
    import matplotlib.figure

    from ecs_guardrail.app.plot import plot_timeline

    seen: dict = {}
    original = matplotlib.figure.Figure.savefig

    def savefig(self, *args, **kwargs):
        seen["labels"] = [t.get_text() for lg in self.legends for t in lg.get_texts()]
        seen["yticks"] = [list(ax.get_yticks()) for ax in self.axes]
        seen["vlines"] = [(ln.get_linestyle(), ln.get_color()) for ax in self.axes for ln in ax.get_lines()
                          if len(set(ln.get_xdata())) == 1 and len(ln.get_xdata()) == 2]
        return original(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    tl = build_timeline(items, "dev", T0 - timedelta(minutes=5), T0 + timedelta(minutes=30))
    plot_timeline(tl, tmp_path / "p.png")
    return seen["labels"], seen["yticks"], seen["vlines"]


def test_spot_and_scheduler_stops_are_drawn_and_named(tmp_path, monkeypatch):
    items = _items(with_samples=False) + [
        {"type": "task", "cluster": "dev", "service": "api", "task_arn": f"arn:t/{k}", "kind": k,
         "time": _iso(T0 + timedelta(minutes=9)), "last_status": "STOPPED"} for k in ("spot", "scheduler")]
    labels, yticks, _ = _drawn(tmp_path, monkeypatch, items)
    assert "Spot interruption" in labels and "scheduler stop (deployment, scale-in)" in labels
    assert yticks == [[]]  # no samples: no 0-1 axis pretending to be a count


def test_a_hold_and_a_scale_down_are_drawn_differently(tmp_path, monkeypatch):
    decisions = [{"type": "decision", "cluster": "dev", "service": s, "action": a, "reason": r,
                  "time": _iso(T0 + timedelta(minutes=m))}
                 for s, a, r, m in (("api", "hold", "mass_unhealthy", 2), ("api", "scale_to_zero", "crash_loop", 6))]
    items = _items(with_samples=True) + decisions
    labels, yticks, vlines = _drawn(tmp_path, monkeypatch, items)
    assert "scaled to 0" in labels and "held (mass failure)" in labels
    assert len(set(vlines)) == 2
    assert yticks[0] == [0, 2]
