## benchmark: event storm on the embedded AWS, writes docs/benchmarks.md (see bench/run.py for flags)
bench: setup
	$(PY) bench/run.py
