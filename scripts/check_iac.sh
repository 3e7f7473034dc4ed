#!/usr/bin/env bash
# Offline checks of template.yaml and terraform/ (PyPI is the only network it may use, to create
# .venv-iac on a fresh clone). Run by `make check-iac` and .ci/run.
#
#   cfn-lint      template.yaml, deploy/member-account.yaml, deploy/central.yaml, deploy/stackset.yaml
#   checkov       CloudFormation and Terraform; every skipped check must carry an inline reason
#   terraform     fmt -check (needs terraform on PATH) and validate (needs a local provider mirror:
#                 TF_PROVIDER_MIRROR, default /opt/tf-plugins); each is skipped with a message otherwise
#   pytest        tests/infra with .venv/bin/python (parity of both deployments, IAM = code's calls, and
#                 `terraform test` of terraform/tests/*.tftest.hcl with a mocked provider where terraform
#                 >= 1.7 and the provider mirror exist; it skips with a reason otherwise)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
IAC_VENV=${IAC_VENV:-.venv-iac}
PY=${PY:-.venv/bin/python}
TF_PROVIDER_MIRROR=${TF_PROVIDER_MIRROR:-/opt/tf-plugins}
status=0
step() { printf '\n== %s\n' "$*"; }

step "tools venv ($IAC_VENV)"
if ! "$IAC_VENV/bin/cfn-lint" --version >/dev/null 2>&1 || ! "$IAC_VENV/bin/checkov" --version >/dev/null 2>&1; then
  python3 -m venv "$IAC_VENV"
  "$IAC_VENV/bin/pip" install --quiet --disable-pip-version-check -r deploy/iac-requirements.txt 2>&1 \
    | grep -v '^WARNING: Location' || true
fi
echo "cfn-lint $("$IAC_VENV/bin/cfn-lint" --version | awk '{print $2}'), checkov $("$IAC_VENV/bin/checkov" --version)"

step "cfn-lint"
if "$IAC_VENV/bin/cfn-lint" template.yaml deploy/member-account.yaml deploy/central.yaml deploy/stackset.yaml; then
  echo "cfn-lint: 0 errors, 0 warnings (template.yaml, deploy/member-account.yaml, deploy/central.yaml, deploy/stackset.yaml)"
else
  status=1
fi

step "checkov"
export BC_SKIP_MAPPING=TRUE CHECKOV_RUN_SCA_PACKAGE_SCAN_V2=false   # offline: no guideline download
report=$(mktemp -d)
"$IAC_VENV/bin/checkov" --skip-download --framework cloudformation -o json \
  -f template.yaml -f deploy/member-account.yaml -f deploy/central.yaml -f deploy/stackset.yaml >"$report/cfn.json" 2>"$report/cfn.err" || true
"$IAC_VENV/bin/checkov" --skip-download --framework terraform -o json \
  -d terraform >"$report/tf.json" 2>"$report/tf.err" || true
"$IAC_VENV/bin/python" - "$report" <<'PY' || status=1
import json, sys, pathlib
failed = 0
for name in ("cfn", "tf"):
    raw = pathlib.Path(sys.argv[1], f"{name}.json").read_text()
    try:
        docs = json.loads(raw)
    except json.JSONDecodeError:
        print(f"checkov {name}: no report\n" + pathlib.Path(sys.argv[1], f"{name}.err").read_text()[-2000:])
        sys.exit(1)
    for doc in docs if isinstance(docs, list) else [docs]:
        s, r = doc["summary"], doc["results"]
        print(f"checkov {doc['check_type']}: passed {s['passed']}, failed {s['failed']}, "
              f"skipped {s['skipped']}, parsing errors {s['parsing_errors']}")
        for c in r["failed_checks"]:
            print(f"  FAILED {c['check_id']} {c['resource']} ({c['file_path']}:{c['file_line_range']})")
        for c in r["skipped_checks"]:
            reason = (c.get("check_result") or {}).get("suppress_comment") or ""
            if len(reason.strip()) < 20:
                print(f"  SKIPPED WITHOUT A REASON {c['check_id']} {c['resource']}")
                failed += 1
        failed += s["failed"] + s["parsing_errors"]
        skipped = sorted({(c["check_id"], (c.get("check_result") or {}).get("suppress_comment", ""))
                          for c in r["skipped_checks"]})
        for check_id, reason in skipped:
            print(f"  skip {check_id}: {reason}")
sys.exit(1 if failed else 0)
PY
rm -rf "$report"

step "terraform"
if command -v terraform >/dev/null 2>&1; then
  tfrc=$(mktemp); : >"$tfrc"
  if TF_CLI_CONFIG_FILE=$tfrc terraform fmt -check -recursive -diff terraform; then
    echo "terraform fmt: clean"
  else
    echo "terraform fmt: files above need 'terraform fmt -recursive terraform'"; status=1
  fi
  if [ -d "$TF_PROVIDER_MIRROR/registry.terraform.io/hashicorp/aws" ]; then
    cat >"$tfrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$TF_PROVIDER_MIRROR"
    include = ["registry.terraform.io/hashicorp/*"]
  }
}
RC
    work=$(mktemp -d); cp -r terraform "$work/"
    for dir in terraform terraform/examples/complete terraform/examples/member-account terraform/examples/organisation; do
      if (cd "$work/$dir" && TF_CLI_CONFIG_FILE=$tfrc terraform init -backend=false -input=false -no-color >/dev/null \
          && TF_CLI_CONFIG_FILE=$tfrc terraform validate -no-color); then :; else status=1; fi
    done
    rm -rf "$work"
  else
    echo "terraform validate: SKIPPED - no provider mirror at $TF_PROVIDER_MIRROR and providers cannot be downloaded here; tests/infra parses the module instead"
  fi
  rm -f "$tfrc"
else
  echo "terraform fmt/validate: SKIPPED - no terraform binary on PATH; tests/infra parses the module with python-hcl2 (its terraform-console tests skip with a reason)"
fi

step "tests/infra"
if ! "$PY" -c 'import yaml, hcl2' 2>/dev/null; then
  echo "tests/infra needs pyyaml and python-hcl2 in $PY's environment (the dev extra): pip install -e '.[dev]'"
  status=1
else
  PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m pytest tests/infra -q -ra -p no:cacheprovider || status=1
fi

step "check-iac: $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
