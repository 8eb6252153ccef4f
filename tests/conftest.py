import os

# ranx (a test oracle) compiles its numba kernels on first use: about 40 s in a fresh
# environment, far more than they run on test-sized data. Interpreted, they give the same values.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

import sys

import duckdb
import pytest

import duckrank


def pytest_configure(config: pytest.Config) -> None:
    # scripts/test's oldest-DuckDB run leaves these out: tests/matching/test_native.py's id types
    # beyond one per family, and tests/matching/test_native_loading.py's refusals of a cache.
    config.addinivalue_line("markers", "whole_suite_only: not in the oldest-DuckDB run")


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


def duckdb_with(macros, tables: dict) -> duckdb.DuckDBPyConnection:
    """A plain DuckDB (no duckrank registration) holding ``macros`` (CREATE statements) and the
    Arrow ``tables`` by name: what the Spark forms of the table macros are compared with."""
    connection = duckdb.connect()
    for statement in macros:
        connection.execute(statement)
    for name, table in tables.items():
        connection.register(f"{name}_arrow", table)
        connection.execute(f"CREATE TABLE {name} AS FROM {name}_arrow")
    return connection


@pytest.fixture(scope="session")
def spark_session():
    """One local Spark for every Spark test module: starting one takes about 10 s."""
    from pyspark.sql import SparkSession

    # Workers must run this interpreter (the venv with duckrank, numpy and pyarrow).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("duckrank-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()


# The matching tests' connections (tests/matching): one per test module, with and without the
# native step. Here, not in a tests/matching/conftest.py: a second conftest module would shadow
# this one for `from conftest import ...`.
@pytest.fixture(scope="module")
def fast():
    """duckrank registered with the native step when it is built (test_native.py's
    test_the_build_has_the_native_step says whether it is)."""
    con = duckrank.connect()
    yield con
    con.close()


@pytest.fixture(scope="module")
def sql_only():
    """duckrank registered with the SQL matching step only."""
    con = duckrank.connect(native=False)
    yield con
    con.close()
