"""TREC run and qrels files read from Python, as DuckDB relations (through the table macros of
``duckrank.render.trec``, which say how the files are read)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from duckrank.engines.duckdb import connect


def _read(macro: str, path: str | Path, connection: duckdb.DuckDBPyConnection | None):
    if connection is None:
        connection = connect()
    # The path is a query parameter, never SQL text.
    return connection.sql(f"SELECT * FROM {macro}($path)", params={"path": str(path)})


def read_run(
    path: str | Path, connection: duckdb.DuckDBPyConnection | None = None
) -> duckdb.DuckDBPyRelation:
    """A TREC run file as a relation ``query, q0, item, rank, score, tag`` on ``connection``
    (a new ``duckrank.connect()`` when omitted). ``.df()``, ``.pl()`` or ``.arrow()`` fetch it."""
    return _read("read_trec_run", path, connection)


def read_qrels(
    path: str | Path, connection: duckdb.DuckDBPyConnection | None = None
) -> duckdb.DuckDBPyRelation:
    """A TREC qrels file as a relation ``query, iteration, item, grade`` (see ``read_run``)."""
    return _read("read_trec_qrels", path, connection)
