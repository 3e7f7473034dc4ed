"""``replay --jobs N`` and ``--scheduler ADDRESS`` (issue 32 item 6): the partitioned replay's outputs are the
serial replay's, byte for byte, on every bundled and shared scenario (and a generated four-cluster day); the
Dask path on a local cluster (127.0.0.1, threads); bad input as one line and exit 2.

CPU: the every-scenario test maps the partitions in this process (``pool_map`` stood in for): the partition,
the merge and the fallbacks are the code under test, the pool only carries them; real worker processes run
in :func:`test_worker_processes_give_the_serial_bytes` and Dask in the ``dask`` tests.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail.replay import parallel
from tests.conftest import ROOT, cli_in_process
from tests.e2e.test_engines import SHARED, _folders

#: multi-cluster scenarios the merge must partition (not fall back): the test is not vacuous
PARTITIONED = {"bad-image-dev", "fargate-maintenance-wave"}


Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]


@contextlib.contextmanager
def _in_process(jobs: int, scheduler: str | None) -> Iterator[Mapper]:
    del jobs, scheduler
    yield lambda fn, items: [fn(i) for i in items]


def _outputs(folder: Path, tmp: Path, *flags: str) -> dict[str, Any]:
    """stdout of ``--json`` with its ``--alerts-out`` file, and the text report, of one replay setting."""
    alerts = tmp / f"alerts-{len(list(tmp.iterdir()))}.jsonl"
    js = cli_in_process("replay", str(folder), "--json", "--alerts-out", str(alerts), *flags)
    report = cli_in_process("replay", str(folder), *flags)
    return {"codes": (js.returncode, report.returncode), "json": js.stdout, "alerts": alerts.read_bytes(),
            "report": report.stdout, "stderr": js.stderr, "warnings": _warnings(js.stderr)}


_SERIAL: dict[Path, dict[str, Any]] = {}


def _serial(folder: Path, tmp: Path) -> dict[str, Any]:
    """:func:`_outputs` of the serial replay of ``folder``, once per module: the same bytes every time (the
    every-scenario test, the Dask tests and the generated day's compare against the same serial run)."""
    if folder not in _SERIAL:
        _SERIAL[folder] = _outputs(folder, tmp)
    return _SERIAL[folder]


def _warnings(stderr: str) -> list[str]:
    """stderr's warnings and rejections, in order (not the line naming the --alerts-out file, nor the one
    saying a scenario was replayed in one process)."""
    return [ln for ln in stderr.splitlines() if not ln.startswith("wrote ") and "not partitioned" not in ln]


@pytest.mark.parametrize("folder", _folders(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_jobs_2_gives_the_serial_bytes(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts, _ = parallel.partition_lines(folder / "events.jsonl")
    monkeypatch.setattr(parallel, "pool_map", _in_process)
    if len(parts) < 2:  # one cluster: --jobs runs the serial replay itself (its --json is enough to show it)
        serial_js = cli_in_process("replay", str(folder), "--json")
        js = cli_in_process("replay", str(folder), "--json", "--jobs", "2")
        assert (js.returncode, js.stdout, js.stderr) == (serial_js.returncode, serial_js.stdout, serial_js.stderr)
        return
    serial = _serial(folder, tmp_path)
    jobs = _outputs(folder, tmp_path, "--jobs", "2")
    assert jobs["codes"] == serial["codes"]
    assert jobs["json"] == serial["json"]
    assert jobs["alerts"] == serial["alerts"]
    assert jobs["report"] == serial["report"]
    assert jobs["warnings"] == serial["warnings"]
    fell_back = "not partitioned by cluster" in jobs["stderr"]
    assert not (folder.name in PARTITIONED and fell_back), jobs["stderr"]


@pytest.fixture(scope="module")
def fleet_day(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated hour: four clusters of 50 services, 8,000 task events, healthy_hosts.csv, one alert-only
    cluster; a loop in each, mass holds in two clusters and their recoveries from the sweep."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import ecsgen
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return Path(ecsgen.fleet_day(tmp_path_factory.mktemp("day") / "fleet-day", events=8000, hours=1))


def _twin(src: Path, dst: Path, other: str) -> Path:
    """``src``'s one cluster and a copy named ``other``, each line followed by its copy (same times), both
    alert-only: the two clusters' alerts fall in the same lines' times and the same sweep minutes, where the
    serial order is the sweep index's (by cluster key), not the partitions'."""
    fleet = json.loads((src / "fleet.json").read_text())
    name = fleet["clusters"][0]["name"]

    def sub(text: str) -> str:
        return re.sub(rf"\b{re.escape(name)}\b", other, text)

    dst.mkdir(parents=True)
    fleet["clusters"].append(json.loads(sub(json.dumps(fleet["clusters"][0]))))
    (dst / "fleet.json").write_text(json.dumps(fleet))
    env = re.sub(r"ALERT_ONLY_CLUSTERS=.*", "", (src / "settings.env").read_text())
    (dst / "settings.env").write_text(env + f"\nALERT_ONLY_CLUSTERS={name},{other}\n")
    with (src / "events.jsonl").open() as fh, (dst / "events.jsonl").open("w") as out:
        for line in fh:
            out.write(line + sub(line))
    return dst


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    tmp = tmp_path_factory.mktemp("twins")
    jobs = SHARED / "job-beside-loop"  # a loop and a job: alerts, recoveries and job summaries at once
    return [_twin(ROOT / "events" / "scenarios" / "oom-loop-production", tmp / "oom-twin", "alpha"),
            _twin(jobs if jobs.is_dir() else ROOT / "events" / "scenarios" / "job-summary-default-recovery",
                  tmp / "job-twin", "aardvark")]


def test_same_minute_in_two_clusters(twins: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for folder in twins:
        serial = _serial(folder, tmp_path)
        assert serial["alerts"].count(b"\n") >= 8  # alerts of both clusters, some in one sweep minute
        with monkeypatch.context() as mp:
            mp.setattr(parallel, "pool_map", _in_process)
            jobs = _outputs(folder, tmp_path, "--jobs", "2")
        assert "not partitioned" not in jobs["stderr"]
        for k in ("codes", "json", "alerts", "report", "warnings"):
            assert jobs[k] == serial[k], (folder.name, k)


def test_generated_day_is_partitioned_and_identical(fleet_day: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    serial = _serial(fleet_day, tmp_path)
    monkeypatch.setattr(parallel, "pool_map", _in_process)
    jobs = _outputs(fleet_day, tmp_path, "--jobs", "2")
    assert "not partitioned" not in jobs["stderr"]
    assert len(parallel.partition_lines(fleet_day / "events.jsonl")[0]) == 4
    for k in ("codes", "json", "alerts", "report", "warnings"):
        assert jobs[k] == serial[k], k
    summary = json.loads(serial["json"].splitlines()[-1])
    assert summary["unavailable_service_minutes"] is not None and summary["decisions"] >= 4


def test_worker_processes_give_the_serial_bytes(tmp_path: Path) -> None:
    """Real worker processes (spawned), in a child interpreter that must never import dask without
    --scheduler."""
    folder = ROOT / "events" / "scenarios" / "bad-image-dev"
    code = ("import sys; from ecs_guardrail.cli import main; rc = main(sys.argv[1:]); "
            "assert 'dask' not in sys.modules and 'distributed' not in sys.modules; sys.exit(rc)")
    out = {}
    for jobs in ("1", "2"):
        alerts = tmp_path / f"a{jobs}.jsonl"
        run = subprocess.run([sys.executable, "-c", code, "replay", str(folder), "--json", "--jobs", jobs,
                              "--alerts-out", str(alerts)], capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        out[jobs] = (run.stdout, alerts.read_bytes())
    assert out["1"] == out["2"]


@pytest.mark.parametrize("argv", [["--jobs", "0"], ["--jobs", "-1"]])
def test_jobs_below_one_is_one_line(argv: list[str]) -> None:
    run = cli_in_process("replay", str(ROOT / "events" / "scenarios" / "bad-image-dev"), *argv)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1 and "--jobs" in run.stderr and "at least 1" in run.stderr


def test_jobs_not_a_number_is_a_usage_error() -> None:
    run = cli_in_process("replay", "--jobs", "two")
    assert run.returncode == 2 and "not a whole number" in run.stderr


def test_scheduler_that_does_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(parallel, "SCHEDULER_TIMEOUT_S", 2)
    run = cli_in_process("replay", str(ROOT / "events" / "scenarios" / "bad-image-dev"), "--json",
                         "--scheduler", f"tcp://127.0.0.1:{port}")
    assert run.returncode == 2
    assert run.stdout == ""
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("ecs-guardrail:")]
    assert len(lines) == 1 and f"--scheduler tcp://127.0.0.1:{port}: no Dask scheduler answered" in lines[0]


def test_scheduler_that_does_not_answer_on_a_one_cluster_scenario(monkeypatch: pytest.MonkeyPatch) -> None:
    """One cluster is replayed in one process; the scheduler given is still checked (it was ignored: exit 0)."""
    pytest.importorskip("distributed")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(parallel, "SCHEDULER_TIMEOUT_S", 2)
    run = cli_in_process("replay", str(ROOT / "events" / "scenarios" / "shared-cache-brownout"), "--json",
                         "--scheduler", f"tcp://127.0.0.1:{port}")
    assert run.returncode == 2 and run.stdout == ""
    assert f"--scheduler tcp://127.0.0.1:{port}: no Dask scheduler answered" in run.stderr


@pytest.fixture(scope="module")
def dask_scheduler() -> Iterator[str]:
    """A local Dask cluster on 127.0.0.1: one worker thread in this process (a replay redirects the
    process's stdout while it runs, so two at once in one process would mix them), no dashboard."""
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, host="127.0.0.1", protocol="tcp",
                      dashboard_address=":0") as cluster:  # a free port: None still binds 8787
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        yield cluster.scheduler_address


@pytest.mark.parametrize("name", ["bad-image-dev", "fargate-maintenance-wave", "dev-loop-redelivered"])
def test_dask_gives_the_serial_bytes(name: str, dask_scheduler: str, tmp_path: Path) -> None:
    folder = ROOT / "events" / "scenarios" / name
    serial = _serial(folder, tmp_path)
    dask = _outputs(folder, tmp_path, "--scheduler", dask_scheduler)
    for k in ("codes", "json", "alerts", "report"):
        assert dask[k] == serial[k], k


def test_dask_generated_day_and_twins(fleet_day: Path, twins: list[Path], dask_scheduler: str,
                                     tmp_path: Path) -> None:
    for folder in [fleet_day, *twins]:
        serial = _serial(folder, tmp_path)  # its --json (with --alerts-out: the same stdout)
        dask = cli_in_process("replay", str(folder), "--json", "--scheduler", dask_scheduler)
        assert "not partitioned" not in dask.stderr
        assert (dask.returncode, dask.stdout) == (serial["codes"][0], serial["json"])


def test_sweep_fans_out(dask_scheduler: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = str(ROOT / "events" / "scenarios" / "bad-image-dev")
    sweep = ("--sweep", "CRASH_THRESHOLD=3,5")
    serial = cli_in_process("replay", folder, "--json", *sweep)
    dask = cli_in_process("replay", folder, "--json", *sweep, "--scheduler", dask_scheduler)
    assert serial.returncode == dask.returncode == 0
    assert dask.stdout == serial.stdout
    monkeypatch.setattr(parallel, "pool_map", _in_process)
    jobs = cli_in_process("replay", folder, "--json", *sweep, "--jobs", "2")
    assert (jobs.returncode, jobs.stdout) == (0, serial.stdout)


def test_one_process_outputs_fall_back_with_a_warning() -> None:
    """--calls counts one process's AWS calls: the scenario is replayed serially, and says so."""
    folder = str(ROOT / "events" / "scenarios" / "bad-image-dev")
    serial = cli_in_process("replay", folder, "--json", "--calls")
    jobs = cli_in_process("replay", folder, "--json", "--calls", "--jobs", "2")
    assert (jobs.returncode, jobs.stdout) == (serial.returncode, serial.stdout)
    said = [ln for ln in jobs.stderr.splitlines() if "not partitioned by cluster" in ln]
    assert len(said) == 1 and "--calls" in said[0]
    assert _warnings(jobs.stderr) == _warnings(serial.stderr)


def test_single_process_output_warning_reads_as_a_sentence() -> None:
    run = cli_in_process("replay", str(ROOT / "events" / "scenarios" / "bad-image-dev"), "--calls", "--jobs", "2")
    assert run.returncode == 0
    assert "not partitioned by cluster: --calls counts the AWS calls one process made" in run.stderr
    both = cli_in_process("replay", str(ROOT / "events" / "scenarios" / "bad-image-dev"), "--timeline", "--calls",
                          "--jobs", "2")
    said = [ln for ln in both.stderr.splitlines() if "not partitioned by cluster" in ln]
    assert both.returncode == 0 and len(said) == 1 and "AWS calls" in said[0], said
    assert said[0].endswith("--calls counts the AWS calls one process made; --timeline reads the incident "
                            "timeline from the history table one process wrote"), said
@pytest.mark.parametrize("address", ["garbage", "tcp://[::1", "tcp://127.0.0.1:99999", "http://x:1", "tcp://:8786"])
def test_a_scheduler_that_is_no_address_is_one_line_at_once(address: str) -> None:
    """Dask's Client raised on these, then hung 20 s in its __del__ and printed a traceback; with one
    partition the address was never looked at and the replay said nothing."""
    run = cli_in_process("replay", str(ROOT / "events" / "scenarios" / "bad-image-dev"), "--scheduler", address)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "not a Dask scheduler address" in run.stderr


def test_scheduler_addresses_dask_takes_pass_the_check() -> None:
    for address in ("tcp://127.0.0.1:8786", "tls://sched.example:8786", "10.0.0.1:8786", "tcp://[::1]:8786"):
        parallel.check_jobs(1, address)
