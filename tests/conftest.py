import os

# ranx (a test oracle) compiles its numba kernels on first use: about 40 s in a fresh
# environment, far more than they run on test-sized data. Interpreted, they give the same values.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

import duckdb
import pytest

import duckrank


@pytest.fixture()
def con() -> duckdb.DuckDBPyConnection:
    connection = duckrank.connect()
    yield connection
    connection.close()


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None):
    """The single value a query returns."""
    rows = con.execute(sql, params or []).fetchall()
    assert len(rows) == 1 and len(rows[0]) == 1, rows
    return rows[0][0]
