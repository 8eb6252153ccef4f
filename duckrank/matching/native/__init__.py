"""duckrank's native matching step, a DuckDB extension built from ``match.c`` at install time.

It adds one function, ``duckrank_match(function, rec, truth, k)``, which returns what
``duckrank.matching.matched_sql`` computes; ndcg over 1,000,000 users is 2.5x to 3x faster with
it (benchmarks/RESULTS.md). The metric
macros call it for the id types it handles when it is loaded (``duckrank.render.macros``) and use
the SQL form otherwise, so every number is the same with or without it.

DuckDB loads only signed extensions unless the database was opened with
``allow_unsigned_extensions``: ``duckrank.connect`` opens it so (``native=False`` keeps DuckDB's
default); for a connection opened elsewhere, ``load`` reports whether it could load the step.
The compiled library is a plain shared object; DuckDB also wants a metadata footer naming its
platform and the C API version, so ``load`` writes a copy with that footer to a cache directory
(``$XDG_CACHE_HOME/duckrank`` or ``~/.cache/duckrank``, else a fresh temporary directory).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import tempfile
import warnings
from pathlib import Path

import duckdb

# Must equal DUCKDB_EXTENSION_NAME in match.c: DuckDB finds the entry point by the file's name.
EXTENSION_NAME = "duckrank_native"
FUNCTION_NAME = "duckrank_match"
# The C API version match.c is written against (DUCKDB_EXTENSION_API_VERSION_* there).
C_API_VERSION = "v1.2.0"
_LIBRARY_STEM = "_match"


def library_path() -> Path | None:
    """The compiled library, or None when the install could not build it (no C compiler)."""
    here = Path(__file__).resolve().parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = here / f"{_LIBRARY_STEM}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def _footer(platform: str) -> bytes:
    """DuckDB's extension metadata: a WebAssembly-style custom section named duckdb_signature
    holding eight 32-byte fields, last field first, then an empty 256-byte signature."""
    fields = ["4", platform, C_API_VERSION, "", "C_STRUCT", "", "", ""]
    packed = b"".join(f.encode().ljust(32, b"\0") for f in reversed(fields))
    # 0x93 0x04: the section's length, 531, as LEB128; 0x10: the name's length; 0x80 0x04: 512.
    section = b"\0" + bytes([0x93, 0x04, 0x10]) + b"duckdb_signature" + bytes([0x80, 0x04])
    return section + packed + b"\0" * 256


def _cache_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    directory = Path(base) / "duckrank"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if os.access(directory, os.W_OK):
            return directory
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="duckrank-"))


def _extension_file(library: Path, platform: str) -> Path:
    """The library with its footer, at a path named by its content (written once, atomically)."""
    content = library.read_bytes() + _footer(platform)
    digest = hashlib.sha256(content).hexdigest()[:16]
    target = _cache_directory() / digest / f"{EXTENSION_NAME}.duckdb_extension"
    if target.is_file() and target.read_bytes() == content:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, partial = tempfile.mkstemp(dir=target.parent, suffix=".partial")
    with os.fdopen(descriptor, "wb") as out:
        out.write(content)
    os.replace(partial, target)
    return target


def is_loaded(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``duckrank_match`` exists in ``con``'s database."""
    return con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = ?", [FUNCTION_NAME]
    ).fetchall() != [(0,)]


def load(con: duckdb.DuckDBPyConnection) -> bool:
    """Load the native step into ``con``'s database; False when it cannot be: the library was not
    built, the database does not allow unsigned extensions, or DuckDB refused it (a warning
    says why)."""
    if is_loaded(con):
        return True
    library = library_path()
    allowed = con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchall()
    if library is None or allowed != [(True,)]:
        return False
    platform = con.execute("PRAGMA platform").fetchall()[0][0]
    path = str(_extension_file(library, platform)).replace("'", "''")
    try:
        con.execute(f"LOAD '{path}'")
    except duckdb.Error as error:
        # A DuckDB that refuses the build (another C API, a platform it does not know) still
        # gets every function, through the SQL matching step.
        warnings.warn(
            f"duckrank: the native matching step did not load, using the SQL one: {error}",
            RuntimeWarning, stacklevel=3,
        )
        return False
    return True
