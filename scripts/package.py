#!/usr/bin/env python3
"""Build the one Lambda code artifact of ecs-guardrail, reproducibly.

The zip holds the ``ecs_guardrail`` package (from ``src/``) and its runtime dependencies for the
Lambda Python 3.12 runtime on arm64 (``manylinux2014_aarch64`` wheels only), without boto3, botocore
and s3transfer, which the runtime ships. Entries are sorted, timestamps fixed (1980-01-01, or
``SOURCE_DATE_EPOCH``), permissions normalised, so the same sources and the same pinned dependencies
give a byte-identical zip (and the same sha256 on any machine).

Bytecode ships beside the sources: Lambda's code directory (``/var/task``) is read-only, so without
``__pycache__`` every cold start compiled pydantic, Powertools and the project from source (3.6x the
import time of ``import boto3``, issue 23). Each ``.py`` is compiled by a CPython of the runtime's version
(3.12: ``--python``, ``$LAMBDA_PYTHON``, else ``python3.12`` on ``PATH``, else this interpreter if it is
3.12) as an *unchecked-hash* pyc (PEP 552: the header holds a hash of the source instead of its mtime,
and the interpreter does not re-check it), with ``/var/task/<path>`` as its file name, one process, in
sorted order: no build path, time or mtime gets into the zip. ``--no-bytecode`` leaves pycs out.

Dependencies come from ``deploy/lambda-requirements.txt`` (exact pins, installed with ``--no-deps``)
when it exists; ``--update-lock`` resolves ``pyproject.toml``'s dependencies afresh and rewrites it.

Prints the path, the size in bytes and the sha256 of the zip (hex, and base64 as Lambda's CodeSha256
shows it). Exit status 0 on success.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "deploy" / "lambda-requirements.txt"
PIP_TARGET_ARGS = [
    "--platform",
    "manylinux2014_aarch64",
    "--implementation",
    "cp",
    "--python-version",
    "3.12",
    "--only-binary=:all:",
    "--no-compile",
    "--disable-pip-version-check",
    "--quiet",
]
# Shipped by the Lambda Python runtime (https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html).
RUNTIME_PROVIDED = {"boto3", "botocore", "s3transfer"}
EXCLUDED_PARTS = {"__pycache__", "tests", "test"}
EXCLUDED_SUFFIXES = {".pyc", ".pyo"}
#: the Lambda runtime's CPython (template.yaml and terraform/: ``python3.12``)
LAMBDA_PYTHON = (3, 12)
#: where Lambda unpacks the zip: the file name compiled into each pyc (tracebacks read it)
LAMBDA_TASK_ROOT = "/var/task"

# run by the Lambda's interpreter: compile [[source, pyc, shown name], ...] from stdin in order
_COMPILE = """
import json, py_compile, sys
failed = []
for source, target, shown in json.load(sys.stdin):
    try:
        py_compile.compile(source, cfile=target, dfile=shown, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    except py_compile.PyCompileError as exc:
        failed.append([shown, str(exc.msg).splitlines()[-1][:200]])
print(json.dumps({"tag": sys.implementation.cache_tag, "failed": failed}))
"""


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(spec: str) -> str:
    return _normalise(re.split(r"[\s\[<>=!~;]", spec.strip(), maxsplit=1)[0])


def runtime_requirements() -> list[str]:
    """pyproject.toml's ``[project].dependencies`` minus what the Lambda runtime ships."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [d for d in project["dependencies"] if _requirement_name(d) not in RUNTIME_PROVIDED]


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "install", *PIP_TARGET_ARGS, *args]
    subprocess.run(cmd, check=True)


def _installed(target: Path) -> list[tuple[str, str]]:
    found = []
    for meta in sorted(target.glob("*.dist-info")):
        name, _, version = meta.name.removesuffix(".dist-info").partition("-")
        found.append((_normalise(name), version))
    return found


def install_dependencies(target: Path, update_lock: bool) -> list[tuple[str, str]]:
    if update_lock or not LOCK.exists():
        _pip("--target", str(target), *runtime_requirements())
        pins = [(n, v) for n, v in _installed(target) if n not in RUNTIME_PROVIDED]
        LOCK.parent.mkdir(parents=True, exist_ok=True)
        LOCK.write_text(
            "# Pinned runtime dependencies of the Lambda artifact (python 3.12, manylinux2014_aarch64).\n"
            "# Regenerate with: python scripts/package.py --update-lock\n"
            + "".join(f"{n}=={v}\n" for n, v in pins)
        )
    else:
        _pip("--target", str(target), "--no-deps", "-r", str(LOCK))
    for name in RUNTIME_PROVIDED:  # a transitive pull of the SDK would only add weight
        for path in list(target.glob(f"{name}")) + list(target.glob(f"{name}-*.dist-info")):
            shutil.rmtree(path)
    return _installed(target)


def _included(rel: Path) -> bool:
    return not (set(rel.parts) & EXCLUDED_PARTS) and rel.suffix not in EXCLUDED_SUFFIXES


def write_zip(sources: list[tuple[Path, Path]], out: Path) -> None:
    """Write ``(file, archive name)`` pairs sorted by name with fixed metadata."""
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01, the zip minimum
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for path, arcname in sorted(sources, key=lambda pair: pair[1].as_posix()):
            info = zipfile.ZipInfo(arcname.as_posix(), date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, so external_attr means the same everywhere
            info.external_attr = (0o100644 if not os.access(path, os.X_OK) else 0o100755) << 16
            zf.writestr(info, path.read_bytes(), compresslevel=9)
    tmp.replace(out)


def collect(build: Path) -> list[tuple[Path, Path]]:
    pairs = []
    package = ROOT / "src" / "ecs_guardrail"
    for path in package.rglob("*"):
        rel = path.relative_to(package.parent)
        if path.is_file() and _included(rel):
            pairs.append((path, rel))
    for path in build.rglob("*"):
        rel = path.relative_to(build)
        if path.is_file() and _included(rel) and rel.parts[0] != "bin":
            pairs.append((path, rel))
    names = [rel.as_posix() for _, rel in pairs]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise SystemExit(f"package: {sorted(duplicates)} come from both src/ and the dependencies")
    return pairs


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                             text=True, timeout=60, check=True).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return (int(out[0]), int(out[1])) if len(out) == 2 else None


def lambda_python(explicit: str | None = None) -> str:
    """A CPython of :data:`LAMBDA_PYTHON`'s version to compile the zip's bytecode with: ``explicit``, else
    ``$LAMBDA_PYTHON``, else ``python3.12`` on ``PATH``, else this interpreter when it is that version.

    Raises:
        SystemExit: none found (a pyc of another version would be ignored by the runtime); the message
            says how to point at one or to build without bytecode.
    """
    want = ".".join(map(str, LAMBDA_PYTHON))
    tried = [explicit] if explicit else [os.environ.get("LAMBDA_PYTHON"), shutil.which(f"python{want}"),
                                         sys.executable]
    for python in filter(None, tried):
        if _version_of(python) == LAMBDA_PYTHON:
            return python
    raise SystemExit(f"package: no Python {want} to compile the Lambda's bytecode with (tried "
                     f"{', '.join(filter(None, tried)) or 'nothing'}): run make package LAMBDA_PYTHON=/path/to/"
                     f"python{want} (or scripts/package.py --python /path/to/python{want}), or build a source-only "
                     "zip, slower to cold-start, with python scripts/package.py --no-bytecode")


def compile_bytecode(sources: list[tuple[Path, Path]], staging: Path, python: str) -> list[tuple[Path, Path]]:
    """Compile every ``.py`` of ``sources`` (``(file, archive name)`` pairs) with ``python`` into
    ``staging``; returns the pycs as ``(file, archive name)`` pairs (``pkg/__pycache__/mod.<tag>.pyc``).

    One interpreter process compiles the files in archive-name order, so the same sources give the same
    bytes (marshal's output depends on what the process interned before). A file that does not compile
    (a template or a Python 2 leftover in a dependency) ships without a pyc, as before; the import would
    fail the same way from source.
    """
    if staging.exists():
        shutil.rmtree(staging)
    jobs, names = [], {}
    for path, arcname in sorted(sources, key=lambda pair: pair[1].as_posix()):
        if arcname.suffix != ".py":
            continue
        target = staging / arcname.with_suffix(".pyc")
        target.parent.mkdir(parents=True, exist_ok=True)
        jobs.append([str(path), str(target), f"{LAMBDA_TASK_ROOT}/{arcname.as_posix()}"])
        names[str(target)] = arcname
    proc = subprocess.run([python, "-I", "-c", _COMPILE], input=json.dumps(jobs), capture_output=True, text=True,
                          check=True, timeout=900)
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    failed = {shown for shown, _ in report["failed"]}
    out = []
    for _source, target, shown in jobs:
        if shown in failed:
            continue
        arcname = names[target]
        out.append((Path(target), arcname.parent / "__pycache__" / f"{arcname.stem}.{report['tag']}.pyc"))
    if failed:
        print(f"bytecode: {len(failed)} file(s) do not compile and ship as source only: "
              + ", ".join(sorted(failed)[:5]), file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "ecs-guardrail-lambda.zip")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build" / "lambda")
    parser.add_argument("--update-lock", action="store_true", help="resolve pyproject deps, rewrite the lock")
    parser.add_argument("--python", help="CPython 3.12 that compiles the bytecode (default: $LAMBDA_PYTHON, "
                                         "python3.12 on PATH, or this interpreter if it is 3.12)")
    parser.add_argument("--no-bytecode", action="store_true", help="ship sources only (slower cold starts)")
    args = parser.parse_args(argv)

    python = None if args.no_bytecode else lambda_python(args.python)  # before the slow part: fail early
    if args.build_dir.exists():
        shutil.rmtree(args.build_dir)
    args.build_dir.mkdir(parents=True)
    installed = install_dependencies(args.build_dir, args.update_lock)
    pairs = collect(args.build_dir)
    if python is not None:
        pairs += compile_bytecode(pairs, args.build_dir.with_name(args.build_dir.name + "-bytecode"), python)
    write_zip(pairs, args.out)

    data = args.out.read_bytes()
    print("dependencies: " + ", ".join(f"{n}=={v}" for n, v in installed))
    print(f"path: {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    print(f"size_bytes: {len(data)}")
    print(f"sha256: {hashlib.sha256(data).hexdigest()}")
    # what Lambda shows for the same bytes (base64, not hex): compare it with the deployed function's
    print(f"lambda_code_sha256: {base64.b64encode(hashlib.sha256(data).digest()).decode()} "
          "(aws lambda get-function --function-name NAME --query Configuration.CodeSha256)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
