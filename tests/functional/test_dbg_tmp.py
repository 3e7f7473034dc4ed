import contextlib, io
from datetime import timedelta
import pytest
from tests.functional.test_watchdog_state import *

def test_dbg(aws):
    rt = aws.runtime(CRASH_THRESHOLD="1000")
    deliver(crash(0, T0), rt)
    fresh = aws.runtime(CRASH_THRESHOLD="1000")
    orig_get = fresh.history.port.get
    def g(*a):
        r = orig_get(*a); print("GET", a, r is not None); return r
    fresh.history.port.get = g
    aws.calls.clear()
    print(deliver(crash(6, T0 + timedelta(minutes=6)), fresh))
    print(dict(aws.calls))
    print(fresh.history.state._cache.keys())
