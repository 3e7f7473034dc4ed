"""`make check-deploy` fails on a deliberately broken copy of the templates (issue 29 item 3), one test
per blind spot it had, with the real tools on the emulator (scripts/emulator.py: moto server on
127.0.0.1):

1. the second terraform apply: a copy whose history table would be replaced (a new name) fails the
   second-plan check (it accepted replace, create and destroy for 9 resource types before);
2. environment values: a SAM copy whose watchdog gets another DRY_RUN value fails the parity table
   (it compared the variables' names only);
3. deny resources: a SAM copy with a misspelt deny prefix (``services/``) fails it (it compared the
   Deny statements' actions only).

The SAM half runs scripts/check_deploy_sam.sh itself (sam build, sam package, sam deploy) on a copy of
the files it reads; the reference is the unbroken template deployed the same way. Cheap on purpose:
two SAM deployments of the default template, one targeted terraform apply of the table. Skipped, with
the reason, without the tools (.venv-deploy from `make check-deploy`, terraform and its provider mirror),
and outside `make check-deploy`, which runs this module last (CHECK_DEPLOY_BROKEN=1).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-deploy"
PY = VENV / "bin" / "python"
MIRROR = Path(os.environ.get("TF_PROVIDER_MIRROR", "/opt/tf-plugins"))
_spec = importlib.util.spec_from_file_location("deploy_parity_broken", ROOT / "scripts" / "deploy_parity.py")
assert _spec and _spec.loader
dp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dp)

#: about 60 s of CPU: `make check-deploy` runs this module (CHECK_DEPLOY_BROKEN=1) after its own deployments,
#: where the tools are installed; `make test` skips it
pytestmark = pytest.mark.skipif(os.environ.get("CHECK_DEPLOY_BROKEN") != "1",
                                reason="run by make check-deploy (CHECK_DEPLOY_BROKEN=1), which installs its tools")
needs_emulator = pytest.mark.skipif(
    not (PY.exists() and (VENV / "bin" / "sam").exists()),
    reason="no .venv-deploy with moto[server] and aws-sam-cli (make check-deploy installs them)")
needs_terraform = pytest.mark.skipif(
    shutil.which("terraform") is None or not (MIRROR / "registry.terraform.io" / "hashicorp" / "aws").is_dir(),
    reason=f"no terraform on PATH or no provider mirror at {MIRROR} (providers cannot be downloaded here)")


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The check's emulator on a free port of 127.0.0.1; yields its base URL (``localhost``, as the check)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("emulator") / "moto.log"
    with log.open("w") as out:
        server = subprocess.Popen([str(PY), str(ROOT / "scripts" / "emulator.py"), str(port)], stdout=out,
                                  stderr=subprocess.STDOUT)
    url = f"http://localhost:{port}"
    try:
        for _ in range(150):
            try:
                urllib.request.urlopen(f"{url}/moto-api/data.json", timeout=1)  # noqa: S310 - local emulator
                break
            except OSError:
                assert server.poll() is None, log.read_text()[-2000:]
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def _reset(url: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=10)  # noqa: S310


def _sam_snapshot(url: str, tree: Path, label: str) -> dict[str, Any]:
    """Deploy ``tree`` (a copy of the files check_deploy_sam.sh reads) with that script; its snapshot."""
    _reset(url)
    work = tree / f"work-{label}"
    work.mkdir()
    env = {**os.environ, "SAM_ENDPOINT": url, "WORK": str(work), "DEPLOY_VENV": str(VENV), "SAM_GUIDED": "0",
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "eu-west-1"}
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_PROFILE"):
        env.pop(key, None)
    result = subprocess.run(["bash", "scripts/check_deploy_sam.sh"], cwd=tree, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads((work / "sam.json").read_text())


def _tree(tmp: Path, edit: dict[str, str] | None = None) -> Path:
    """The files check_deploy_sam.sh and deploy_parity.py read, with template.yaml's ``edit`` applied."""
    tmp.mkdir()
    text = (ROOT / "template.yaml").read_text()
    for old, new in (edit or {}).items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (tmp / "template.yaml").write_text(text)
    shutil.copy(ROOT / "samconfig.toml", tmp / "samconfig.toml")
    shutil.copytree(ROOT / "scripts", tmp / "scripts")
    (tmp / "tests" / "infra").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "infra" / "iac.py", tmp / "tests" / "infra" / "iac.py")
    (tmp / "terraform" / "tests" / "fixtures").mkdir(parents=True)
    shutil.copy(ROOT / "terraform" / "tests" / "fixtures" / "lambda.zip", tmp / "terraform" / "tests" / "fixtures")
    return tmp


#: the broken copy: the watchdog's DRY_RUN no longer the parameter's value, and a misspelt deny prefix
BROKEN = {
    "          DRY_RUN: !Ref DryRun\n": '          DRY_RUN: "false"\n',
    '- - "arn:*:ecs:*:*:service/"\n': '- - "arn:*:ecs:*:*:services/"\n',  # the deny's name/glob prefix
}


@pytest.fixture(scope="module")
def sam_pair(emulator: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Snapshots of the template and of its broken copy, each deployed by the check's SAM half."""
    base = tmp_path_factory.mktemp("sam-pair")
    good, bad = base / "good.json", base / "broken.json"
    good.write_text(json.dumps(_sam_snapshot(emulator, _tree(base / "good"), "good")))
    bad.write_text(json.dumps(_sam_snapshot(emulator, _tree(base / "broken", BROKEN), "broken")))
    return good, bad


WATCHDOG = "ecs_guardrail.handlers.watchdog.handler"


@needs_emulator
def test_check_deploy_fails_on_another_environment_value(sam_pair: tuple[Path, Path], capsys) -> None:
    good, bad = sam_pair
    a, b = (json.loads(p.read_text())["functions"][WATCHDOG]["environment"] for p in sam_pair)
    assert sorted(a) == sorted(b) and (a["DRY_RUN"], b["DRY_RUN"]) == ("true", "false")  # names alike
    assert dp.compare(good, good) == 0
    capsys.readouterr()
    assert dp.compare(good, bad) == 1
    out = capsys.readouterr().out
    assert any(line.split()[:3] == ["function", "watchdog:", "DRY_RUN"] and "DIFFERS" in line
               for line in out.splitlines()), out


@needs_emulator
def test_check_deploy_fails_on_a_misspelt_deny_resource(sam_pair: tuple[Path, Path], capsys) -> None:
    good, bad = sam_pair
    a, b = (json.loads(p.read_text())["functions"][WATCHDOG]["deny"] for p in sam_pair)
    assert [d["actions"] for d in a] == [d["actions"] for d in b]  # the actions alone agree
    assert a[0]["resources"] == ["arn:*:ecs:*:*:service/production/*"]
    assert b[0]["resources"] == ["arn:*:ecs:*:*:services/production/*"]
    assert dp.compare(good, bad) == 1
    assert "function watchdog: deny 1 resources" in capsys.readouterr().out


@needs_emulator
@needs_terraform
def test_check_deploy_fails_when_a_second_apply_would_replace_the_history_table(emulator: str, tmp_path: Path,
                                                                                capsys) -> None:
    """The module applied (its table, -target: cheap), then a copy naming the table anew planned again:
    a replacement, which the second-plan check refuses; the unchanged copy passes it."""
    _reset(emulator)
    shutil.copytree(ROOT / "terraform", tmp_path / "terraform",
                    ignore=shutil.ignore_patterns(".terraform*", "*.tfstate*"))
    example = tmp_path / "terraform" / "examples" / "complete"
    (example / "emulator_override.tf").write_text(dp.tf_override(emulator.replace("localhost", "127.0.0.1"),
                                                                 "eu-west-1"))
    rc = tmp_path / "terraformrc"
    rc.write_text(f'provider_installation {{\n  filesystem_mirror {{\n    path = "{MIRROR}"\n'
                  '    include = ["registry.terraform.io/hashicorp/*"]\n  }\n}\n')
    env = {**os.environ, "TF_CLI_CONFIG_FILE": str(rc), "TF_IN_AUTOMATION": "1", "TF_INPUT": "0",
           "CHECKPOINT_DISABLE": "1"}
    target = "-target=module.ecs_guardrail.aws_dynamodb_table.history"

    def tf(*args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(["terraform", *args, "-no-color"], cwd=example, env=env, capture_output=True,
                                text=True, timeout=600)
        assert result.returncode in (0, 2), result.stdout[-3000:] + result.stderr[-3000:]
        return result

    def plan_again() -> int:
        tf("plan", "-input=false", target, "-out=again.bin", "-var", "region=eu-west-1")
        (tmp_path / "again.json").write_text(tf("show", "-json", "again.bin").stdout)
        return dp.plan_again(str(tmp_path / "again.json"))

    tf("init", "-input=false")
    tf("apply", "-auto-approve", "-input=false", target, "-var", "region=eu-west-1")
    assert plan_again() == 0
    main = tmp_path / "terraform" / "main.tf"
    main.write_text(main.read_text().replace('name                        = "${var.name}-history"',
                                             'name                        = "${var.name}-history-v2"', 1))
    capsys.readouterr()
    assert plan_again() == 1
    assert "aws_dynamodb_table.history[0] would be replaced" in capsys.readouterr().out
