# Deployment targets of ecs-guardrail; `include mk/deploy.mk` from the Makefile.
#   make package    reproducible Lambda zip (dist/ecs-guardrail-lambda.zip), prints size and sha256
#   make deploy     package, `sam build`, then `sam deploy` with samconfig.toml (of the built template,
#                   whose CodeUri is the zip). Extra arguments: SAM_ARGS='--guided' or
#                   SAM_ARGS='--stack-name x --parameter-overrides DryRun=false ...'
#   make check-iac  cfn-lint, checkov, terraform fmt/validate/test and tests/infra, offline
#   make stackset-template  STACKSET_BUCKET=B: sam build, sam package to B, then the SAM transform done
#                   here (StackSets run none): dist/stackset-template.json for deploy/stackset.yaml
#   make check-deploy  both templates deployed to moto in server mode on 127.0.0.1 and compared, the
#                   SAM one by the real SAM CLI (scripts/check_deploy.sh; about 290 s of CPU with the organisation part; in .ci/run)
DEPLOY_PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
SAM ?= sam
SAM_ARGS ?=
STACKSET_BUCKET ?=
DEPLOY_VENV ?= .venv-deploy

.PHONY: package deploy gen-alarms check-iac check-deploy stackset-template

## the reproducible Lambda zip (dist/ecs-guardrail-lambda.zip); prints its size and sha256
package:
	$(DEPLOY_PYTHON) scripts/package.py

## make package, sam build, then sam deploy with samconfig.toml (SAM_ARGS='--guided' the first time)
deploy: package
	@command -v $(SAM) >/dev/null 2>&1 || { echo "make deploy: the sam CLI is not on PATH (pip install aws-sam-cli)"; exit 1; }
	$(DEPLOY_PYTHON) scripts/gen_alarms.py --check
	$(SAM) build --config-file samconfig.toml
	$(SAM) deploy --config-file samconfig.toml $(SAM_ARGS)

## rewrite template.yaml's generated alarm blocks from scripts/gen_alarms.py's tables
gen-alarms:
	$(DEPLOY_PYTHON) scripts/gen_alarms.py

## offline checks of both templates: cfn-lint, checkov, terraform fmt/validate/test, tests/infra
check-iac:
	PY=$(DEPLOY_PYTHON) bash scripts/check_iac.sh

## both deployments on a local emulator (moto server, 127.0.0.1 only): terraform apply, apply again, a second region, destroy; the real sam build, sam package and sam deploy (and --guided); the parity table; broken copies that must fail
check-deploy:
	bash scripts/check_deploy.sh

## STACKSET_BUCKET=B: sam build, sam package to B, the SAM transform applied (StackSets run none): dist/stackset-template.json
stackset-template:
	@test -n "$(STACKSET_BUCKET)" || { echo "make stackset-template: give STACKSET_BUCKET=<an S3 bucket the organisation may read>"; exit 1; }
	@command -v $(SAM) >/dev/null 2>&1 || { echo "make stackset-template: the sam CLI is not on PATH (pip install aws-sam-cli)"; exit 1; }
	$(MAKE) package
	$(SAM) build --config-file samconfig.toml
	$(SAM) package --s3-bucket $(STACKSET_BUCKET) --s3-prefix ecs-guardrail --output-template-file dist/packaged.yaml
	$(if $(wildcard $(DEPLOY_VENV)/bin/python),$(DEPLOY_VENV)/bin/python,python3) scripts/stackset_template.py dist/packaged.yaml dist/stackset-template.json
