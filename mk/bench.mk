# make bench's flags by default (make bench BENCH_ARGS= leaves make test's CPU out)
BENCH_ARGS ?= --test-suite

## benchmark: issues 23 and 33's figures against their targets (cold start, replay / reference model and
## throughput against the floor, the 100,000-event fleet-day, the availability sampler's monthly cost from the
## requests its handler sends, the validation library's candidates, make test's CPU: about 10 minutes; BENCH_ARGS= leaves the test suite out);
## then the routing's compiled check against its interpreter (bench/routing_bench.py) and the storm of issue 32
## (bench/storm.py: a few minutes); then the fleet-day's wall time at replay --jobs 1 and 2 (bench/jobs.py,
## issue 32.6); prints only (see bench/run.py for flags)
.PHONY: bench bench-docs
bench: setup
	$(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/routing_bench.py
	$(PY) bench/storm.py
	$(PY) bench/jobs.py

## the same, and rewrite the tracked docs/benchmarks.md with the figures
bench-docs: setup
	$(PY) bench/run.py --write $(BENCH_ARGS)
	$(PY) bench/storm.py --write
	$(PY) bench/jobs.py --write
