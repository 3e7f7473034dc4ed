"""Both replay engines give identical ``--json`` output on every scenario (events/scenarios/ and, when the
shared acceptance folder sits beside the checkout, ../shared/scenarios/)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ecs_guardrail.cli import main
from tests.conftest import ROOT, SCENARIOS

SHARED = ROOT.parent / "shared" / "scenarios"


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.iterdir()):
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def _folders() -> list[Path]:
    seen: set[str] = set()
    out = []
    for base in (SCENARIOS, SHARED):
        if not base.is_dir():
            continue
        for p in sorted(base.iterdir()):
            if (p / "fleet.json").exists() and _digest(p) not in seen:  # a copy is replayed once
                seen.add(_digest(p))
                out.append(p)
    return out


@pytest.mark.parametrize("folder", _folders(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_fast_and_moto_engines_agree(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outputs = {}
    for engine in ("fast", "moto"):
        assert main(["replay", str(folder), "--json", "--engine", engine]) == 0
        outputs[engine] = capsys.readouterr().out
    assert outputs["fast"] == outputs["moto"]
    assert outputs["fast"].splitlines()[-1].startswith('{"type": "summary"')
