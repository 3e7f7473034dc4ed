#!/usr/bin/env bash
# Part of scripts/check_deploy.sh (reads SAM_ENDPOINT, WORK, DEPLOY_VENV): the documented SAM path with the
# real SAM CLI against the emulator, in a copy of the repository's template.yaml and samconfig.toml.
#   sam build                     builds nothing (a zip CodeUri) and must point every CodeUri at the zip
#   sam package                   uploads the zip and the template to the emulator's S3 (resolve_s3)
#   sam deploy                    samconfig.toml's values, its changeset prompt answered y on stdin
# then the stack's snapshot for the parity table ($WORK/sam.json).
set -euo pipefail
ROOT=$PWD
case $DEPLOY_VENV in /*) VENV=$DEPLOY_VENV ;; *) VENV=$ROOT/$DEPLOY_VENV ;; esac
SAM="$VENV/bin/sam"
dir="$WORK/sam"
mkdir -p "$dir/dist"
cp template.yaml samconfig.toml "$dir/"
# the code artifact: the fixture zip is enough for the emulator (make package builds the real one)
cp terraform/tests/fixtures/lambda.zip "$dir/dist/ecs-guardrail-lambda.zip"
export AWS_ENDPOINT_URL=$SAM_ENDPOINT SAM_CLI_TELEMETRY=0 HOME="$WORK/home"
mkdir -p "$HOME"
cd "$dir"
run() {  # label, command...: the command's output to $WORK/sam-LABEL.log, its tail on failure
  local label=$1; shift
  if "$@" >"$WORK/sam-$label.log" 2>&1 </dev/null; then return 0; fi
  echo "sam $label FAILED:"; tail -30 "$WORK/sam-$label.log"; return 1
}
run build "$SAM" build
grep -q 'Build Succeeded' "$WORK/sam-build.log"
"$VENV/bin/python" - <<'PY'
import sys
from pathlib import Path
import yaml
class L(yaml.SafeLoader): pass
L.add_multi_constructor("!", lambda loader, suffix, node: None)
built = yaml.load(Path(".aws-sam/build/template.yaml").read_text(), Loader=L)
zip_ = Path("dist/ecs-guardrail-lambda.zip").resolve()
bad = [k for k, r in built["Resources"].items() if r["Type"] == "AWS::Serverless::Function"
       and (Path(".aws-sam/build") / r["Properties"]["CodeUri"]).resolve() != zip_]
print("  sam build: Build Succeeded, every function's CodeUri is the zip" if not bad else f"  sam build: {bad} lost the zip")
sys.exit(1 if bad else 0)
PY
run package "$SAM" package --output-template-file packaged.yaml
echo "  sam package: $(grep -c 'CodeUri: s3://' packaged.yaml) functions' code in the emulator's S3"
# the inputs terraform/examples/complete gave the module (its plan, when the terraform half ran), so the
# parity table compares the two deployments value by value; samconfig.toml's other values stay
overrides=()
if [ -f "$WORK/plan-again.json" ]; then
  overrides=(--parameter-overrides "$("$VENV/bin/python" "$ROOT/scripts/deploy_parity.py" sam-overrides "$WORK/plan-again.json")")
  echo "  sam deploy: with the inputs terraform/examples/complete gave the module"
fi
# sam deploy asks "Deploy this changeset? [y/N]" (confirm_changeset = true): answered y on stdin
if printf 'y\n' | "$SAM" deploy "${overrides[@]}" >"$WORK/sam-deploy.log" 2>&1; then
  grep -E '^Successfully created/updated stack' "$WORK/sam-deploy.log" | sed 's/^/  sam deploy: /'
else
  echo "sam deploy FAILED:"; tail -30 "$WORK/sam-deploy.log"; exit 1
fi
grep -q 'Deploy this changeset?' "$WORK/sam-deploy.log" && echo "  sam deploy: the changeset prompt was asked and answered"
# sam deploy --guided, every prompt answered with Enter (its default: samconfig.toml's value, else the
# template's default); the last prompt, "Deploy this changeset? [y/N]", is then N: nothing is executed
if [ "${SAM_GUIDED:-1}" = 0 ]; then
  echo "  sam deploy --guided: SKIPPED - SAM_GUIDED=0"
elif (for _ in $(seq 1 80); do echo; done) | "$SAM" deploy --guided >"$WORK/sam-guided.log" 2>&1; then
  prompts=$(grep -o 'Parameter [A-Za-z]* \[' "$WORK/sam-guided.log" | wc -l)
  params=$(grep -cE '^  [A-Z][A-Za-z]*:$' <(sed -n '/^Parameters:/,/^[A-Z]/p' template.yaml))
  if [ "$prompts" -ne "$params" ] || ! grep -q 'Saved arguments to config file' "$WORK/sam-guided.log"; then
    echo "sam deploy --guided FAILED: $prompts parameter prompts for $params parameters:"; tail -20 "$WORK/sam-guided.log"
    exit 1
  fi
  echo "  sam deploy --guided: $prompts parameter prompts and the rest answered by Enter, arguments saved"
else
  echo "sam deploy --guided FAILED:"; tail -30 "$WORK/sam-guided.log"; exit 1
fi
cd "$ROOT"
"$VENV/bin/python" scripts/deploy_parity.py sam --endpoint "$SAM_ENDPOINT" \
  --template "$dir/packaged.yaml" --out "$WORK/sam.json"
