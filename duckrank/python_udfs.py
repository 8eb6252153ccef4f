"""Metrics that run Python (numpy over whole Arrow batches), for what SQL cannot express well.

Each ``PythonUDF`` is registered as a DuckDB arrow UDF (``type="arrow"``: the function receives
a whole vector of rows as pyarrow arrays). Keep the math in pure numpy kernels elsewhere; a UDF
here only converts Arrow in and out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb


@dataclass(frozen=True)
class PythonUDF:
    name: str
    function: Callable
    parameters: tuple[str, ...]
    return_type: str

    def register(self, con: duckdb.DuckDBPyConnection) -> None:
        con.create_function(
            self.name,
            self.function,
            [duckdb.sqltype(p) for p in self.parameters],
            duckdb.sqltype(self.return_type),
            type="arrow",
            null_handling="special",
        )


UDFS: list[PythonUDF] = []


def session_statements() -> list[str]:
    """TEMP macros that call the UDFs above (never stored in a database file)."""
    return []
