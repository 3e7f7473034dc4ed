## benchmark: replay speed (seed scenario on both engines, a generated 100,000-event fleet-day on fast) and an
## event storm on the embedded AWS; then the availability sampler's monthly cost model before/after blocks
## (bench/sampler_cost.py); prints only (see bench/run.py for flags)
.PHONY: bench bench-docs
bench: setup
	$(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/sampler_cost.py

## the same, and rewrite the tracked docs/benchmarks.md with the figures
bench-docs: setup
	$(PY) bench/run.py --write $(BENCH_ARGS)
