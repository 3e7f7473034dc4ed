"""A package's ``__init__.py`` exports a short ``__all__`` (docs/design/STYLE.md): the names of its
modules, all of them, so ``__all__`` cannot go stale again when a module is added or removed."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest


@pytest.mark.parametrize("package", ["ecs_guardrail.core", "ecs_guardrail.adapters", "ecs_guardrail.handlers",
                                     "ecs_guardrail.replay", "ecs_guardrail.app"])
def test_all_names_every_module_of_the_package(package):
    pkg = importlib.import_module(package)
    here = Path(pkg.__path__[0])
    namespaces = {d.name for d in here.iterdir() if d.is_dir() and any(d.glob("*.py"))}  # adapters/store
    modules = sorted({m.name for m in pkgutil.iter_modules(pkg.__path__)} | namespaces)
    assert sorted(pkg.__all__) == modules
    for name in pkg.__all__:
        importlib.import_module(f"{package}.{name}")
