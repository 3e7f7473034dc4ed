# ecs-guardrail: the two commands are `make run` (set-up + replay of a bundled scenario) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SCENARIO ?= events/scenarios/bad-image-dev

SHARED ?= ../shared

.PHONY: run test setup lint bench clean acceptance help completion explore mutate

## this list: every target with its one-line description
help:
	@awk '/^\.PHONY/{next} /^## /{doc=doc (doc==""?"":" ") substr($$0,4); next} /^[a-z][a-z-]*:/{if(doc!=""){sub(/:.*/,"",$$1); printf "  make %-14s %s\n",$$1,doc}} {doc=""}' $(MAKEFILE_LIST)

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,plot]"
	touch $@

## create .venv with the project and its dev and plot extras (again whenever pyproject.toml changes)
setup: $(VENV)/.installed

## the main job on its embedded default: replay a bundled incident in process (fast engine: in-memory AWS, no moto)
run: setup
	$(VENV)/bin/ecs-guardrail replay $(SCENARIO)

# Bytecode is a cache, and make test keeps it in .venv/pycache even where the environment sets
# PYTHONDONTWRITEBYTECODE (the source tree stays clean either way): without it both workers re-rewrite every
# test module's asserts and every CLI subprocess a test starts compiles the project again (issue 23)
TEST_ENV := PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache PYTHONDONTWRITEBYTECODE=

## every test (unit, functional on moto, Slack on 127.0.0.1, end to end, infra parity); the slowest 10 last
test: setup
	$(TEST_ENV) $(PY) -m pytest -n 2 --dist loadfile -q --durations=10

EXPLORE_SCHEDULES ?= 150
## the interleaving explorer at its full budget: every schedule of two invocations within two preemptions (make test runs those within one and a seeded sample of the rest) and EXPLORE_SCHEDULES seeded three-invocation schedules (150; 10000 for the long run); CI runs it as its own step
explore: setup
	EXPLORE_BUDGET=full EXPLORE_SCHEDULES=$(EXPLORE_SCHEDULES) $(TEST_ENV) $(PY) -m pytest -q -p no:cacheprovider \
	  tests/explore/test_interleavings.py tests/explore/test_faults_and_sample.py

## mutants of the safety code (episode machine, cap slots, lease, alert-only guards, redaction, probes), one at a time on a copy of src/, each against its own tests (the explorer at its full budget): every one must be caught
mutate: setup
	$(PY) scripts/mutate.py

## the acceptance scenarios (bundled, and ../shared/scenarios where it exists; SHARED=DIR) through replay --json and the checker
acceptance: setup
	@if [ "$(origin SHARED)" = "command line" ] && [ ! -d "$(SHARED)/scenarios" ]; then \
	  echo "acceptance: SHARED=$(SHARED) holds no scenarios/ folder (SHARED is the folder that holds scenarios/)"; \
	  exit 2; fi
	@out=$$(mktemp -d); status=0; n=0; \
	checker=$(SHARED)/tools/check_replay.py; [ -f $$checker ] || checker=tests/e2e/check_replay.py; \
	for d in events/scenarios/*/ $(wildcard $(SHARED)/scenarios/*/); do \
	  name=$$(basename $$d); n=$$((n+1)); \
	  if ! $(VENV)/bin/ecs-guardrail replay $$d --json > $$out/$$name.jsonl 2>$$out/$$name.err; then \
	    echo "FAIL $$d: replay exited non-zero"; tail -3 $$out/$$name.err; status=1; continue; fi; \
	  if [ -f $$d/expected.json ]; then \
	    python3 $$checker $$d $$out/$$name.jsonl || status=1; else echo "ran  $$d (no expected.json)"; fi; \
	done; rm -rf $$out; echo "acceptance: $$n scenarios, $$([ $$status -eq 0 ] && echo passed || echo FAILED)"; exit $$status

## print a bash completion script for ecs-guardrail (source <(make -s completion))
completion: setup
	@$(PY) -m ecs_guardrail.cli_reference --bash-completion

## ruff over src, tests, scripts and bench, then mypy over src/ecs_guardrail (strict for core/ and adapters/; pyproject.toml)
lint: setup
	$(VENV)/bin/ruff check src tests scripts bench
	$(VENV)/bin/mypy src/ecs_guardrail

## remove the virtual environments and build output
clean:
	rm -rf $(VENV) .venv-iac dist build .pytest_cache .hypothesis

include mk/deploy.mk
include mk/bench.mk
