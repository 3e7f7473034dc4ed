#!/usr/bin/env bash
# `make check-deploy`: both deployments applied to a local AWS emulator (moto in server mode on
# 127.0.0.1 only; no credentials, nothing leaves the machine) and compared.
#
#   terraform   terraform/examples/complete: apply, apply again (must plan no change except what the
#               emulator cannot store, listed), a second region, destroy both. Needs terraform on PATH
#               and the local provider mirror (TF_PROVIDER_MIRROR, default /opt/tf-plugins), as
#               `make check-iac`; skipped with a message otherwise.
#   sam         template.yaml: Fn::ForEach expanded (AWS::LanguageExtensions), translated by the SAM
#               translator, created as a stack on the emulator's CloudFormation.
#   parity      the resources both paths created, side by side (scripts/deploy_parity.py).
#
# Tools come from PyPI into .venv-deploy (moto[server], aws-sam-translator: deploy/deploy-check-requirements.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEPLOY_VENV=${DEPLOY_VENV:-.venv-deploy}
TF_PROVIDER_MIRROR=${TF_PROVIDER_MIRROR:-/opt/tf-plugins}
step() { printf '\n== %s\n' "$*"; }

step "tools venv ($DEPLOY_VENV)"
if ! "$DEPLOY_VENV/bin/python" -c 'import moto.server, samtranslator' 2>/dev/null; then
  python3 -m venv "$DEPLOY_VENV"
  "$DEPLOY_VENV/bin/pip" install --quiet --disable-pip-version-check -r deploy/deploy-check-requirements.txt 2>&1 \
    | grep -v '^WARNING: Location' || true
fi
"$DEPLOY_VENV/bin/python" -c 'import moto, samtranslator; print(f"moto {moto.__version__}, aws-sam-translator {samtranslator.__version__}")'

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

step "moto server on 127.0.0.1"
port=$("$DEPLOY_VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$DEPLOY_VENV/bin/python" -m moto.server -H 127.0.0.1 -p "$port" >"$work/moto.log" 2>&1 &
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
step "terraform: apply, apply again, a second region, destroy"
if ! command -v terraform >/dev/null 2>&1; then
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

step "sam: translate template.yaml, create the stack on the emulator's CloudFormation"
if "$DEPLOY_VENV/bin/python" scripts/deploy_parity.py sam --endpoint "$endpoint" --out "$work/sam.json"; then :; else status=1; fi

step "parity of the two deployments"
if [ $tf_done -eq 1 ] && [ -f "$work/sam.json" ]; then
  "$DEPLOY_VENV/bin/python" scripts/deploy_parity.py compare --terraform "$work/tf.json" --sam "$work/sam.json" || status=1
else
  echo "parity: SKIPPED - needs both deployments (terraform above was skipped or failed)"
fi

step "check-deploy: $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
