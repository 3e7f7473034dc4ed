"""The PNG: its legend lists what is drawn (no healthy-host line without samples, the shading with them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.core.timeline import build_timeline

pytest.importorskip("matplotlib")

T0 = datetime(2025, 8, 21, 12, 0, tzinfo=UTC)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _items(with_samples: bool) -> list[dict]:
    items = [{"type": "task", "cluster": "dev", "service": "api", "task_arn": f"arn:t/{n}", "kind": "crash",
              "time": _iso(T0 + timedelta(minutes=n)), "last_status": "STOPPED"} for n in range(3)]
    if with_samples:
        items += [{"type": "healthy_hosts", "cluster": "dev", "service": "api", "target_group": "api",
                   "time": _iso(T0 + timedelta(minutes=n)), "healthy_host_count": 0 if n == 1 else 2}
                  for n in range(4)]
    return items


def _legend(tmp_path, monkeypatch, with_samples: bool) -> list[str]:
    import matplotlib.figure

    from ecs_guardrail.plot import plot_timeline

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
