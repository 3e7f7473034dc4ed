"""template.yaml and terraform/ deploy the same system; this module checks
the tooling around both templates: checkov skips, provider pin, the Lambda lock, the documented SAM path.

Runs without AWS; see parity.py and conftest.py for what these modules share.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import iac
import pytest
from parity import CFN_FUNCTION, TEMPLATE, TF


def test_no_checkov_skip_for_checks_that_pass() -> None:
    """Item 11: checkov's Terraform check accepts sqs_managed_sse_enabled, so terraform/ has no CKV_AWS_27
    skip; its CloudFormation check does not read SqsManagedSseEnabled, so the templates keep one, saying so."""
    for path in iac.TERRAFORM.rglob("*.tf"):
        assert not re.search(r"CKV_AWS_27\b", path.read_text()), path
    for path in [iac.TEMPLATE, iac.ROOT / "deploy" / "member-account.yaml"]:
        for resource in iac.resources_of_type(iac.load_template(path), "AWS::SQS::Queue").values():
            assert resource["Properties"]["SqsManagedSseEnabled"] is True
            (skip,) = [s for s in resource["Metadata"]["checkov"]["skip"] if s["id"] == "CKV_AWS_27"]
            assert "KmsMasterKeyId" in skip["comment"]


def test_provider_pinned_to_the_validated_major() -> None:
    """Item 11: data.aws_region's name is deprecated in provider 6: pinned below it everywhere."""
    for path in iac.TERRAFORM.rglob("versions.tf"):
        text = path.read_text()
        assert '">= 5.60, < 6.0"' in text, path
        assert '">= 1.7.0"' in text, path  # mock_provider in terraform test


# dependencies only the operator's commands import (pyproject says so beside each), never a handler:
# the Lambda zip goes without them, and this test proves no handler can reach them
REPLAY_ONLY = {"python-dotenv": "dotenv"}


def test_replay_only_dependencies_are_imported_lazily_and_never_by_a_handler() -> None:
    """python-dotenv (settings.env's parser) came back with issue 21 for ``replay``: imported inside
    ``replay.scenario.read_settings_env`` only, so a handler's import never needs it (not in the Lambda lock)."""
    import ast

    src = iac.ROOT / "src" / "ecs_guardrail"
    for module in REPLAY_ONLY.values():
        for path in sorted(src.rglob("*.py")):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if not any(n == module or n.startswith(module + ".") for n in names):
                    continue
                rel = path.relative_to(src).as_posix()
                assert rel == "replay/scenario.py", f"{rel} imports {module}: only replay/scenario.py may"
                assert node not in tree.body, f"{rel} imports {module} at module level: import it where it is used"


def test_lambda_lock_satisfies_pyproject() -> None:
    """deploy/lambda-requirements.txt (what `make package` installs) meets pyproject's dependencies."""
    import tomllib

    from packaging.requirements import Requirement

    pins = {}
    for line in (iac.ROOT / "deploy" / "lambda-requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    project = tomllib.loads((iac.ROOT / "pyproject.toml").read_text())["project"]
    for spec in project["dependencies"]:
        requirement = Requirement(spec)
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        if name in {"boto3", "botocore", "s3transfer"}:
            assert name not in pins, f"{name} ships with the Lambda runtime"
            continue
        if name in REPLAY_ONLY:
            assert name not in pins, f"{name} is replay's, the Lambda never imports it: keep it out of the zip"
            continue
        assert name in pins, f"{spec} missing from the Lambda lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} vs {spec}"


def test_the_documented_sam_path_builds_and_deploys_the_zip() -> None:
    """Issue 29 item 1: `make deploy` packages, runs `sam build`, then `sam deploy`; every function's
    CodeUri is the zip (a zip is not rebuilt by `sam build`, so the built template ships those bytes)."""
    import tomllib

    config = tomllib.loads((iac.ROOT / "samconfig.toml").read_text())["default"]
    assert config["build"]["parameters"]["template_file"] == "template.yaml"
    for command in ("package", "deploy"):  # sam's default: .aws-sam/build/template.yaml when it exists
        assert "template_file" not in config[command]["parameters"], command
    capabilities = config["deploy"]["parameters"]["capabilities"].split()
    assert "CAPABILITY_AUTO_EXPAND" in capabilities  # the AWS::Serverless transform
    assert "CAPABILITY_IAM" in capabilities and "CAPABILITY_NAMED_IAM" not in capabilities  # no fixed names
    makefile = (iac.ROOT / "mk" / "deploy.mk").read_text()
    assert re.search(r"^deploy: package$", makefile, flags=re.M)
    recipe = makefile.split("\ndeploy: package\n", 1)[1].split("\n\n", 1)[0]
    assert recipe.index("$(SAM) build") < recipe.index("$(SAM) deploy")
    assert "Globals" not in TEMPLATE or "CodeUri" not in TEMPLATE["Globals"]["Function"]
    for logical in CFN_FUNCTION.values():
        assert TEMPLATE["Resources"][logical]["Properties"]["CodeUri"] == "dist/ecs-guardrail-lambda.zip", logical
    readme = (iac.ROOT / "README.md").read_text()
    deploy_section = readme[readme.index("## Deploy") :].split("\n## ", 1)[0]
    assert "make deploy" in deploy_section and "sam build" in deploy_section
    assert "make deploy" in (iac.ROOT / "docs" / "deploy.md").read_text()


SAM_CLI = iac.ROOT / ".venv-deploy" / "bin" / "sam"


@pytest.mark.skipif(not SAM_CLI.exists(), reason="no SAM CLI in .venv-deploy (make check-deploy installs it)")
def test_the_real_sam_build_keeps_the_zip(tmp_path: Path) -> None:
    """The real `sam build` (aws-sam-cli) reads template.yaml and writes a template whose every CodeUri
    is the zip: no function without code. Offline, about 3 s."""
    import shutil
    import subprocess

    shutil.copy(iac.TEMPLATE, tmp_path / "template.yaml")
    (tmp_path / "dist").mkdir()
    shutil.copy(iac.TERRAFORM / "tests" / "fixtures" / "lambda.zip", tmp_path / "dist" / "ecs-guardrail-lambda.zip")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "SAM_CLI_TELEMETRY": "0",
           "AWS_DEFAULT_REGION": "eu-west-1"}
    result = subprocess.run([str(SAM_CLI), "build", "--build-dir", "built"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "Build Succeeded" in result.stdout, result.stdout + result.stderr
    built = iac.raw_template(tmp_path / "built" / "template.yaml")
    for logical in CFN_FUNCTION.values():
        code = (tmp_path / "built" / built["Resources"][logical]["Properties"]["CodeUri"]).resolve()
        assert code == (tmp_path / "dist" / "ecs-guardrail-lambda.zip").resolve(), logical


def test_the_complete_example_sets_every_input_of_the_module() -> None:
    """Issue 29 item 7: terraform/examples/complete is the reference of every input: each module
    variable is set there explicitly (8 were left at their defaults)."""
    example = iac.load_terraform(iac.TERRAFORM / "examples" / "complete")
    text = (iac.TERRAFORM / "examples" / "complete" / "main.tf").read_text()
    block = text[text.index('module "ecs_guardrail" {'):]
    block = block[: block.index("\n}\n")]
    set_here = set(re.findall(r"^  (\w+)\s*=", block, flags=re.M)) - {"source"}
    assert set_here == set(TF["variable"]), sorted(set(TF["variable"]) ^ set_here)
    assert example["variable"]  # the example's own inputs (region, secrets) stay variables
