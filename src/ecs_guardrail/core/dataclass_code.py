"""The dataclasses' generated methods, compiled once at packaging instead of at every cold start (issue 33.7).

``@dataclass`` writes each method it adds (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, a frozen
class's ``__setattr__``/``__delattr__``) as Python source and compiles it with ``exec`` when the class is
defined: six compilations for each frozen class, about 40 % of building the watchdog's 50-odd dataclasses and
most of what its import costs on top of ``import boto3``. The Lambda zip ships bytecode for every module
(``scripts/package.py``), but these methods are compiled afresh in every execution environment.

``scripts/package.py`` records the source of every method the three handlers' import generates (in the
packaging environment) and compiles each one with the Lambda's own interpreter into
``ecs_guardrail/core/__pycache__/dataclass_code.<cache tag>.marshal`` (a dict: source -> code object). On import,
:func:`install` makes the ``dataclasses`` module's ``exec`` look the source up there first: the same source
compiled the same way (``compile(source, "<string>", "exec")`` with no ``__future__`` flags, as ``dataclasses``
itself compiles it) gives the same code object, so every class is built exactly as without the table. A source
not in the table (another Python's text, a class added since packaging) is compiled as before. Without the
file (a venv, a test run, ``--no-bytecode``), nothing is installed.
"""

import builtins
import dataclasses
import marshal
import os
import sys
from typing import Any

__all__ = ["FILE_NAME", "install", "compile_sources"]

#: the table's file name in this package's ``__pycache__``: marshal data is read only by the interpreter
#: version that wrote it, which the cache tag names (``cpython-312``)
FILE_NAME = f"dataclass_code.{sys.implementation.cache_tag}.marshal"


def _compile(source: str) -> Any:
    # dont_inherit: no __future__ flag of this module or its caller, as dataclasses' own exec of the text
    return compile(source, "<string>", "exec", dont_inherit=True)


def compile_sources(sources: list[str]) -> bytes:
    """The table's bytes for ``sources`` (the texts ``dataclasses`` passes to ``exec``): ``marshal`` of a
    dict from each source, in sorted order, to its compiled code object."""
    return marshal.dumps({source: _compile(source) for source in sorted(set(sources))})


def install(folder: str | None = None) -> bool:
    """Use the table in the directory ``folder`` (default: this package's ``__pycache__``) for
    ``dataclasses``' ``exec``.

    Returns whether it was installed: ``False`` when the file is absent or unreadable, is not a table, or
    ``dataclasses`` already has its own ``exec`` (installed before, or by someone else). Never raises.
    """
    if "exec" in vars(dataclasses):
        return False
    path = os.path.join(folder if folder is not None else os.path.join(os.path.dirname(__file__), "__pycache__"),
                        FILE_NAME)
    try:
        with open(path, "rb") as fh:
            table = marshal.loads(fh.read())
    except (OSError, EOFError, ValueError, TypeError):
        return False
    if not isinstance(table, dict):
        return False
    run = builtins.exec

    def exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:  # noqa: A001, A002
        """``builtins.exec`` of the compiled ``source`` (from the table, else compiled here the same way)."""
        if globals is None:  # the caller's globals, as builtins.exec takes them (dataclasses always passes them)
            frame = sys._getframe(1)
            globals = frame.f_globals
            if locals is None:
                locals = frame.f_locals
        if isinstance(source, str):
            code = table.get(source)
            source = code if code is not None else _compile(source)
        run(source, globals, locals)

    dataclasses.exec = exec  # type: ignore[attr-defined]
    return True
