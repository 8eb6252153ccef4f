"""The prepared catalog: what ``duckrank.register`` creates, rendered once per build and kept in
the user's cache folder, so that a start-up reads it instead of rendering it again (issue 32).

Rendering needs the records, and the records import numpy and pyarrow: about 0.1 s of CPU
before any SQL runs. Creating the stored macros from their SQL text costs more: DuckDB parses
~360 KB of it (about 0.35 s of CPU), while copying them from a database file that holds them
(``COPY FROM DATABASE``) reads their parsed form (about 0.1 s). So, per build (a digest of
duckrank's sources and the DuckDB version), ``<cache>/duckrank/catalog/`` holds:

* ``<key>.json``: the statements ``register`` runs and the Python UDFs' signatures
  (``duckrank.engines.duckdb._render_catalog`` says what), read in a few milliseconds;
* ``<key>.duckdb``: a database holding the stored macros (with their recorded dependencies),
  which ``register`` copies into a database holding no duckrank macros yet.

Both are written once, by the first registration of a build, atomically (a partial file never
shows under its name; two processes preparing at once both write the same thing). The folder
follows the native step's rules (``duckrank.matching.native``): this user's own, writable by no
one else; where that cannot be had, ``prepared`` is None and ``register`` renders as before.
A changed source file changes the key, so an edited tree never reads an old catalog; a process
that imported duckrank before a source changed renders for itself and keeps nothing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from duckrank.matching import native as _native

# The package whose sources the catalog is rendered from.
_PACKAGE = Path(__file__).resolve().parent.parent
# Catalogs of other builds kept (other checkouts, other DuckDB versions, a tree being edited),
# the most recently used first.
_KEEP = 8


def _key() -> str:
    """A digest of every Python source of duckrank and the DuckDB version: what the rendered
    statements and the database file's format depend on."""
    return _digest(_PACKAGE, duckdb.__version__)


@functools.cache
def _digest(package: Path, duckdb_version: str) -> str:
    """``_key``, read once per process (about 3 ms: listing, reading and hashing 1.6 MB of
    sources). A source changed later is ``_edited_since_import``'s concern: such a process
    writes no catalog, whatever key it holds."""
    digest = hashlib.sha256(f"duckdb {duckdb_version}\0".encode())
    for path in sorted(package.rglob("*.py")):
        digest.update(f"{path.relative_to(package)}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:24]


def _edited_since_import() -> bool:
    """Whether a source of duckrank changed after this process imported the package: its
    modules may then be the old ones while ``_key`` reads the new files, and a catalog rendered
    from them must not be kept under the new key (a later process would read old macros). The
    change time (ctime) counts too: an install may set a file's mtime from its archive."""
    imported_at = sys.modules["duckrank"]._IMPORTED_AT_NS
    for path in _PACKAGE.rglob("*.py"):
        status = path.stat()
        if max(status.st_mtime_ns, status.st_ctime_ns) > imported_at:
            return True
    return False


def _folder() -> Path:
    """``<cache>/duckrank/catalog``, private to this user (raises OSError or the native step's
    _Untrusted where it cannot be)."""
    if not hasattr(os, "geteuid"):
        raise OSError("file ownership cannot be checked on this platform")
    base = Path(os.path.realpath(_native._cache_base()))
    return _native._private_directory(base, ("duckrank", "catalog"), os.geteuid())


def prepared(
    render: Callable[[], dict[str, Any]], write_database: Callable[[str, dict[str, Any]], None]
) -> tuple[dict[str, Any], Path | None] | None:
    """The catalog of this build and its database file, prepared now when missing: ``render()``
    gives the catalog (JSON-able), ``write_database(path, catalog)`` creates the database file.
    None when the cache folder cannot be used; the catalog rendered and no file when they cannot
    be written there."""
    try:
        folder = _folder()
        key = _key()
        path = folder / f"{key}.json"
        database = folder / f"{key}.duckdb"
        with contextlib.suppress(FileNotFoundError, ValueError):
            catalog = json.loads(path.read_bytes())
            if isinstance(catalog, dict) and catalog.get("key") == key and database.is_file():
                os.utime(path)  # used: kept longer than other builds' (_forget_other_builds)
                return catalog, database
    except (OSError, _native._Untrusted):
        return None
    catalog = {**render(), "key": key}
    if _edited_since_import():
        return catalog, None
    try:
        _prepare_database(database, lambda partial: write_database(partial, catalog))
        _native._write(path, json.dumps(catalog).encode())
        _forget_other_builds(folder, key)
    except (OSError, duckdb.Error):
        return catalog, None
    return catalog, database


def _prepare_database(database: Path, write: Callable[[str], None]) -> None:
    """Create the database file under a temporary name, then move it to ``database``."""
    partial = database.with_name(f".{database.stem}.{os.getpid()}.partial.duckdb")
    try:
        write(str(partial))
        os.replace(partial, database)
    finally:
        for leftover in (partial, Path(f"{partial}.wal")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _forget_other_builds(folder: Path, key: str) -> None:
    """Delete the catalogs of all but the ``_KEEP`` most recently used other builds."""
    others = sorted((p for p in folder.glob("*.json") if p.stem != key),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in others[_KEEP:]:
        for path in (old, old.with_suffix(".duckdb")):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
