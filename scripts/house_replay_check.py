"""Issue 34's quick check: every replay of scripts/house_baseline.sh, in one process, against the baseline.

    .venv/bin/python scripts/house_replay_check.py /work/wt-house-baseline [-k NAME] [--accept .EXT]

Runs each scenario (bundled and ../shared) with RECOVERY=manual and probe through ``cli.main`` (--json --calls
--alerts-out, then the text report with --timeline) in this process (no interpreter start per replay) and
compares stdout, stderr, exit status and the alerts file byte for byte with the files house_baseline.sh wrote.
Prints one line a difference and exits 1 on any. ``--accept .err`` rewrites the baseline's differing files of that
extension with this run's output (an intended change, e.g. the ``--calls`` counts) and counts them as accepted.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(argv: list[str]) -> tuple[str, str, int]:
    from ecs_guardrail import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(argv)
        except SystemExit as e:
            rc = int(e.code or 0)
    return out.getvalue(), err.getvalue(), rc


def main() -> int:
    base = Path(sys.argv[1]).resolve()
    only = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else ""
    accept = sys.argv[sys.argv.index("--accept") + 1] if "--accept" in sys.argv else ""
    accepted = 0
    os.environ.update(COLUMNS="160", TZ="UTC")
    dirs = [(p, f"scenarios-{p.name}") for p in sorted((ROOT / "events/scenarios").iterdir()) if p.is_dir()]
    shared = ROOT.parent / "shared/scenarios"
    if shared.is_dir():
        dirs += [(p, f"scenarios-{p.name}") for p in sorted(shared.iterdir()) if p.is_dir()]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        for d, _ in dirs:
            src = "events" if d.parent.parent == ROOT / "events" else "shared"
            name = f"{src}-{d.name}"
            if only and only not in name:
                continue
            for rec in ("manual", "probe"):
                stem = f"{name}.{rec}"
                setting = ["--set", f"RECOVERY={rec}"]
                o, e, rc1 = _run(["replay", str(d), *setting, "--json", "--calls", "--alerts-out", f"{stem}.alerts"])
                t, te, rc2 = _run(["replay", str(d), *setting, "--timeline"])
                got = {".json": o, ".err": e, ".txt": t, ".txt.err": te, ".rc": f"{rc1}\n{rc2}\n"}
                alerts = Path(f"{stem}.alerts")
                if alerts.exists() or (base / f"{stem}.alerts").exists():
                    got[".alerts"] = alerts.read_text() if alerts.exists() else "<missing>"
                for ext, text in got.items():
                    want = (base / f"{stem}{ext}").read_text() if (base / f"{stem}{ext}").exists() else "<missing>"
                    if text != want and ext == accept:
                        (base / f"{stem}{ext}").write_text(text)
                        accepted += 1
                        print(f"ACCEPTED {stem}{ext}")
                    elif text != want:
                        bad += 1
                        print(f"DIFF {stem}{ext}")
    print(f"house_replay_check: {bad} difference(s)" + (f", {accepted} accepted ({accept})" if accept else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
