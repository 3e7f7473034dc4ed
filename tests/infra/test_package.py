"""scripts/package.py ships bytecode and stays byte-for-byte reproducible (issue 23).

The dependencies' download is not repeated here (pip, slow); the project's own files go through the
same steps ``make package`` runs after it: collect, compile, zip.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def package():
    spec = importlib.util.spec_from_file_location("package_script", ROOT / "scripts" / "package.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(package, tmp: Path, pairs: list[tuple[Path, Path]]) -> bytes:
    pycs = package.compile_bytecode(pairs, tmp / "bytecode", sys.executable)
    out = tmp / "lambda.zip"
    package.write_zip(pairs + pycs, out)
    return out.read_bytes()


def test_the_zip_is_the_same_bytes_from_other_paths_and_mtimes(package, tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    (tmp_path / "deps-a").mkdir()
    first = package.collect(tmp_path / "deps-a")
    # the same sources elsewhere, with other mtimes: neither may reach the zip
    copy = tmp_path / "elsewhere"
    second = []
    for i, (path, arcname) in enumerate(first):
        moved = copy / f"{i:04d}" / path.name
        moved.parent.mkdir(parents=True)
        shutil.copyfile(path, moved)
        os.utime(moved, (1_900_000_000 + i, 1_900_000_000 + i))
        second.append((moved, arcname))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one, two = _build(package, tmp_path / "a", first), _build(package, tmp_path / "b", second)
    assert one == two
    names = zipfile.ZipFile(tmp_path / "a" / "lambda.zip").namelist()
    tag = sys.implementation.cache_tag
    assert f"ecs_guardrail/handlers/__pycache__/watchdog.{tag}.pyc" in names
    assert "ecs_guardrail/handlers/watchdog.py" in names  # the source stays (tracebacks, inspection)
    assert names == sorted(names)


def test_every_pyc_is_unchecked_hash_of_its_source(package, tmp_path):
    (tmp_path / "deps").mkdir()
    pairs = package.collect(tmp_path / "deps")
    pycs = package.compile_bytecode(pairs, tmp_path / "bytecode", sys.executable)
    sources = {arcname: path for path, arcname in pairs}
    assert len(pycs) == sum(1 for a in sources if a.suffix == ".py")
    for pyc, arcname in pycs:
        data = pyc.read_bytes()
        assert data[:4] == importlib.util.MAGIC_NUMBER
        # PEP 552 flags: bit 0 hash-based, bit 1 check_source; unchecked-hash is 0b01
        assert int.from_bytes(data[4:8], "little") == 0b01, arcname
        source = sources[arcname.parent.parent / (arcname.name.split(".")[0] + ".py")]
        assert data[8:16] == importlib.util.source_hash(source.read_bytes()), arcname


def test_the_unpacked_zip_imports_from_its_bytecode_on_a_read_only_directory(package, tmp_path):
    """As on Lambda (``/var/task`` is read-only): the handler imports from the shipped pycs. A source
    changed after packaging still loads its packaged bytecode, which only an unchecked-hash pyc does."""
    import subprocess

    (tmp_path / "deps").mkdir()
    pairs = package.collect(tmp_path / "deps")
    package.write_zip(pairs + package.compile_bytecode(pairs, tmp_path / "bytecode", sys.executable),
                      tmp_path / "lambda.zip")
    task = tmp_path / "task"
    zipfile.ZipFile(tmp_path / "lambda.zip").extractall(task)
    (task / "ecs_guardrail" / "routing.py").write_text("raise ImportError('compiled from source')\n")
    code = "import ecs_guardrail.routing as r; print(r.__file__); print(r.__cached__)"
    # as Lambda starts it: no PYTHONPATH but the task's, no bytecode cache elsewhere (make test sets one)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONPYCACHEPREFIX")}
    out = subprocess.run([sys.executable, "-B", "-c", code], cwd=task, env={**env, "PYTHONPATH": str(task)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    source, cached = out.stdout.split()
    assert Path(source).is_relative_to(task)  # the unpacked zip's module, not the checkout's
    assert cached.endswith(f"routing.{sys.implementation.cache_tag}.pyc") and Path(cached).is_relative_to(task)


def test_no_python_of_the_runtimes_version_is_a_clear_error(package, monkeypatch):
    monkeypatch.setattr(package, "_version_of", lambda python: (3, 99))
    with pytest.raises(SystemExit, match=r"no Python 3.12 .*make package LAMBDA_PYTHON=.*package.py --no-bytecode"):
        package.lambda_python("/usr/bin/python-of-another-version")
