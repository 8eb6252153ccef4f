"""Wire duckrank into a DuckDB connection.

Three kinds of things are registered:

* Stored macros (``duckrank.render.macros.sql_statements`` and the hivemall schema), created in
  the default schema once per database (a version macro tells), in one transaction. They are
  the pure-SQL form in a file and in memory alike, so that they keep working in a DuckDB without
  duckrank or Python, also after ``EXPORT DATABASE`` / ``IMPORT DATABASE`` and ``COPY FROM
  DATABASE`` (``_store_macros`` says what that takes).
* TEMP macros of the registering connection: when the native matching step
  (``duckrank.matching.native``) is loaded, the native forms of the stored macros whose native
  form differs, which shadow them (the helpers through which the metric macros reach the
  matching step, ``duckrank.matching.sql.native_step_macros``); and
  the macros that call Python (``python_udfs.session_statements``), because a stored macro
  calling Python would fail in a DuckDB without duckrank; with the native step loaded, those
  call its preference functions for the ids it handles. TEMP macros are private to one
  connection: call ``duckrank.register(cursor)`` on each cursor that should use those.
* Python functions (``duckrank.engines.python_udfs.UDFS``), registered on the database
  instance, which every cursor shares; they are never stored in the file.

All three come from the prepared catalog (``duckrank.engines.catalog``): rendered from the
records once per build and kept in the user's cache folder, so that a registration imports no
records. A database holding no duckrank macros gets the stored ones copied from the catalog's
database file (parsed already: about a third of the time of creating them from their text);
the UDFs are registered with stand-ins that import their module on the first call.

What connections share (the stored macros, the UDFs, the loaded extension) is changed under one
process-wide lock, so that registration from any number of threads succeeds: DuckDB's catalog
is optimistic, and of two transactions creating the same macro at once one fails. Processes
cannot race: DuckDB lets one process at a time open a file for writing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from duckrank._version import __version__
from duckrank.engines import catalog as _prepared
from duckrank.engines.udf import PythonUDF, deferred
from duckrank.hivemall import macros as _hivemall
from duckrank.matching import native as _native
from duckrank.render.quoting import quote_identifier, quote_literal

_CREATE = "CREATE OR REPLACE MACRO "
# One lock for every database of the process rather than one per database: the setting
# _store_macros turns on is global to a database instance, which can hold several attached
# files. On an already registered database it is held only for the checks that find it so.
_SHARED_STATE = threading.Lock()
# The name the prepared database is attached under while its macros are copied (under
# _SHARED_STATE, so one at a time).
_PREPARED_ALIAS = "duckrank_prepared_catalog"


def _rendered_macro_statements() -> tuple[list[str], str]:
    """``_macro_statements`` rendered from the records."""
    from duckrank.render.macros import sql_statements

    statements = [*sql_statements(), *_hivemall.sql_statements()]
    digest = hashlib.sha256("\n".join(statements).encode()).hexdigest()[:12]
    return statements, f"{__version__}+{digest}"


# Where the prepared catalog's statements of the interruptible tests hold the registering
# connection's id (``stats.macro_statement``): odd, so no CPython id() (an aligned address).
_CONNECTION_MARK = 18446744073709551557


@dataclass(frozen=True)
class _Catalog:
    """What ``register`` creates: the stored macros (``stored``, fingerprinted by ``build``),
    the TEMP native forms of those that differ (``native``), the TEMP macros calling Python by
    whether the native step is loaded (``python``), the tests' TEMP macros (``stats``, with
    ``_CONNECTION_MARK``), the Python UDFs, and the prepared database holding ``stored`` and
    the version macro (None: create them from their text)."""

    build: str
    stored: list[str]
    native: list[str]
    python: dict[str, list[str]]
    stats: list[str]
    udfs: list[PythonUDF]
    database: Path | None

    def stats_statements(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        mark = f"{_CONNECTION_MARK}::UBIGINT"
        return [s.replace(mark, f"{id(con)}::UBIGINT") for s in self.stats]


def _render_catalog() -> dict[str, Any]:
    """The catalog from the records (what ``duckrank.engines.catalog`` keeps as JSON)."""
    from duckrank.engines import python_udfs, stats

    statements, build = _rendered_macro_statements()
    stored = set(statements)
    return {
        "build": build,
        "stored": statements,
        "native": _as_temp([s for s in _connection_statements(True) if s not in stored]),
        "python": {"sql": python_udfs.session_statements(False),
                   "native": python_udfs.session_statements(True)},
        "stats": [stats.macro_statement(test, _CONNECTION_MARK) for test in stats.TESTS],
        "udfs": [[udf.name, list(udf.parameters), udf.return_type]
                 for udf in (*python_udfs.UDFS, *stats.UDFS)],
    }


def _write_database(path: str, catalog: dict[str, Any]) -> None:
    """The prepared database: the stored macros and the version macro, as ``register`` stores
    them."""
    con = duckdb.connect(path)
    try:
        _store_macros(con, [*catalog["stored"], _version_statement(catalog["build"])])
    finally:
        con.close()


# Loading the catalog is done once per process, by one thread.
_CATALOG_LOCK = threading.Lock()


@functools.cache
def _load_catalog() -> _Catalog:
    prepared = _prepared.prepared(_render_catalog, _write_database)
    content, database = prepared if prepared is not None else (_render_catalog(), None)
    udfs = [deferred(name, tuple(parameters), returns)
            for name, parameters, returns in content["udfs"]]
    return _Catalog(content["build"], content["stored"], content["native"], content["python"],
                    content["stats"], udfs, database)


def _catalog() -> _Catalog:
    with _CATALOG_LOCK:
        return _load_catalog()


def _macro_statements() -> tuple[list[str], str]:
    """The statements of the stored macros, every helper before the macros that call it, and a
    fingerprint of them: a database holding macros of another duckrank build (even at the same
    version number) gets them replaced."""
    catalog = _catalog()
    return list(catalog.stored), catalog.build


def _version_statement(build: str) -> str:
    return f"{_CREATE}duckrank_version() AS '{build}'"


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


def _read_only(con: duckdb.DuckDBPyConnection) -> bool:
    return con.execute(
        "SELECT readonly FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()[0][0]


def _as_temp(statements: list[str]) -> list[str]:
    return [
        s.replace(_CREATE, "CREATE OR REPLACE TEMP MACRO ", 1)
        for s in statements
        if s.startswith(_CREATE)
    ]


def _drop_statements(con: duckdb.DuckDBPyConnection, statements: list[str]) -> list[str]:
    """DROP statements for the macros of ``statements`` that the database already holds, each
    caller before the helpers it calls (the reverse of creation order): DuckDB refuses to
    replace a macro that another one depends on (``_store_macros``)."""
    schema = con.execute("SELECT current_schema()").fetchall()[0][0]
    stored = {
        (schema_name, name): kind
        for schema_name, name, kind in con.execute(
            "SELECT schema_name, function_name, function_type FROM duckdb_functions() "
            "WHERE database_name = current_database() AND NOT internal "
            "AND function_type IN ('macro', 'table_macro')"
        ).fetchall()
    }
    drops = []
    for statement in reversed(statements):
        text = statement.strip()
        if text.startswith(_CREATE):
            name = text.removeprefix(_CREATE).split("(", 1)[0]
            key = tuple(name.split(".", 1)) if "." in name else (schema, name)
            if key in stored:
                kind = "MACRO TABLE" if stored.pop(key) == "table_macro" else "MACRO"
                drops.append(f"DROP {kind} {'.'.join(quote_identifier(part) for part in key)}")
    return drops


def _store_macros(con: duckdb.DuckDBPyConnection, statements: list[str]) -> None:
    """Replace the stored macros in one transaction, with ``enable_macro_dependencies`` on.

    ``EXPORT DATABASE`` writes macros in the order of their catalog ids, then moves each after
    the entries it depends on. The ids follow creation order only until the file is reopened:
    DuckDB then loads each schema's macros by name, so ``auc`` came before the
    ``duckrank_cutoff`` it calls and ``IMPORT DATABASE`` failed. Recorded dependencies are
    stored in the file; they order its loading, its export and ``COPY FROM DATABASE``, and are
    copied with it. The setting is global to the database instance, so it is turned back off
    at once (``_SHARED_STATE`` keeps other registrations out meanwhile)."""
    with _macro_dependencies(con):
        _run_in_transaction(con, [*_drop_statements(con, statements), *statements])


@contextlib.contextmanager
def _macro_dependencies(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """``enable_macro_dependencies`` on meanwhile (``_store_macros`` says why)."""
    enabled = con.execute("SELECT current_setting('enable_macro_dependencies')").fetchall()
    con.execute("SET enable_macro_dependencies = true")
    try:
        yield
    finally:
        if enabled != [(True,)]:
            con.execute("SET enable_macro_dependencies = false")


def _copy_prepared(con: duckdb.DuckDBPyConnection, database: Path) -> None:
    """Copy the prepared database's macros (and their recorded dependencies) into ``con``'s
    database, in one transaction: DuckDB reads them parsed, instead of parsing their text."""
    target = quote_identifier(con.execute("SELECT current_database()").fetchall()[0][0])
    con.execute(f"ATTACH {quote_literal(str(database))} AS {_PREPARED_ALIAS} (READ_ONLY)")
    try:
        with _macro_dependencies(con):
            _run_in_transaction(con, [f"COPY FROM DATABASE {_PREPARED_ALIAS} TO {target}"])
    finally:
        con.execute(f"DETACH {_PREPARED_ALIAS}")


def _store(con: duckdb.DuckDBPyConnection, catalog: _Catalog, statements: list[str],
           version: str, installed: str | None) -> None:
    """Store the macros: copied from the prepared database into a database holding none of
    duckrank's (in its main schema, the default), else created from their text, replacing
    those of another build."""
    if (catalog.database is not None and installed is None and statements == catalog.stored
            and version == _version_statement(catalog.build)
            and con.execute("SELECT current_schema()").fetchall() == [("main",)]):
        # A name taken (a macro of an older duckrank, a user's own) makes COPY fail: created
        # from their text then, as any other database's.
        with contextlib.suppress(duckdb.Error):
            _copy_prepared(con, catalog.database)
            return
    _store_macros(con, [*statements, version])


def _register_udfs(con: duckdb.DuckDBPyConnection, udfs: Iterable[PythonUDF]) -> None:
    """Register each UDF that ``con`` does not have yet. The names it has are listed only when a
    registration fails (a second ``register``): listing them costs 15-20 ms, a third of a new
    connection's registrations."""
    existing: set[str] | None = None
    for udf in udfs:
        if existing is not None and udf.name in existing:
            continue
        try:
            udf.register(con)
        except duckdb.Error:
            if existing is None:
                existing = {row[0] for row in con.execute(
                    "SELECT function_name FROM duckdb_functions() WHERE function_type = 'scalar'"
                ).fetchall()}
            if udf.name not in existing:
                raise


def _connection_statements(native: bool) -> list[str]:
    """The macros a connection gets as TEMP macros (``sql_statements``)."""
    from duckrank.render.macros import sql_statements

    return sql_statements(native=native)


def _macro_name(statement: str) -> str | None:
    """The macro a CREATE MACRO statement (stored or TEMP) defines; None for other statements."""
    match = re.match(r"CREATE OR REPLACE (?:TEMP )?MACRO ([A-Za-z_][A-Za-z0-9_]*)", statement)
    return match.group(1) if match else None


def _with_dependencies(statements: list[str], functions: Iterable[str]) -> list[str]:
    """The CREATE MACRO statements of ``functions`` and of every macro they call, directly or
    not, in the order of ``statements`` (helpers first). A macro calls another when its text
    names it: a name in a string (an error message) counts too, which only adds a macro."""
    by_name: dict[str, list[str]] = {}
    for statement in statements:
        name = _macro_name(statement)
        if name is not None:
            by_name.setdefault(name, []).append(statement)
    # One name given as a string is that name, not its letters.
    wanted = list(dict.fromkeys([functions] if isinstance(functions, str) else functions))
    unknown = [f for f in wanted if f not in by_name]
    if unknown:
        raise ValueError(f"register: functions names {', '.join(map(repr, unknown))}, which "
                         "duckrank does not define")
    needed, pending = set(wanted), list(wanted)
    while pending:
        for statement in by_name[pending.pop()]:
            for word in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", statement)):
                if word in by_name and word not in needed:
                    needed.add(word)
                    pending.append(word)
    return [s for s in statements if _macro_name(s) in needed]


def _register_functions(
    con: duckdb.DuckDBPyConnection, native: bool, functions: Iterable[str], new_database: bool
) -> duckdb.DuckDBPyConnection:
    """``register(con, functions=...)``: TEMP macros of just those functions and their helpers.
    Nothing is stored in the database (no version macro either), so that a later full
    ``register`` still stores every macro. The statements come from the prepared catalog (the
    stored forms, each replaced by its native form where that differs), so that a command
    using a few functions imports no record and renders nothing. A database holding this
    build's stored macros gets only the TEMP macros that differ from them (the native helpers,
    the macros calling Python): a TEMP copy of a stored function would also come before every
    schema on the search path, and hide the hivemall schema's function of its name."""
    catalog = _catalog()
    with _SHARED_STATE:
        use_native = native and _native.load(con)
    hivemall = f"{_CREATE}{_hivemall.SCHEMA}."
    statements = _as_temp([s for s in catalog.stored if not s.startswith(hivemall)])
    if use_native:
        native_forms = {_macro_name(s): s for s in catalog.native}
        statements = [native_forms.get(_macro_name(s), s) for s in statements]
    python = [*catalog.python["native" if use_native else "sql"],
              *catalog.stats_statements(con)]
    chosen = _with_dependencies([*statements, *python], functions)
    if not new_database and _installed_version(con) == catalog.build:
        stored = set(_as_temp(catalog.stored))
        chosen = [s for s in chosen if s not in stored]
    if any(s in python for s in chosen):
        with _SHARED_STATE:
            _register_udfs(con, catalog.udfs)
    _run_in_transaction(con, chosen)
    return con


def register(
    con: duckdb.DuckDBPyConnection,
    *,
    native: bool = True,
    hivemall: bool = False,
    functions: Iterable[str] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Register every duckrank function on ``con`` and return it.

    With ``native`` (the default) the native matching step is loaded when the build has it and
    the database allows unsigned extensions (``duckrank.matching.native``); the numbers are the same
    either way. Idempotent and thread-safe: safe to call twice, on cursors, from many threads at
    once, on several connections, and again after a registration that failed half-way.

    ``hivemall=True`` puts the hivemall schema first on ``con``'s search path, so that
    unqualified names resolve to Hivemall's aggregates. The native step's TEMP helper macros
    hide none of them: their names are duckrank's own.

    ``functions`` (names of duckrank SQL functions) registers only those and the macros they
    call, as TEMP macros of ``con``, and stores nothing in the database: a command that needs 20
    of duckrank's functions registers in a tenth of the time. A name duckrank does not define is
    a ``ValueError``; so is ``hivemall=True`` with ``functions``.
    """
    return _register(con, native=native, hivemall=hivemall, functions=functions,
                     new_database=False)


def _register(
    con: duckdb.DuckDBPyConnection, *, native: bool, hivemall: bool,
    functions: Iterable[str] | None, new_database: bool,
) -> duckdb.DuckDBPyConnection:
    """``register``; ``new_database``: ``con``'s database was created just now, in memory, so it
    is writable and holds no duckrank macros (asking costs 5 ms: DuckDB's error for the missing
    version macro lists the names it resembles)."""
    if functions is not None:
        if hivemall:
            raise ValueError("register: hivemall=True needs every function stored in the "
                             "database; leave functions out")
        return _register_functions(con, native, functions, new_database)
    read_only = not new_database and _read_only(con)
    catalog = _catalog()
    statements, build = _macro_statements()
    version = _version_statement(build)
    with _SHARED_STATE:
        use_native = native and _native.load(con)
        installed = None if new_database else _installed_version(con)
        if not read_only and installed != build:
            _store(con, catalog, statements, version, installed)
        _register_udfs(con, catalog.udfs)
    if read_only and installed != build:
        # Nothing can be stored, and the database holds another build's macros or none: main's
        # macros become TEMP macros of this connection, and the hivemall schema (which a TEMP
        # catalog cannot hold) is unavailable.
        _run_in_transaction(con, _as_temp([*_connection_statements(use_native), version]))
    elif use_native:
        # TEMP copies of just the helper macros whose native form differs shadow the stored SQL
        # ones.
        stored = set(statements)
        _run_in_transaction(con, catalog.native if statements == catalog.stored else _as_temp(
            [s for s in _connection_statements(True) if s not in stored]))
    # Importing this makes con.interrupt() the counting one the tests' kernels check, before
    # this returns, so that a con.interrupt taken now (a Timer's) stops a resampling run too.
    importlib.import_module("duckrank.engines.interrupts")
    python = catalog.python["native" if use_native else "sql"]
    for statement in (*python, *catalog.stats_statements(con)):
        con.execute(statement)
    if hivemall:
        con.execute(f"SET search_path = '{_hivemall.SCHEMA},main'")
    return con


def connect(
    database: str = ":memory:",
    *,
    hivemall: bool = False,
    native: bool = True,
    functions: Iterable[str] | None = None,
    **duckdb_kwargs: Any,
) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect(database, **duckdb_kwargs)`` with every duckrank function registered.

    ``native=True`` opens the database with ``allow_unsigned_extensions`` (unless ``config``
    says otherwise) so that duckrank's native matching step can load; ``native=False`` keeps
    DuckDB's default and the SQL matching step. ``hivemall=True`` and ``functions`` (a subset
    to register): see ``register``.
    """
    if native and _native.library_path() is not None:
        config = {"allow_unsigned_extensions": "true", **duckdb_kwargs.pop("config", {})}
        duckdb_kwargs["config"] = config
    # ":memory:" opens a new database each time (a named one, ":memory:name", may be shared).
    return _register(duckdb.connect(database, **duckdb_kwargs), native=native, hivemall=hivemall,
                     functions=functions, new_database=database == ":memory:")
