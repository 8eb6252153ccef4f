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


def spark_frames(spark_session, tables: dict) -> dict:
    """The Arrow ``tables`` as Spark DataFrames, by name (the Spark side of ``duckdb_with``)."""
    return {name: spark_session.createDataFrame(table.to_pylist())
            for name, table in tables.items()}


def ranked_rows(lists: dict, k: int):
    """User -> list as the peers' long frames take it (RecTools): one (user_id, item_id, rank)
    row per item of the top k, ranks its positions, NULL elements left out with their ranks."""
    import pandas as pd

    rows = [(u, i, r) for u, items in lists.items()
            for r, i in enumerate((items or [])[:k], start=1) if i is not None]
    return pd.DataFrame(rows, columns=["user_id", "item_id", "rank"])


def spark_beyond_values(frames: dict, cases: list, k: int) -> dict[int, dict]:
    """The Spark form of each beyond-accuracy case ``(metric, options, duckdb_sql)`` over the
    DataFrames ``frames`` (an option naming one of them is that frame), computed in one Spark
    job (a union of the cases' rows): case -> {user: value} (user None for a catalogue
    metric)."""
    from functools import reduce

    from pyspark.sql import functions as F

    from duckrank import spark as duckrank_spark

    parts = []
    for case, (metric, options, _) in enumerate(cases):
        spark_options = {name: frames[v] if isinstance(v, str) and v in frames else v
                         for name, v in options.items()}
        result = duckrank_spark.beyond_accuracy(frames["recs"], metric, k, **spark_options)
        user = F.col("user") if "user" in result.columns else F.lit(None).cast("bigint")
        parts.append(result.select(F.lit(case).alias("case"), user.alias("user"),
                                   F.col(metric).cast("double").alias("value")))
    values: dict[int, dict] = {case: {} for case in range(len(cases))}
    for row in reduce(lambda a, b: a.unionByName(b), parts).collect():
        values[row["case"]][row["user"]] = row["value"]
    return values


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
