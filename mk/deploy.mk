# Deployment targets of ecs-guardrail; `include mk/deploy.mk` from the Makefile.
#   make package    reproducible Lambda zip (dist/ecs-guardrail-lambda.zip), prints size and sha256
#   make check-iac  cfn-lint, checkov, terraform fmt/validate and tests/infra, offline
DEPLOY_PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)

.PHONY: package check-iac

package:
	$(DEPLOY_PYTHON) scripts/package.py

check-iac:
	PY=$(DEPLOY_PYTHON) bash scripts/check_iac.sh
