"""Shared by the tests/infra modules: the helpers beside this file on sys.path (any import mode), the
parity helpers' asserts rewritten by pytest, and the terraform copy the validation and deny tests run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
pytest.register_assert_rewrite("parity")

import iac  # noqa: E402


@pytest.fixture(scope="module")
def tf_variables_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if iac.terraform_binary() is None:
        pytest.skip(
            "terraform is not on PATH: variable validation and the Terraform deny are proven by "
            "the template side only (install terraform to run these)"
        )
    return iac.terraform_module_copy(tmp_path_factory.mktemp("tfvars"), "variables.tf", "alert_only.tf")
