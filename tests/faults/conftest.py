"""Makes ``bench/ecsgen.py`` (synthetic fleets and ECS event streams) importable from these tests."""

import sys
from pathlib import Path

_BENCH = str(Path(__file__).resolve().parents[2] / "bench")
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
