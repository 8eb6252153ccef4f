"""Wire duckrank into a DuckDB connection.

Two kinds of things are registered:

* Pure-SQL macros (``duckrank.sql_macros.sql_statements``), created in the default schema. In a
  file-backed database they are stored in the file and keep working there without duckrank or
  Python. They are created once per database (a version macro tells), in one transaction.
* Python functions (``duckrank.python_udfs.UDFS``), registered on the database instance, which
  every cursor shares; they are never stored in the file. Any macro that calls one is created as
  a TEMP macro of the registering connection (``session_statements``), because a stored macro
  would fail in a DuckDB without duckrank. Call ``duckrank.register(cursor)`` on each cursor
  that needs those.
"""

from __future__ import annotations

import hashlib
from typing import Any

import duckdb

from duckrank import __version__, python_udfs
from duckrank import hivemall as _hivemall
from duckrank.sql_macros import sql_statements


def _macro_statements() -> tuple[list[str], str]:
    """The statements and a fingerprint of them: a database holding macros of another duckrank
    build (even at the same version number) gets them replaced."""
    statements = [*sql_statements(), *_hivemall.sql_statements()]
    digest = hashlib.sha256("\n".join(statements).encode()).hexdigest()[:12]
    return statements, f"{__version__}+{digest}"


def _installed_version(con: duckdb.DuckDBPyConnection) -> str | None:
    try:
        return con.execute("SELECT duckrank_version()").fetchall()[0][0]
    except duckdb.Error:
        return None


def _run_in_transaction(con: duckdb.DuckDBPyConnection, statements: list[str]) -> None:
    con.execute("BEGIN TRANSACTION")
    try:
        for statement in statements:
            con.execute(statement)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _is_read_only(con: duckdb.DuckDBPyConnection) -> bool:
    return con.execute(
        "SELECT readonly FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall() == [(True,)]


def _register_macros(con: duckdb.DuckDBPyConnection) -> None:
    statements, build = _macro_statements()
    if _installed_version(con) == build:
        return
    version_macro = f"CREATE OR REPLACE MACRO duckrank_version() AS '{build}'"
    if _is_read_only(con):
        # Nothing can be stored: main's macros become TEMP macros of this connection, and the
        # hivemall schema (which a TEMP catalog cannot hold) is unavailable.
        statements = [
            s.replace("CREATE OR REPLACE MACRO ", "CREATE OR REPLACE TEMP MACRO ", 1)
            for s in [*sql_statements(), version_macro]
        ]
        _run_in_transaction(con, statements)
        return
    try:
        _run_in_transaction(con, [*statements, version_macro])
    except duckdb.TransactionException:
        # Another connection registered the same macros at the same moment.
        if _installed_version(con) != build:
            raise


def _register_python(con: duckdb.DuckDBPyConnection) -> None:
    existing = {
        row[0]
        for row in con.execute(
            "SELECT function_name FROM duckdb_functions() WHERE function_type = 'scalar'"
        ).fetchall()
    }
    for udf in python_udfs.UDFS:
        if udf.name not in existing:
            udf.register(con)
    for statement in python_udfs.session_statements():
        con.execute(statement)


def register(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Register every duckrank function on ``con`` and return it.

    Idempotent: safe to call twice, on cursors, on several connections, and again after a
    registration that failed half-way.
    """
    _register_macros(con)
    _register_python(con)
    return con


def connect(
    database: str = ":memory:", *, hivemall: bool = False, **duckdb_kwargs: Any
) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect(database, **duckdb_kwargs)`` with every duckrank function registered.

    ``hivemall=True`` puts the hivemall schema first on the search path, so that unqualified
    names resolve to Hivemall's aggregates (``SET search_path = 'hivemall,main'`` does the same).
    """
    con = register(duckdb.connect(database, **duckdb_kwargs))
    if hivemall:
        con.execute(f"SET search_path = '{_hivemall.SCHEMA},main'")
    return con
