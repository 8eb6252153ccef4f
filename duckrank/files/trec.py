"""TREC run and qrels files read from Python, as DuckDB relations (through the table macros of
``duckrank.render.trec``, which say how the files are read), and the files a path names.

A path is read as trec_eval reads it: any file that can be opened, also a pipe (``duckrank
trec_eval qrels <(zcat run.gz)``, ``/dev/stdin``, a FIFO), whose content is copied once to a
private temporary file (DuckDB's readers open a path by name, and a pipe can be read only once);
and a file that is not UTF-8 (trec_eval compares ids as bytes) is read as Latin-1."""

from __future__ import annotations

import atexit
import codecs
import gzip
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import duckdb

from duckrank.engines.duckdb import connect

# What read_trec_run / read_trec_qrels take as ``encoding``: UTF-8, or Latin-1 (every byte one
# character) for a file that is not UTF-8.
UTF8, LATIN1 = "utf-8", "latin-1"
_BLOCK = 1 << 24
# encoding's blocks: 1 MiB ones stay in the CPU's caches (16 MiB ones took 4 times longer).
_CHECK_BLOCK = 1 << 20
_copies: list[str] = []


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
    if Path(name).is_dir():
        raise MissingFileError(f"the {kind} file {str(path)!r} is a folder, not a file")
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        raise MissingFileError(f"the {kind} file {str(path)!r} does not exist") from None
    return [name if stat.S_ISREG(mode) else _copied(name)]


def _copied(name: str) -> str:
    """The content of the file ``name`` that is not a regular file (a pipe, ``/dev/stdin``, a
    FIFO) in a private temporary file, removed when Python exits: DuckDB's readers reopen a
    path (and the evaluation scans a file more than once), while a pipe gives its content once.
    The copy keeps the last part of the name, which errors then show."""
    if not _copies:
        atexit.register(lambda: [shutil.rmtree(folder, ignore_errors=True) for folder in _copies])
    folder = tempfile.mkdtemp(prefix="duckrank-input-")  # readable by its owner only
    _copies.append(folder)
    copy = os.path.join(folder, os.path.basename(name) or "input")
    with open(name, "rb") as source, open(copy, "wb") as target:
        shutil.copyfileobj(source, target, _BLOCK)
    return copy


def encoding(path: str) -> str:
    """``UTF8`` when the file ``path`` is UTF-8 (every ASCII file is), else ``LATIN1``: trec_eval
    reads bytes, so a Latin-1 docid is an id like any other, while DuckDB's reader refuses it
    (a dump of its CSV settings). Checked in Python, block by block; a block of ASCII bytes
    (most TREC files are ASCII) by ``bytes.isascii``, without decoding it, unless it ends a
    character that the block before began: a 29 MB run in 5 ms instead of 33 ms. A ``.gz``
    file is checked decompressed; other compressed files are taken as UTF-8."""
    opener = gzip.open if path.lower().endswith(".gz") else open
    decoder = codecs.getincrementaldecoder(UTF8)()
    try:
        with opener(path, "rb") as file:
            while block := file.read(_CHECK_BLOCK):
                if not block.isascii() or decoder.getstate()[0]:
                    decoder.decode(block)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return LATIN1
    return UTF8


# A line of C's isspace characters only (or none): trec_eval 10 stops at one in a qrels file.
# The first line apart: a pattern that starts with its newline is searched 10 times faster
# than one that also tries the start of the file at every byte (0.04 s against 0.4 s for
# 2,000,000 qrels lines).
_BLANK_FIRST_LINE = re.compile(rb"[ \t\v\f\r]*(?:\n|\Z)")
_BLANK_LINE = re.compile(rb"\n[ \t\v\f\r]*(?:\n|\Z)")


def first_blank_line(path: str) -> int | None:
    """The number of the first blank line (nothing, or blanks only) of the file ``path``, None
    when it has none; the newline that ends the last line opens no line. trec_eval 10 refuses
    such a line in qrels ("Malformed line"), while the table macros skip it as trec_eval 9
    did. The file is read whole (qrels are small: 0.02 s per million lines); a ``.gz`` file
    decompressed."""
    opener = gzip.open if path.lower().endswith(".gz") else open
    with opener(path, "rb") as file:
        data = file.read()
    if not data:
        return None
    lines = data[:-1] if data.endswith(b"\n") else data
    if _BLANK_FIRST_LINE.match(lines):
        return 1
    found = _BLANK_LINE.search(lines)
    if found is None:
        return None
    return data.count(b"\n", 0, found.start() + 1) + 1


def _first_fields(path: str) -> int | None:
    """The number of fields of the first line of the file ``path`` that is not blank or a
    comment (split as trec_eval splits, on C's isspace); None when it has none in its first
    MiB, or is not a regular file (a pipe can be read only once: ``file_paths`` copies it)."""
    if not os.path.isfile(path):
        return None
    opener = gzip.open if path.lower().endswith(".gz") else open
    seen = 0
    with opener(path, "rb") as file:
        for line in file:
            seen += len(line)
            fields = line.split()
            if fields and not fields[0].startswith(b"#"):
                return len(fields)
            if seen > 1 << 20:
                break
    return None


def check_order(run: str | Path, qrels: str | Path, usage: str) -> None:
    """Raise when the two files look swapped: the one given as the run has qrels lines (4
    fields) and the one given as qrels run lines (6 or more), each by its first line. Said
    before either is read: otherwise the reader stops at that line with a message on its field
    count that does not say the files are swapped. ``usage``: the command's order of its
    arguments (``duckrank trec_eval QRELS RUN``, trec_eval's; ``duckrank evaluate RUN QRELS``)."""
    run_name, qrels_name = (os.path.expanduser(str(p)) for p in (run, qrels))
    fields = (_first_fields(qrels_name) or 0) if _first_fields(run_name) == 4 else 0
    if fields >= 6:
        raise ValueError(
            f"the run and qrels files look swapped: {str(run)!r}, given as RUN, has lines of 4 "
            f"fields, as qrels have (qid iteration docid grade), and {str(qrels)!r}, given as "
            f"QRELS, lines of {fields}, as a run has (qid Q0 docid rank score tag); the order is "
            f"{usage}"
        )


def read_files(
    con: duckdb.DuckDBPyConnection, files: list[str], kind: str
) -> duckdb.DuckDBPyRelation:
    """TREC files (exact names, see ``file_paths``) as one relation: a run (``kind='run'``) or
    qrels. One macro call per file, so that the line numbers of errors count from its start;
    each file in its ``encoding``."""
    macro = "read_trec_run" if kind == "run" else "read_trec_qrels"
    # The paths and encodings are query parameters, never SQL text.
    sql = " UNION ALL ".join(f"SELECT * FROM {macro}($p{i}, file_encoding := $e{i})"
                             for i in range(len(files)))
    params = {f"p{i}": name for i, name in enumerate(files)}
    params.update({f"e{i}": encoding(name) for i, name in enumerate(files)})
    return con.sql(sql, params=params)


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
