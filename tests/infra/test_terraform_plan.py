"""`terraform test` of terraform/ with a mocked AWS provider (terraform/tests/plan.tftest.hcl): a plan for
the defaults and for an empty ``alert_only_clusters``. Offline: the aws provider comes from a local
filesystem mirror (TF_PROVIDER_MIRROR, default /opt/tf-plugins, as scripts/check_iac.sh). Where terraform
or the mirror is missing the test skips and says why (pytest -ra prints it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import iac  # noqa: E402

MIRROR = Path(os.environ.get("TF_PROVIDER_MIRROR", "/opt/tf-plugins"))


def _terraform_version(binary: str) -> tuple[int, int]:
    out = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=60).stdout
    match = re.search(r"Terraform v(\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def test_terraform_plan_with_mock_provider(tmp_path: Path) -> None:
    binary = iac.terraform_binary()
    if binary is None:
        pytest.skip("terraform is not on PATH: terraform/tests/plan.tftest.hcl not run")
    if _terraform_version(binary) < (1, 7):
        pytest.skip("terraform < 1.7 has no mock_provider: terraform/tests/plan.tftest.hcl not run")
    if not (MIRROR / "registry.terraform.io" / "hashicorp" / "aws").is_dir():
        pytest.skip(f"no aws provider in the local mirror {MIRROR} and no registry here: plan.tftest.hcl not run")
    work = tmp_path / "terraform"
    shutil.copytree(iac.TERRAFORM, work, ignore=shutil.ignore_patterns(".terraform", "*.tfstate*", "examples"))
    rc = tmp_path / "terraformrc"
    rc.write_text(
        f'provider_installation {{\n  filesystem_mirror {{\n    path    = "{MIRROR}"\n'
        '    include = ["registry.terraform.io/hashicorp/*"]\n  }\n}\n'
    )
    env = {**os.environ, "TF_CLI_CONFIG_FILE": str(rc), "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1"}
    env.pop("TF_PLUGIN_CACHE_DIR", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([binary, *args, "-no-color"], cwd=work, env=env, capture_output=True, text=True,
                              timeout=300)

    init = run("init", "-backend=false", "-input=false")
    assert init.returncode == 0, init.stdout + init.stderr
    result = run("test")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert 'run "defaults"... pass' in output and 'run "every_cluster_alert_only"... pass' in output, output
