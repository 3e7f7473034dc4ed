"""Progress of a long run (``replay`` of many lines, ``--sweep``, ``--engine moto``) on stderr.

Shown only where stderr is a terminal and the command's output is not ``--json``: a pipe, a file, CI
or JSON Lines on stdout never get a byte of it. Built on rich's ``Progress`` (a dependency already),
transient: the bar is erased when the run ends, so the report reads as without it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

__all__ = ["progress_enabled", "progress"]

Advance = Callable[[int], None]


def progress_enabled(stream: TextIO | None = None, *, json_output: bool = False) -> bool:
    """True when a bar may be drawn on ``stream`` (default stderr): a terminal, and no ``--json``."""
    stream = sys.stderr if stream is None else stream
    if json_output:
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


@contextlib.contextmanager
def progress(description: str, total: int | None, *, enabled: bool,
             console: Any = None) -> Iterator[Advance]:
    """Yields ``advance(n)``; draws ``description`` with a bar of ``total`` steps when ``enabled``.

    ``console``: a rich ``Console`` (default: stderr's). Disabled, ``advance`` does nothing and nothing
    is imported or written.
    """
    if not enabled:
        yield lambda _n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=console or Console(stderr=True), transient=True)
    with bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
