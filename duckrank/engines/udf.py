"""How duckrank's Python functions are registered on a DuckDB database: ``PythonUDF`` (the
metrics' ``python_udfs.UDFS``, the tests' ``stats.UDFS``), and ``deferred``, the same
registration without the function's module imported yet.

This module imports only duckdb: ``duckrank.connect()`` registers deferred UDFs from the prepared
catalog (``duckrank.engines.catalog``), and numpy, pyarrow and the records are imported when a
query first calls one of them, not at start-up (issue 32).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass

import duckdb

# The modules whose ``UDFS`` list every Python function duckrank registers.
UDF_MODULES = ("duckrank.engines.python_udfs", "duckrank.engines.stats")


@dataclass(frozen=True)
class PythonUDF:
    name: str
    function: Callable
    parameters: tuple[str, ...]
    return_type: str

    def register(self, con: duckdb.DuckDBPyConnection) -> None:
        # The connection parses the types: ``duckdb.sqltype`` would first open DuckDB's default
        # in-memory database (about 20 ms of a start-up; issue 32).
        con.create_function(
            self.name,
            self.function,
            [con.sqltype(p) for p in self.parameters],
            con.sqltype(self.return_type),
            type="arrow",
            null_handling="special",
        )


@functools.cache
def _functions() -> dict[str, Callable]:
    """Every UDF's function by name, from ``UDF_MODULES`` (imported here, once)."""
    return {udf.name: udf.function
            for module in UDF_MODULES for udf in importlib.import_module(module).UDFS}


def deferred(name: str, parameters: tuple[str, ...], return_type: str) -> PythonUDF:
    """The UDF ``name`` of ``UDF_MODULES``, whose function (and module) is looked up on its
    first call. A name no module defines fails there, naming it (the prepared catalog it came
    from is a build's own, so this does not happen)."""

    def function(*columns: object) -> object:
        try:
            real = _functions()[name]
        except KeyError:
            raise LookupError(f"{name}: duckrank defines no Python function of this name "
                              "(an out-of-date prepared catalog: delete duckrank's catalog "
                              "folder in the cache folder)") from None
        return real(*columns)

    # DuckDB counts the function's parameters: give the variadic stand-in an exact signature.
    function.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_ONLY)
        for i in range(len(parameters))
    ])
    function.__name__ = name
    return PythonUDF(name, function, parameters, return_type)
