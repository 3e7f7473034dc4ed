# ecs-guardrail: the two commands are `make run` (set-up + replay of a bundled scenario) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SCENARIO ?= events/scenarios/bad-image-dev

.PHONY: run test setup lint bench clean acceptance explore

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,plot]"
	touch $@

setup: $(VENV)/.installed

## the main job on its embedded default: replay a bundled incident in process (fast engine: in-memory AWS, no moto)
run: setup
	$(VENV)/bin/ecs-guardrail replay $(SCENARIO)

## every test (unit, functional on moto, Slack on 127.0.0.1, end to end, infra parity)
test: setup
	$(PY) -m pytest -n 2 --dist loadfile -q --durations=10

## the interleaving and fault explorer's long run (10,000 seeded schedules of three invocations; make test runs 150)
explore: setup
	EXPLORE_SCHEDULES=10000 $(PY) -m pytest -q tests/explore -p no:cacheprovider

## the shared acceptance scenarios through replay --json and the checker
acceptance: setup
	@for d in events/scenarios/*/; do \
	  $(VENV)/bin/ecs-guardrail replay $$d --json > /tmp/ecs-guardrail-$$(basename $$d).jsonl && \
	  if [ -f $$d/expected.json ] && [ -f ../shared/tools/check_replay.py ]; then \
	    python3 ../shared/tools/check_replay.py $$d /tmp/ecs-guardrail-$$(basename $$d).jsonl; fi; \
	done

lint: setup
	$(VENV)/bin/ruff check src tests

clean:
	rm -rf $(VENV) .venv-iac dist build .pytest_cache .hypothesis

include mk/deploy.mk
include mk/bench.mk
