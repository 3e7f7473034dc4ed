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
    with pytest.raises(SystemExit, match="no Python 3.12 .*--no-bytecode"):
        package.lambda_python("/usr/bin/python-of-another-version")


#: a fingerprint of every dataclass method of the project's modules (code compared field by field, nested
#: code objects too; a default value by its type: sentinels print their address) and the table's misses
_FINGERPRINT = """
import dataclasses, importlib, json, sys, types
folder = sys.argv[1]
if folder:
    from ecs_guardrail.core import dataclass_code
    assert dataclass_code.install(folder) or "exec" in vars(dataclasses)
misses = []
hooked = vars(dataclasses).get("exec")
if hooked is not None:
    table = next(c.cell_contents for c in hooked.__closure__ if isinstance(c.cell_contents, dict))
    def spy(source, g=None, l=None, /):
        if isinstance(source, str) and source not in table:
            misses.append(source)
        return hooked(source, g, l)
    dataclasses.exec = spy
for name in sys.argv[2:]:
    importlib.import_module(name)
def code(c):
    return [c.co_code.hex(), c.co_names, c.co_varnames, c.co_freevars, c.co_cellvars, c.co_flags, c.co_argcount,
            c.co_kwonlyargcount, c.co_firstlineno, c.co_filename, c.co_qualname, c.co_linetable.hex(),
            [code(k) if isinstance(k, types.CodeType) else repr(k) for k in c.co_consts]]
out = {}
for mod_name, mod in sorted(sys.modules.items()):
    if not mod_name.startswith("ecs_guardrail"):
        continue
    for cls in vars(mod).values():
        if isinstance(cls, type) and "__dataclass_fields__" in vars(cls) and cls.__module__ == mod_name:
            for meth, fn in sorted(vars(cls).items()):
                if isinstance(fn, types.FunctionType) and fn.__code__.co_filename == "<string>":
                    out[f"{cls.__qualname__}.{meth}"] = [code(fn.__code__), fn.__qualname__,
                        {k: str(v) for k, v in fn.__annotations__.items()},
                        [type(d).__name__ for d in fn.__defaults__ or ()]]
print(json.dumps({"methods": out, "misses": len(misses)}))
"""


def test_the_dataclass_code_table_is_reproducible_and_builds_the_same_classes(package, tmp_path):
    """Issue 33 item 7: the zip's compiled dataclass methods (ecs_guardrail/core/dataclass_code.py) are the same
    bytes on every build, and a cold start that uses them builds every class exactly as one that compiles
    them, with no method left to compile."""
    import json
    import subprocess

    first = package.dataclass_code(tmp_path / "a", sys.executable)
    second = package.dataclass_code(tmp_path / "b", sys.executable)
    assert [arc for _, arc in first] == [Path("ecs_guardrail/core/__pycache__") /
                                         f"dataclass_code.{sys.implementation.cache_tag}.marshal"]
    assert first[0][0].read_bytes() == second[0][0].read_bytes()
    (tmp_path / "table").mkdir()
    shutil.copyfile(first[0][0], tmp_path / "table" / first[0][1].name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def built(folder: str) -> dict:
        out = subprocess.run([sys.executable, "-c", _FINGERPRINT, folder, *package.DATACLASS_MODULES],
                             capture_output=True, text=True, timeout=300, env=env, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    with_table, without = built(str(tmp_path / "table")), built("")
    assert len(without["methods"]) > 200
    assert with_table["methods"] == without["methods"]
    assert with_table["misses"] == 0
