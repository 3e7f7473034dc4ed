#!/usr/bin/env bash
# Part of scripts/check_deploy.sh (reads PY, ENDPOINT, WORK, TF_CLI_CONFIG_FILE; SAM_PACKAGED when the
# SAM half ran): one stack per account of an organisation on the emulator (issue 32 item 4).
#   terraform   terraform/examples/organisation: the central topic and heartbeat alarms, and the module in
#               two member accounts through assume_role provider aliases (moto: the assumed role's keys
#               belong to its account); each account's resources checked, alerts at the central topic
#   silent      member_b's stack destroyed mid-storm: its functions and heartbeat rule are gone, and the
#               central side names member_b (and not member_a) once its heartbeats stop
#   stackset    the StackSet's template (sam package's output through scripts/stackset_template.py, no
#               transform) created as a stack in both member accounts, each checked the same way
#   destroy     everything the terraform half made
set -euo pipefail
ROOT=$PWD
REGION=eu-west-1
dir="$WORK/tf-org"
mkdir -p "$dir/dist"
cp -r terraform "$dir/"
cp terraform/tests/fixtures/lambda.zip "$dir/dist/ecs-guardrail-lambda.zip"
ex="$dir/terraform/examples/organisation"
"$PY" scripts/check_deploy_org.py tf-override --endpoint "$ENDPOINT" --region "$REGION" >"$ex/emulator_override.tf"
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"

tf() {  # label, terraform arguments...
  local label=$1; shift
  (cd "$ex" && terraform "$@" -input=false -no-color >"$WORK/org-$label.log" 2>&1) || {
    echo "terraform $label FAILED:"; tail -40 "$WORK/org-$label.log"; return 1; }
}
(cd "$ex" && terraform init -input=false -no-color >/dev/null)
tf apply apply -auto-approve
grep -E '^Apply complete' "$WORK/org-apply.log" | sed 's/^/  organisation: /'
"$PY" scripts/check_deploy_org.py verify --endpoint "$ENDPOINT" --region "$REGION"

echo "  -- member_b deletes its stack mid-storm"
tf destroy-b destroy -auto-approve -target=module.member_b
grep -E '^Destroy complete' "$WORK/org-destroy-b.log" | sed 's/^/  member_b: /'
"$PY" scripts/check_deploy_org.py verify --endpoint "$ENDPOINT" --region "$REGION" --gone-member 333333333333
"${APP_PY:-$ROOT/.venv/bin/python}" scripts/check_deploy_org.py silence --endpoint "$ENDPOINT" --region "$REGION"

if [ -n "${SAM_PACKAGED:-}" ] && [ -f "$SAM_PACKAGED" ]; then
  echo "  -- the StackSet's template in both member accounts"
  bucket=$(grep -o 's3://[^/]*' "$SAM_PACKAGED" | head -1 | cut -c6-)
  "$PY" scripts/check_deploy_org.py stackset --endpoint "$ENDPOINT" --region "$REGION" --packaged "$SAM_PACKAGED" \
    --bucket "$bucket"
else
  echo "  stackset: SKIPPED - no packaged template (the SAM half did not run)"
fi

tf destroy destroy -auto-approve
grep -E '^Destroy complete' "$WORK/org-destroy.log" | sed 's/^/  organisation: /'
