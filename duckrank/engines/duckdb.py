"""Wire duckrank into a DuckDB connection.

Two kinds of things are registered:

* Macros (``duckrank.render.macros.sql_statements``), created in the default schema once per
  database (a version macro tells), in one transaction. In a file-backed database they are pure
  SQL, stored in the file, and keep working there without duckrank or Python; when the native
  matching step (``duckrank.matching.native``) is loaded, TEMP macros of the registering
  connection that use it take their place for that connection. An in-memory database, which
  nothing else opens, gets the native macros in the default schema, for every cursor.
* Python functions (``duckrank.engines.python_udfs.UDFS``), registered on the database
  instance, which every cursor shares; they are never stored in the file. Any macro that calls
  one is created as a TEMP macro of the registering connection (``session_statements``),
  because a stored macro would fail in a DuckDB without duckrank. Call
  ``duckrank.register(cursor)`` on each cursor that needs those.
"""

from __future__ import annotations

import hashlib
from typing import Any

import duckdb

from duckrank._version import __version__
from duckrank.engines import python_udfs
from duckrank.hivemall import macros as _hivemall
from duckrank.matching import native as _native
from duckrank.render.macros import sql_statements


def _macro_statements(use_native: bool) -> tuple[list[str], str]:
    """The statements and a fingerprint of them: a database holding macros of another duckrank
    build (even at the same version number) gets them replaced."""
    statements = [*sql_statements(use_native), *_hivemall.sql_statements()]
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


def _current_database(con: duckdb.DuckDBPyConnection) -> tuple[str | None, bool]:
    """(file path or None for an in-memory database, read-only)."""
    return con.execute(
        "SELECT path, readonly FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()[0]


def _as_temp(statements: list[str]) -> list[str]:
    return [
        s.replace("CREATE OR REPLACE MACRO ", "CREATE OR REPLACE TEMP MACRO ", 1)
        for s in statements
        if s.startswith("CREATE OR REPLACE MACRO ")
    ]


def _register_macros(con: duckdb.DuckDBPyConnection, use_native: bool) -> None:
    path, read_only = _current_database(con)
    stored_native = use_native and path is None
    statements, build = _macro_statements(stored_native)
    version_macro = f"CREATE OR REPLACE MACRO duckrank_version() AS '{build}'"
    if read_only:
        # Nothing can be stored: main's macros become TEMP macros of this connection, and the
        # hivemall schema (which a TEMP catalog cannot hold) is unavailable.
        _run_in_transaction(con, _as_temp([*sql_statements(use_native), version_macro]))
        return
    if _installed_version(con) != build:
        try:
            _run_in_transaction(con, [*statements, version_macro])
        except duckdb.TransactionException:
            # Another connection registered the same macros at the same moment.
            if _installed_version(con) != build:
                raise
    if use_native and not stored_native:
        # TEMP copies of just the macros whose native form differs shadow the stored SQL ones.
        stored = set(sql_statements())
        native_forms = [s for s in sql_statements(native=True) if s not in stored]
        _run_in_transaction(con, _as_temp(native_forms))


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


def register(
    con: duckdb.DuckDBPyConnection, *, native: bool = True
) -> duckdb.DuckDBPyConnection:
    """Register every duckrank function on ``con`` and return it.

    With ``native`` (the default) the native matching step is loaded when the build has it and
    the database allows unsigned extensions (``duckrank.matching.native``); the numbers are the same
    either way. Idempotent: safe to call twice, on cursors, on several connections, and again
    after a registration that failed half-way.
    """
    _register_macros(con, native and _native.load(con))
    _register_python(con)
    return con


def connect(
    database: str = ":memory:",
    *,
    hivemall: bool = False,
    native: bool = True,
    **duckdb_kwargs: Any,
) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect(database, **duckdb_kwargs)`` with every duckrank function registered.

    ``native=True`` opens the database with ``allow_unsigned_extensions`` (unless ``config``
    says otherwise) so that duckrank's native matching step can load; ``native=False`` keeps
    DuckDB's default and the SQL matching step. ``hivemall=True`` puts the hivemall schema first
    on the search path, so that unqualified names resolve to Hivemall's aggregates
    (``SET search_path = 'hivemall,main'`` does the same).
    """
    if native and _native.library_path() is not None:
        config = {"allow_unsigned_extensions": "true", **duckdb_kwargs.pop("config", {})}
        duckdb_kwargs["config"] = config
    con = register(duckdb.connect(database, **duckdb_kwargs), native=native)
    if hivemall:
        con.execute(f"SET search_path = '{_hivemall.SCHEMA},main'")
    return con
