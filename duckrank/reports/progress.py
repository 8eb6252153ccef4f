"""Feedback on long work: a one-line progress bar on stderr, drawn only when stderr is a terminal
(never into a pipe, a file or a notebook's captured stream) and never when the user asked for
quiet (``--quiet``).

Two sources feed it:

* ``Progress``: counted steps (systems scored, epochs trained). Call it as
  ``progress(done, total, detail)``: that is the shape of a callback a long loop takes, so a
  training loop can be given ``callback=progress`` without importing this module.
* ``watch(con, label)``: DuckDB's own progress of the query running on ``con``
  (``DuckDBPyConnection.query_progress()``, polled from a thread while the query runs), for work
  that is one long query per step, such as evaluating a long run file. DuckDB's bar on stdout is
  switched off (``enable_progress_bar_print``), so the output stays clean and the bar is ours.

Nothing is drawn for work shorter than ``DELAY`` seconds, the line is redrawn at most every
``INTERVAL`` seconds, and it is erased when the work ends, so the output reads as without it.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

import duckdb

DELAY = 1.0  # seconds of work before a bar appears
INTERVAL = 0.2  # seconds between redraws (and between polls of DuckDB's progress)
WIDTH = 30  # characters of the bar itself


def shown(stream: TextIO | None = None, quiet: bool = False) -> bool:
    """Whether a bar would be drawn on ``stream`` (default stderr)."""
    stream = sys.stderr if stream is None else stream
    if quiet:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: no bar
        return False


class Progress:
    """A bar for ``label``; ``progress(done, total, detail)`` (or ``update(fraction,
    detail)``) redraws it, ``close()`` erases it. Silent unless ``shown(stream, quiet)``."""

    def __init__(self, label: str, *, stream: TextIO | None = None, quiet: bool = False,
                 delay: float | None = None) -> None:
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.enabled = shown(self.stream, quiet)
        self._start = time.monotonic()
        self._delay = DELAY if delay is None else delay
        self._drawn_at = 0.0
        self._width = 0  # of the line last drawn, to erase it
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int, detail: str = "") -> None:
        """``done`` of ``total`` steps finished (the callback form)."""
        if total <= 0:
            raise ValueError(f"Progress: total must be positive, got {total!r}")
        self.update(done / total, f"{done:,}/{total:,}" + (f" {detail}" if detail else ""))

    def update(self, fraction: float, detail: str = "") -> None:
        """Redraw at ``fraction`` (0 to 1) of the work, with ``detail`` after the bar."""
        if not self.enabled:
            return
        now = time.monotonic()
        final = fraction >= 1
        if now - self._start < self._delay or (now - self._drawn_at < INTERVAL and not final):
            return
        fraction = min(max(fraction, 0.0), 1.0)
        filled = round(fraction * WIDTH)
        line = (f"{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] "
                f"{fraction * 100:3.0f}%" + (f" {detail}" if detail else ""))
        with self._lock:
            self.stream.write("\r" + line.ljust(self._width))
            self.stream.flush()
            self._width, self._drawn_at = len(line), now

    def close(self) -> None:
        """Erase the line (nothing was drawn: nothing to erase)."""
        with self._lock:
            if self._width:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
                self._width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


@contextmanager
def watch(con: duckdb.DuckDBPyConnection, label: str, *, stream: TextIO | None = None,
          quiet: bool = False) -> Iterator[Progress]:
    """Draw DuckDB's progress of each query run on ``con`` inside the block (percent of the
    current query) as ``label``'s bar. DuckDB tracks progress only with ``enable_progress_bar``
    on: it is set for the block when a bar is shown (its own printing off) and put back after."""
    with Progress(label, stream=stream, quiet=quiet) as progress:
        if not progress.enabled:
            yield progress
            return
        before = con.execute("SELECT current_setting('enable_progress_bar'), "
                             "current_setting('enable_progress_bar_print')").fetchone()
        con.execute("SET enable_progress_bar = true")
        con.execute("SET enable_progress_bar_print = false")
        done = threading.Event()

        def poll() -> None:
            while not done.wait(INTERVAL):
                percent = con.query_progress()
                if percent >= 0:
                    progress.update(percent / 100, "of the current query")

        poller = threading.Thread(target=poll, name="duckrank-progress", daemon=True)
        poller.start()
        try:
            yield progress
        finally:
            done.set()
            poller.join()
            con.execute(f"SET enable_progress_bar = {bool(before[0])}")
            con.execute(f"SET enable_progress_bar_print = {bool(before[1])}")
