"""``con.interrupt()`` for Python UDFs that run long (the statistical tests' resampling).

DuckDB checks ``con.interrupt()`` between its own steps, and a UDF call is one step: a run of
10,000 resampling trials would finish before the query stops, the connection busy meanwhile.
DuckDB tells a Python UDF nothing, so duckrank wraps ``DuckDBPyConnection.interrupt`` (once per
process; the wrapper counts the call, then calls DuckDB's), and a kernel given ``stop_on_interrupt``
checks between blocks of trials whether its connection was interrupted since the call began.

This module imports only duckdb: ``duckrank.register`` imports it before it returns (so that an
interrupt taken right after registration already counts) without importing numpy and the tests.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import duckdb

# id(connection) -> how many times its interrupt() was called (``_count_interrupts``).
_INTERRUPTS: dict[int, int] = {}


def _count_interrupts() -> None:
    """Wrap ``DuckDBPyConnection.interrupt`` so that it counts its calls per connection before
    doing what it did (idempotent: a second import, or a reload, does not wrap twice)."""
    original = duckdb.DuckDBPyConnection.interrupt
    if getattr(original, "_duckrank_counts", False):
        return

    @functools.wraps(original)
    def interrupt(self: duckdb.DuckDBPyConnection) -> None:
        _INTERRUPTS[id(self)] = _INTERRUPTS.get(id(self), 0) + 1
        return original(self)

    interrupt._duckrank_counts = True  # type: ignore[attr-defined]
    duckdb.DuckDBPyConnection.interrupt = interrupt  # type: ignore[method-assign]


_count_interrupts()


def stop_on_interrupt(function: str, connection: int) -> Callable[[], None]:
    """A kernel's ``stop``: raises once ``connection``'s interrupt() has been called since it
    was made (0: a connection that cannot be told, never)."""
    seen = _INTERRUPTS.get(connection, 0)

    def stop() -> None:
        if connection and _INTERRUPTS.get(connection, 0) != seen:
            raise InterruptedError(f"{function}: interrupted (con.interrupt())")

    return stop
