"""``make mutate``: apply each mutant of the safety code, one at a time, and show the tests catch it.

Issue 30 item 11. Each mutant is one textual change of one source file (the episode machine, the cap's
slots, the lease, the alert-only guards, the redaction, the probes, held at zero, the claim). It is
applied to a copy of ``src/`` in a temporary folder, never to the checkout, and only the test files
named for it run, against that copy (``PYTHONPATH``), so a run costs seconds a mutant, not the suite.
A mutant is *caught* when those tests fail; one that survives is a test that cannot fail.

Prints one line a mutant and a summary; exit status 0 when every mutant was caught, 1 otherwise, 2
when a mutant no longer applies (its source text changed: update the list).

    python scripts/mutate.py            # every mutant
    python scripts/mutate.py -k probe   # those whose name contains "probe"
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = "src/ecs_guardrail"


@dataclass(frozen=True)
class Mutant:
    """``old`` (exactly once in ``path``, relative to the package) becomes ``new``; ``tests`` catch it."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


PROBE_TESTS = ("tests/explore/test_probe_operator.py",)
MUTANTS = (
    # the four survivors of issue 30 item 11
    Mutant("probe: no desired-count check before a probe step", "core/lifecycle.py",
           "    if isinstance(step, StartProbe):\n        return desired_count in (0, 1)",
           "    if isinstance(step, StartProbe):\n        return True", PROBE_TESTS),
    Mutant("probe: allowed on alert-only clusters", "handlers/probe.py",
           "if settings is None or self.config.dry_run or self._alert_only(ck, cluster) or self.rt.ecs is None:",
           "if settings is None or self.config.dry_run or self.rt.ecs is None:", PROBE_TESTS),
    Mutant("lease: no check right before UpdateService", "handlers/performers.py",
           "                self._check_lease(ck, service, ep.lease_until)  # right before the one call that "
           "matters most",
           "                pass", PROBE_TESTS),
    Mutant("probe: passes with no running task", "handlers/probe.py",
           "        if not resumed and (facts.running_count < 1 or unhealthy or failed_at is not None):",
           "        if not resumed and (unhealthy or failed_at is not None):", PROBE_TESTS),
    # probes
    Mutant("probe: no desired-count check before the way back to 0", "core/lifecycle.py",
           "        return desired_count in (1, 0)", "        return True", PROBE_TESTS),
    Mutant("probe: no desired-count check before the restore at a pass", "core/lifecycle.py",
           "        return desired_count in (1, int(ep.previous_desired_count or 0))", "        return True",
           PROBE_TESTS),
    Mutant("probe: no desired-count check before the first probe", "handlers/probe.py",
           "        if facts.desired_count == 0:\n            return True\n        if self._overruled_unleased(",
           "        if True:\n            return True\n        if self._overruled_unleased(", PROBE_TESTS),
    Mutant("probe: a crash under a left-behind lease is not the verdict", "handlers/hold.py",
           "    if ep.probing:\n        if failure is not None:",
           "    if ep.probing and not ep.unfinished:\n        if failure is not None:", PROBE_TESTS),
    Mutant("probe: a pass ignores the failures counted during the probe", "handlers/probe.py",
           "        times = [f.time for f in s.crashes + s.kills if since <= f.time <= now]",
           "        times: list[datetime] = []", PROBE_TESTS),
    # held at zero (issue 37)
    Mutant("held at zero: a held service may decide again", "core/lifecycle.py",
           "    return ep is not None and ep.held_at_zero\n", "    return False\n",
           ("tests/faults/test_held_at_zero_decides_nothing.py",)),
    # the claim (issue 30 item 5)
    Mutant("claim: every failed claim read as a lost race", "handlers/decision.py",
           "            if now is not None and now != before:", "            if True:",
           ("tests/faults/test_claim_conflict.py",)),
    # the episode machine and the lease
    Mutant("machine: a raise read over an action in flight", "core/lifecycle.py",
           "    OperatorRaised: (frozenset({Phase.ACTED, Phase.HELD}), _released),",
           "    OperatorRaised: (frozenset({Phase.ACTED, Phase.HELD}) | IN_FLIGHT, _released),",
           ("tests/unit/test_lifecycle.py",)),
    Mutant("lease: a live lease may be taken over", "core/lifecycle.py",
           "    return ep.lease_owner is None or ep.lease_owner == owner or not ep.leased(now)",
           "    return True", ("tests/unit/test_lifecycle.py", "tests/explore/test_episode_safety.py")),
    # the cap's slots (rule 5)
    Mutant("cap: one more service held than the bound", "core/policy.py",
           "    if len(held) + 1 > fleet.bound:", "    if len(held) > fleet.bound:", ("tests/unit/test_policy.py",)),
    Mutant("cap: a slot taken without its condition", "adapters/store/watchdog_state.py",
           '                               Cond(absent=True, any_of=({"released": True}, {"service": service})))',
           "                               None)",
           ("tests/explore/test_interleavings.py::test_every_interleaving_of_two_invocations_within_two_preemptions"
            "[two-services-near-the-cap]",)),
    # the alert-only guards
    Mutant("alert-only: UpdateService not refused before the call", "handlers/performers.py",
           "        if self._alert_only(ck, cluster):  # the entitlement rules already said so; never reach "
           "UpdateService",
           "        if False:  # the entitlement rules already said so; never reach UpdateService",
           ("tests/explore/test_probe_operator.py::test_a_scale_down_resumed_after_its_cluster_became_alert_only"
            "_never_reaches_update_service",)),
    Mutant("opt-out: a mistyped ecs-guardrail: tag acts", "core/policy.py",
           "        opted = True\n", "        opted = opted or k == OPT_OUT_TAG and str(value).strip().lower() == "
                                     "OPT_OUT_VALUE\n", ("tests/unit/test_opt_out_tags.py",)),
    # the redaction
    Mutant("redaction: no piece-by-piece redaction", "adapters/alerts.py",
           "            parts.add(piece)\n", "            pass\n",
           ("tests/functional/test_webhook_control_chars.py::test_redaction_hides_every_escaped_form_of_the_token",)),
    Mutant("redaction: a control character reaches the client", "adapters/alerts.py",
           "        bad = control_characters(self._url)\n", "        bad: list[int] = []\n",
           ("tests/functional/test_webhook_control_chars.py::test_a_control_character_in_the_webhook_url_never"
            "_reaches_logs_or_errors",)),
)


def run(mutant: Mutant, work: Path) -> tuple[str, float]:
    """Apply ``mutant`` to a fresh copy of ``src/`` under ``work`` and run its tests; ``caught``,
    ``SURVIVED`` or ``STALE`` (the source text is not there exactly once), and the seconds it took."""
    copy = work / "src"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(ROOT / "src", copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    target = copy / "ecs_guardrail" / mutant.path
    text = target.read_text()
    if text.count(mutant.old) != 1:
        return "STALE", 0.0
    target.write_text(text.replace(mutant.old, mutant.new))
    # the explorer at its full budget (every two-preemption schedule; make test runs a sample of them)
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1", "EXPLORE_BUDGET": "full"}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *mutant.tests],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    took = time.monotonic() - start
    status = {1: "caught", 0: "SURVIVED"}.get(proc.returncode, f"error {proc.returncode}")
    return status, took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="", help="only the mutants whose name contains this text")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if args.k in m.name]
    results = []
    with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
        for m in chosen:
            status, took = run(m, Path(tmp))
            results.append(status)
            print(f"{status:9} {took:5.1f} s  {m.name}  ({m.path})", flush=True)
    caught = results.count("caught")
    print(f"mutate: {caught} of {len(results)} mutants caught")
    if any(r == "STALE" for r in results):
        return 2
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
