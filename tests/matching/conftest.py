"""Connections the matching tests share: one per test module, with and without the native step."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

import duckrank


@pytest.fixture(scope="module")
def fast() -> Iterator[duckdb.DuckDBPyConnection]:
    """duckrank registered with the native step when it is built (test_native.py's
    test_the_build_has_the_native_step says whether it is)."""
    con = duckrank.connect()
    yield con
    con.close()


@pytest.fixture(scope="module")
def sql_only() -> Iterator[duckdb.DuckDBPyConnection]:
    """duckrank registered with the SQL matching step only."""
    con = duckrank.connect(native=False)
    yield con
    con.close()
