#!/usr/bin/env bash
# `make check-deploy`: both deployments applied to a local AWS emulator (moto in server mode on
# 127.0.0.1 only; no credentials, nothing leaves the machine) and compared.
#
#   terraform   terraform/examples/complete: apply, apply again (must plan no change except what the
#               emulator cannot store, listed), a second region, destroy both. Needs terraform on PATH
#               and the local provider mirror (TF_PROVIDER_MIRROR, default /opt/tf-plugins), as
#               `make check-iac`; skipped with a message otherwise. The second plan may differ only in
#               the emulator drift scripts/deploy_parity.py names attribute by attribute (EMULATOR_DRIFT);
#               a create, destroy or replacement always fails.
#   sam         template.yaml with the real SAM CLI, as docs/deploy.md says: `sam build`, `sam package`,
#               then `sam deploy` with samconfig.toml's values (resolve_s3, prefix, capabilities,
#               DryRun=true; its changeset prompt answered y) against the emulator's S3 and
#               CloudFormation. The emulator is moto with the two change-set behaviours it lacks
#               (the SAM transform, outputs after execution: scripts/emulator.py says which).
#   parity      the resources both paths created, side by side (scripts/deploy_parity.py): functions with
#               every environment value and every Deny statement's actions, resources and condition.
#   organisation  terraform/examples/organisation in a central and two member accounts (moto picks the
#               account by the assumed role's keys), one member's stack destroyed (the central side names
#               it), and the StackSet's template (scripts/stackset_template.py) as a stack in both members
#               (scripts/check_deploy_org.sh)
#   broken      tests/infra/test_check_deploy_broken.py: copies broken for each blind spot (a second
#               apply replacing the table, another environment value, a misspelt deny prefix) fail.
#
# Tools come from PyPI into .venv-deploy (moto[server], aws-sam-cli, aws-sam-translator:
# deploy/deploy-check-requirements.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEPLOY_VENV=${DEPLOY_VENV:-.venv-deploy}
TF_PROVIDER_MIRROR=${TF_PROVIDER_MIRROR:-/opt/tf-plugins}
step() { printf '\n== %s\n' "$*"; }

step "tools venv ($DEPLOY_VENV)"
if ! "$DEPLOY_VENV/bin/python" -c 'import moto.server, samtranslator, samcli' 2>/dev/null || [ ! -x "$DEPLOY_VENV/bin/sam" ]; then
  python3 -m venv "$DEPLOY_VENV"
  "$DEPLOY_VENV/bin/pip" install --quiet --disable-pip-version-check -r deploy/deploy-check-requirements.txt 2>&1 \
    | grep -v '^WARNING: Location' || true
fi
"$DEPLOY_VENV/bin/python" -c 'import moto, samtranslator, samcli; print(f"moto {moto.__version__}, aws-sam-cli {samcli.__version__}, aws-sam-translator {samtranslator.__version__}")'

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "${CHECK_DEPLOY_KEEP:-}" ]; then echo "work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

step "moto server on 127.0.0.1 (scripts/emulator.py)"
port=$("$DEPLOY_VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$DEPLOY_VENV/bin/python" scripts/emulator.py "$port" >"$work/moto.log" 2>&1 &
server_pid=$!
endpoint="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
  if "$DEPLOY_VENV/bin/python" -c "import urllib.request,sys; urllib.request.urlopen('$endpoint/moto-api/data.json', timeout=1)" 2>/dev/null; then break; fi
  if ! kill -0 "$server_pid" 2>/dev/null; then echo "moto server did not start:"; tail -20 "$work/moto.log"; exit 1; fi
  sleep 0.2
done
echo "moto server at $endpoint (pid $server_pid)"
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=eu-west-1
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN

status=0
tf_done=0
ONLY=${CHECK_DEPLOY_ONLY:-}  # terraform, sam or org: that part alone (a quicker loop while working on it)
step "terraform: apply, apply again, a second region, destroy"
if [ "$ONLY" = sam ] || [ "$ONLY" = org ]; then
  echo "terraform: SKIPPED - CHECK_DEPLOY_ONLY=$ONLY"
elif ! command -v terraform >/dev/null 2>&1; then
  echo "terraform: SKIPPED - no terraform binary on PATH"
elif [ ! -d "$TF_PROVIDER_MIRROR/registry.terraform.io/hashicorp/aws" ]; then
  echo "terraform: SKIPPED - no provider mirror at $TF_PROVIDER_MIRROR (providers cannot be downloaded here)"
else
  tfrc="$work/terraformrc"
  cat >"$tfrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$TF_PROVIDER_MIRROR"
    include = ["registry.terraform.io/hashicorp/*"]
  }
}
RC
  export TF_CLI_CONFIG_FILE=$tfrc TF_IN_AUTOMATION=1 TF_INPUT=0
  if PY="$DEPLOY_VENV/bin/python" ENDPOINT="$endpoint" WORK="$work" bash scripts/check_deploy_terraform.sh; then
    tf_done=1
  else
    status=1
  fi
fi

step "sam: sam build, sam package, sam deploy (samconfig.toml) on the emulator"
# moto finds a TemplateURL's bucket in the path only for "localhost" (the server still binds 127.0.0.1)
if [ "$ONLY" = terraform ] || [ "$ONLY" = org ]; then
  echo "sam: SKIPPED - CHECK_DEPLOY_ONLY=$ONLY"
elif SAM_ENDPOINT="http://localhost:$port" WORK="$work" DEPLOY_VENV="$DEPLOY_VENV" bash scripts/check_deploy_sam.sh; then
  :
else
  status=1
fi
grep '^emulator:' "$work/moto.log" | sort | uniq -c | sed 's/^/  /' || true

step "organisation: one stack per account, two member accounts (scripts/check_deploy_org.sh)"
if [ -n "$ONLY" ] && [ "$ONLY" != org ]; then
  echo "organisation: SKIPPED - CHECK_DEPLOY_ONLY=$ONLY"
elif ! command -v terraform >/dev/null 2>&1 || [ ! -d "$TF_PROVIDER_MIRROR/registry.terraform.io/hashicorp/aws" ]; then
  echo "organisation: SKIPPED - needs terraform and the provider mirror (as the terraform half)"
else
  if [ -z "${TF_CLI_CONFIG_FILE:-}" ]; then
    export TF_CLI_CONFIG_FILE="$work/terraformrc" TF_IN_AUTOMATION=1 TF_INPUT=0
    printf 'provider_installation {\n  filesystem_mirror {\n    path    = "%s"\n    include = ["registry.terraform.io/hashicorp/*"]\n  }\n}\n' \
      "$TF_PROVIDER_MIRROR" >"$TF_CLI_CONFIG_FILE"
  fi
  # moto finds a TemplateURL's bucket in the path only for "localhost" (the StackSet's template)
  if PY="$DEPLOY_VENV/bin/python" ENDPOINT="http://localhost:$port" WORK="$work" SAM_PACKAGED="$work/sam/packaged.yaml" \
       bash scripts/check_deploy_org.sh; then
    :
  else
    status=1
  fi
fi

step "parity of the two deployments"
if [ $tf_done -eq 1 ] && [ -f "$work/sam.json" ]; then
  "$DEPLOY_VENV/bin/python" scripts/deploy_parity.py compare --terraform "$work/tf.json" --sam "$work/sam.json" || status=1
else
  echo "parity: SKIPPED - needs both deployments (terraform above was skipped or failed)"
fi

step "broken copies: each blind spot's check fails on a copy broken for it (tests/infra/test_check_deploy_broken.py)"
if [ -n "$ONLY" ]; then
  echo "broken copies: SKIPPED - CHECK_DEPLOY_ONLY=$ONLY"
elif [ ! -x .venv/bin/python ]; then
  echo "broken copies: SKIPPED - no .venv (make setup) to run pytest in"
elif CHECK_DEPLOY_BROKEN=1 .venv/bin/python -m pytest tests/infra/test_check_deploy_broken.py -q -p no:cacheprovider \
     -rs 2>&1 | tail -8 | sed 's/^/  /'; [ "${PIPESTATUS[0]}" -eq 0 ]; then
  :
else
  status=1
fi

step "check-deploy: $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
