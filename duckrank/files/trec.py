"""TREC run and qrels files read from Python, as DuckDB relations (through the table macros of
``duckrank.render.trec``, which say how the files are read), and the files a path names."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from duckrank.engines.duckdb import connect


class MissingFileError(FileNotFoundError, ValueError):
    """A path that names no file. A ``FileNotFoundError``, and a ``ValueError`` as every other bad
    argument of ``duckrank.evaluate`` and the ``duckrank`` command is."""


def file_paths(
    con: duckdb.DuckDBPyConnection, path: str | Path, kind: str, *, glob: bool = False
) -> list[str]:
    """The files ``path`` names, for the ``kind`` ('run' or 'qrels') file of an error message: the
    one file of that exact name (``*``, ``?`` and ``[`` are part of the name), or with ``glob``
    every file the pattern matches (DuckDB's glob: ``*``, ``?``, ``[...]``, ``**``), sorted. A
    leading ``~`` is the home folder, as in DuckDB's readers."""
    name = os.path.expanduser(str(path))
    if glob:
        files = [f for (f,) in con.execute("SELECT file FROM glob($p) ORDER BY file",
                                           {"p": name}).fetchall()]
        if not files:
            raise MissingFileError(f"the {kind} pattern {str(path)!r} matches no file")
        return files
    if not Path(name).is_file():
        problem = "is a folder, not a file" if Path(name).is_dir() else "does not exist"
        raise MissingFileError(f"the {kind} file {str(path)!r} {problem}")
    return [name]


def read_files(
    con: duckdb.DuckDBPyConnection, files: list[str], kind: str
) -> duckdb.DuckDBPyRelation:
    """TREC files (exact names, see ``file_paths``) as one relation: a run (``kind='run'``) or
    qrels. One macro call per file, so that the line numbers of errors count from its start."""
    macro = "read_trec_run" if kind == "run" else "read_trec_qrels"
    # The paths are query parameters, never SQL text.
    sql = " UNION ALL ".join(f"SELECT * FROM {macro}($p{i})" for i in range(len(files)))
    return con.sql(sql, params={f"p{i}": name for i, name in enumerate(files)})


def _read(
    kind: str, path: str | Path, connection: duckdb.DuckDBPyConnection | None, glob: bool
) -> duckdb.DuckDBPyRelation:
    if connection is None:
        connection = connect()
    return read_files(connection, file_paths(connection, path, kind, glob=glob), kind)


def read_run(
    path: str | Path, connection: duckdb.DuckDBPyConnection | None = None, *, glob: bool = False
) -> duckdb.DuckDBPyRelation:
    """A TREC run file as a relation ``query, q0, item, rank, score, tag`` on ``connection``
    (a new ``duckrank.connect()`` when omitted). ``.df()``, ``.pl()`` or ``.arrow()`` fetch it.
    ``path`` names one file; ``glob=True`` reads every file matching the pattern instead."""
    return _read("run", path, connection, glob)


def read_qrels(
    path: str | Path, connection: duckdb.DuckDBPyConnection | None = None, *, glob: bool = False
) -> duckdb.DuckDBPyRelation:
    """A TREC qrels file as a relation ``query, iteration, item, grade`` (see ``read_run``)."""
    return _read("qrels", path, connection, glob)
