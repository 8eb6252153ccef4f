"""duckrank's native matching step, a DuckDB extension built from ``match.c`` at install time.

It adds ``duckrank_match(function, rec, truth, k)``, which returns what
``duckrank.matching.sql.matched_sql`` computes, ``duckrank_graded(rec, truth, k)``, what
``graded_match_sql`` computes for the graded metrics over MAP truth (the hits with their
grades, the ideal list, n and the first bad grade), and ``duckrank_grades(rec, truth, k)``, the
grades of the whole top K (trec_eval's gain measures); all take
``current_setting('memory_limit')`` as an optional last argument, the bound of their scratch
memory (match.c says how). It also adds the aggregate ``duckrank_top_k(item, key, k)`` (topk.c):
per group the first k items of ``to_ordered_list(item, key, '-reverse')``, from a heap of at most
k pairs (``duckrank_top_k(item, key, k, 'text')``, for integer items: ties by the items' decimal
text, descending, as ``evaluate`` orders every id type), with which ``duckrank.evaluate``
ranks long runs when every metric has a cut-off.
ndcg over 1,000,000 users is 2.5x to 3x faster with them (benchmarks/RESULTS.md). The metric
macros call them for the id types they handle when loaded (``duckrank.render.macros``) and use
the SQL form otherwise, so every number is the same with or without them.

DuckDB loads only signed extensions unless the database was opened with
``allow_unsigned_extensions``: ``duckrank.connect`` opens it so (``native=False`` keeps DuckDB's
default); for a connection opened elsewhere, ``load`` reports whether it could load the step.
``status`` says which matching step is active and why.

The compiled library is a plain shared object; DuckDB also wants a metadata footer naming its
platform and the C API version, so ``load`` writes a copy with that footer to the user's cache
(``$XDG_CACHE_HOME/duckrank/<content digest>/`` or ``~/.cache/duckrank/<digest>/``) and loads it
from there. DuckDB runs whatever that file holds, so it is loaded only from a directory no other
user can write, checked from ``/`` down (another user able to rename files there could swap in
their own library between the check and the load), and only when the file is this user's and
holds this build. One file per build, at one path, also lets the dynamic loader map it once per
process however many databases load it (a fresh copy per load would add memory mappings on every
``connect`` until the process runs out of them). When the cache cannot be trusted or written,
``load`` warns once per process and the SQL matching step is used; nothing is left behind.
docs/reliability.md ("The native matching step") has the rules, and what each case does.

A developer rebuilds the library from the C sources with ``scripts/build-native`` (every warning
an error; ``--sanitize`` for an AddressSanitizer + UBSan build), which fails loudly where the
install's optional build falls back to the SQL step in silence. Both builds compile in the SHA-256
of the sources (``sources.py``); where the sources are next to the library (a checkout, not an
installed wheel), ``stale_reason`` compares the two and ``load`` warns once per process when they
differ, so a test never runs a library built from other sources than those in the tree without
saying so (docs/contributing.md, "The native step").
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.machinery
import os
import re
import stat
import tempfile
import warnings
from pathlib import Path
from typing import NamedTuple

import duckdb

from duckrank.matching.native.sources import source_files, sources_hash

# Must equal DUCKDB_EXTENSION_NAME in match.c: DuckDB finds the entry point by the file's name.
EXTENSION_NAME = "duckrank_native"
# The C API version match.c is written against (DUCKDB_EXTENSION_API_VERSION_* there).
C_API_VERSION = "v1.2.0"
_LIBRARY_STEM = "_match"
# What extension.c compiles in: the SHA-256 of the sources the library was built from.
_SOURCES_MARKER = re.compile(rb"duckrank_native sources sha256:([0-9a-f]{64}|unknown)")
_EXTENSION_FILE = f"{EXTENSION_NAME}.duckdb_extension"

NOT_BUILT = (
    "the library was not built (no C compiler when duckrank was installed); reinstall duckrank "
    "where a C compiler (gcc or clang) is available to get it"
)
NOT_ALLOWED = (
    "this database does not allow unsigned extensions (open it with duckrank.connect(), or with "
    "config={'allow_unsigned_extensions': 'true'})"
)
NOT_REGISTERED = (
    "not loaded in this connection's database: it was registered with native=False or not by "
    "duckrank (duckrank.register(con) loads it)"
)


class Status(NamedTuple):
    """Which matching step a database uses (``active``: the native one) and why."""

    active: bool
    reason: str


class _Unavailable(Exception):
    """Why the native step cannot be loaded. ``kind`` names the warning ``load`` gives once per
    process ("" for none: a database opened without unsigned extensions is the user's choice)."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


class _Untrusted(Exception):
    """A cache directory or file that another user could write."""


# The warning kinds already given in this process, and the file this process last loaded.
_warned: set[str] = set()
_loaded_from: Path | None = None


def library_path() -> Path | None:
    """The compiled library, or None when the install could not build it (no C compiler)."""
    here = Path(__file__).resolve().parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = here / f"{_LIBRARY_STEM}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def built_from(library: Path | None = None) -> str | None:
    """The hash of the sources ``library`` (default: the package's) was built from, "unknown"
    for a build without one (compiled by hand), None when there is no library or no mark."""
    library = library or library_path()
    if library is None:
        return None
    found = _SOURCES_MARKER.search(library.read_bytes())
    return found.group(1).decode() if found else None


@functools.lru_cache(maxsize=8)
def _stale_reason(library: Path, stamps: tuple[tuple[str, int, int], ...]) -> str | None:
    del stamps  # the cache key: a rebuilt library or an edited source is checked again
    tree = sources_hash(library.parent)
    if tree is None:
        return None  # an installed wheel without its sources: nothing to compare with
    built = built_from(library)
    if built == tree:
        return None
    return (
        f"{library} was built from other sources than those next to it (its sources hash "
        f"{built or 'missing'}, the tree's {tree}); rebuild it with scripts/build-native"
    )


def stale_reason(library: Path | None = None) -> str | None:
    """Why ``library`` (default: the package's) is not a build of the C sources next to it, or
    None when it is, or when there is no library or no sources beside it to compare with."""
    library = library or library_path()
    if library is None:
        return None
    stamps = tuple(
        (str(path), path.stat().st_size, path.stat().st_mtime_ns)
        for path in [library, *source_files(library.parent)]
    )
    return _stale_reason(library, stamps)


def _footer(platform: str) -> bytes:
    """DuckDB's extension metadata: a WebAssembly-style custom section named duckdb_signature
    holding eight 32-byte fields, last field first, then an empty 256-byte signature."""
    fields = ["4", platform, C_API_VERSION, "", "C_STRUCT", "", "", ""]
    packed = b"".join(f.encode().ljust(32, b"\0") for f in reversed(fields))
    # 0x93 0x04: the section's length, 531, as LEB128; 0x10: the name's length; 0x80 0x04: 512.
    section = b"\0" + bytes([0x93, 0x04, 0x10]) + b"duckdb_signature" + bytes([0x80, 0x04])
    return section + packed + b"\0" * 256


def _cache_base() -> Path:
    """$XDG_CACHE_HOME, or ~/.cache; a relative $XDG_CACHE_HOME is ignored, as the XDG base
    directory specification says."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(base):
        return Path(base)
    try:
        home = Path.home()
    except RuntimeError as error:
        raise _Untrusted(f"no home directory ({error})") from error
    if not home.is_absolute():
        raise _Untrusted(f"the home directory {str(home)!r} is not an absolute path")
    return home / ".cache"


def _private_directory(base: Path, below: tuple[str, ...], uid: int) -> Path:
    """``base`` (a resolved path) and ``below`` under it, each created where missing with mode
    0o700. Raises _Untrusted unless no other user can rename, replace or write into any of them:
    every directory from / to ``base`` belongs to this user or root and no one else can write it,
    unless it is sticky (as /tmp is: there only an entry's owner can rename it, and the next
    step must be this user's or root's); the directories below ``base`` are this user's own,
    writable by no one else, and not symlinks."""
    steps = [Path(base.anchor)]
    for part in base.parts[1:]:
        steps.append(steps[-1] / part)
    last_ancestor = len(steps) - 1
    for part in below:
        steps.append(steps[-1] / part)
    for index, step in enumerate(steps):
        try:
            info = os.lstat(step)
        except FileNotFoundError:
            os.mkdir(step, 0o700)
            info = os.lstat(step)
        mode = info.st_mode
        if not stat.S_ISDIR(mode):
            raise _Untrusted(f"{step} is not a directory (a symlink or a file)")
        owners = (uid, 0) if index <= last_ancestor else (uid,)
        if info.st_uid not in owners:
            raise _Untrusted(f"{step} belongs to another user (uid {info.st_uid})")
        if mode & 0o022 and not (mode & stat.S_ISVTX and index <= last_ancestor):
            raise _Untrusted(
                f"{step} can be written by other users (mode {stat.S_IMODE(mode):#o})"
            )
    return steps[-1]


def _holds(path: Path, content: bytes, uid: int) -> bool:
    """Whether ``path`` is a regular file of this user's that no one else can write, holding
    ``content``. Opened without following a symlink, and without waiting on a FIFO."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        info = os.fstat(descriptor)
        if not (stat.S_ISREG(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o022
                and info.st_size == len(content)):
            return False
        with open(descriptor, "rb", closefd=False) as file:
            return file.read() == content
    finally:
        os.close(descriptor)


def _write(path: Path, content: bytes) -> None:
    """Put ``content`` at ``path`` atomically (a partial file never shows there), replacing what
    was there, and leave no partial file behind on any failure."""
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".partial")
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(content)
        os.replace(partial, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)


def _extension_file(library: Path, platform: str) -> Path:
    """The library with its footer, in a private directory named by its content, written there
    when missing or wrong; raises _Unavailable when the cache cannot be trusted or written."""
    if not hasattr(os, "geteuid"):
        raise _Unavailable("cache", "file ownership cannot be checked on this platform")
    uid = os.geteuid()
    try:
        content = library.read_bytes() + _footer(platform)
        digest = hashlib.sha256(content).hexdigest()[:16]
        base = Path(os.path.realpath(_cache_base()))
        target = _private_directory(base, ("duckrank", digest), uid) / _EXTENSION_FILE
        # The directory is this user's alone, so what is checked here is what DuckDB loads.
        if not _holds(target, content, uid):
            _write(target, content)
            if not _holds(target, content, uid):
                raise _Untrusted(f"{target} does not hold what was just written there")
    except (OSError, _Untrusted) as problem:
        raise _Unavailable(
            "cache",
            f"the extension cache cannot be used ({problem}); point XDG_CACHE_HOME at a "
            "directory only you can write (mode 700)",
        ) from problem
    return target


def is_loaded(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the extension is loaded in ``con``'s database. Asked of DuckDB's extension list,
    not of its function names: a macro called ``duckrank_match`` (which a database file may
    hold) is not the native step, and the macros call the step by its qualified name
    ``system.main.duckrank_match``."""
    return con.execute(
        "SELECT count(*) FROM duckdb_extensions() WHERE extension_name = ? AND loaded",
        [EXTENSION_NAME],
    ).fetchall() != [(0,)]


def _prepare(con: duckdb.DuckDBPyConnection) -> Path:
    """The file to load into ``con``'s database; raises _Unavailable saying why there is none."""
    library = library_path()
    if library is None:
        raise _Unavailable("not built", NOT_BUILT)
    allowed = con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchall()
    if allowed != [(True,)]:
        raise _Unavailable("", NOT_ALLOWED)
    return _extension_file(library, con.execute("PRAGMA platform").fetchall()[0][0])


def _load_file(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    try:
        con.execute("LOAD '{}'".format(str(path).replace("'", "''")))
    except duckdb.Error as error:
        # A DuckDB that refuses the build (another C API, a platform it does not know) still
        # gets every function, through the SQL matching step.
        raise _Unavailable("refused", f"DuckDB refused to load {path}: {error}") from error
    global _loaded_from
    _loaded_from = path


def load(con: duckdb.DuckDBPyConnection) -> bool:
    """Load the native step into ``con``'s database; False when it cannot be: the library was not
    built, the database does not allow unsigned extensions, the cache cannot be trusted or
    written, or DuckDB refused the build. Each of these but the second gives a RuntimeWarning,
    once per process; ``status`` says which applies."""
    if is_loaded(con):
        return True
    try:
        _load_file(con, _prepare(con))
        stale = stale_reason()
        if stale and "stale" not in _warned:
            _warned.add("stale")
            warnings.warn(f"duckrank: the native matching step is stale: {stale}", RuntimeWarning,
                          stacklevel=2)
    except _Unavailable as problem:
        if problem.kind and problem.kind not in _warned:
            _warned.add(problem.kind)
            warnings.warn(
                "duckrank: the native matching step did not load, using the SQL matching step "
                f"(same numbers, slower): {problem.reason}",
                RuntimeWarning, stacklevel=3,
            )
        return False
    return True


def status(con: duckdb.DuckDBPyConnection | None = None) -> Status:
    """Which matching step ``con``'s database uses, and why; without ``con``, the one that
    ``duckrank.connect()`` gets, found by loading the step into a scratch in-memory database.
    Gives no warning."""
    if con is not None and is_loaded(con):
        where = _loaded_from or "a LOAD outside duckrank"
        return Status(True, f"loaded from {where}")
    probe = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    try:
        path = _prepare(con if con is not None else probe)
        _load_file(probe, path)
    except _Unavailable as problem:
        return Status(False, problem.reason)
    finally:
        probe.close()
    return Status(True, f"loaded from {path}") if con is None else Status(False, NOT_REGISTERED)
