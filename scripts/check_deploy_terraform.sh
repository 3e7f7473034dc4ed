#!/usr/bin/env bash
# Part of scripts/check_deploy.sh (reads PY, ENDPOINT, WORK, TF_CLI_CONFIG_FILE): terraform/examples/complete
# against the emulator at ENDPOINT, twice in eu-west-1 and once in us-west-2, then destroyed.
set -euo pipefail
ROOT=$PWD
for region in eu-west-1 us-west-2; do
  dir="$WORK/tf-$region"
  mkdir -p "$dir/dist"
  cp -r terraform "$dir/"
  # the code artifact: the fixture zip is enough for the emulator (make package builds the real one)
  cp terraform/tests/fixtures/lambda.zip "$dir/dist/ecs-guardrail-lambda.zip"
  "$PY" scripts/deploy_parity.py tf-override --endpoint "$ENDPOINT" --region "$region" \
    >"$dir/terraform/examples/complete/emulator_override.tf"
done

apply() {  # region, label
  local dir="$WORK/tf-$1/terraform/examples/complete"
  (cd "$dir" && terraform init -input=false -no-color >/dev/null && \
     terraform apply -auto-approve -input=false -no-color -var region="$1" >"$WORK/apply-$1-$2.log" 2>&1) || {
    echo "terraform apply ($1, $2) FAILED:"; tail -40 "$WORK/apply-$1-$2.log"; return 1; }
  grep -E '^Apply complete' "$WORK/apply-$1-$2.log" | sed "s/^/  $1 $2: /"
}

apply eu-west-1 first
"$PY" scripts/deploy_parity.py snapshot --endpoint "$ENDPOINT" --region eu-west-1 --out "$WORK/tf.json"

# again: what the emulator cannot store is planned again; anything else is a defect of the module
dir="$WORK/tf-eu-west-1/terraform/examples/complete"
set +e
(cd "$dir" && terraform plan -detailed-exitcode -input=false -no-color -var region=eu-west-1 -out=plan-again.bin \
   >"$WORK/plan-again.log" 2>&1)
rc=$?
set -e
if [ $rc -eq 1 ]; then echo "terraform plan (again) FAILED:"; tail -30 "$WORK/plan-again.log"; exit 1; fi
(cd "$dir" && terraform show -json plan-again.bin >"$WORK/plan-again.json")
"$PY" scripts/deploy_parity.py plan-again "$WORK/plan-again.json"
apply eu-west-1 again

apply us-west-2 second-region

for region in us-west-2 eu-west-1; do
  dir="$WORK/tf-$region/terraform/examples/complete"
  (cd "$dir" && terraform destroy -auto-approve -input=false -no-color -var region="$region" \
     >"$WORK/destroy-$region.log" 2>&1) || { echo "terraform destroy ($region) FAILED:"; tail -30 "$WORK/destroy-$region.log"; exit 1; }
  grep -E '^Destroy complete' "$WORK/destroy-$region.log" | sed "s/^/  $region: /"
done
"$PY" scripts/deploy_parity.py empty --endpoint "$ENDPOINT" --region eu-west-1
"$PY" scripts/deploy_parity.py empty --endpoint "$ENDPOINT" --region us-west-2
