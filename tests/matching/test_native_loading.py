"""Where the native matching step is loaded from, and what happens when it cannot be.

DuckDB runs whatever library file it is told to LOAD, so duckrank loads its build only from a
cache directory no other user can write (checked from / down), and only a file of this user's
holding exactly this build (duckrank/matching/native/__init__.py says why). Every other case
warns once per process, uses the SQL matching step (whose numbers are the same: ndcg([1, 2, 3],
[3]) = (1 / log2(4)) / (1 / log2(2)) = 0.5 by hand) and leaves nothing behind.

The expected outcomes come from that rule, applied by hand to each layout built here. Other
users are simulated as root does it: ``os.chown`` to an unused uid, and for the reported attack,
a shell running as that uid. Permissions that root ignores (a read-only folder, an unwritable
home) are tested in a child process of root without the capabilities that bypass them
(``setpriv``), where mode bits apply to it as to any user.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import duckdb
import pytest

import duckrank
from duckrank.matching import native

OTHER_UID = 54321  # no such user here: a stand-in for another account
NDCG = "SELECT ndcg([1, 2, 3], [3])"

as_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="simulating another user needs root (chown, and running a process as another uid)",
)
# A cache duckrank refuses never reaches DuckDB: scripts/test's oldest-DuckDB run, there for
# what changes with DuckDB, leaves these out.
whole_suite_only = pytest.mark.whole_suite_only


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty private cache directory as $XDG_CACHE_HOME, and a process that has given no
    warning yet (the warnings are once per process)."""
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    monkeypatch.setattr(native, "_warned", set())
    return directory


def _build_directory(cache: Path) -> Path:
    """The directory duckrank uses for this build: named by the content it writes there."""
    platform = duckdb.connect().execute("PRAGMA platform").fetchall()[0][0]
    content = native.library_path().read_bytes() + native._footer(platform)
    return cache / "duckrank" / hashlib.sha256(content).hexdigest()[:16]


def _connect() -> tuple[duckdb.DuckDBPyConnection, list[str]]:
    """duckrank.connect() and the RuntimeWarnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        con = duckrank.connect()
    return con, [str(w.message) for w in caught if w.category is RuntimeWarning]


def _tree(root: Path) -> list[tuple[str, int, int]]:
    """Every entry under ``root`` with its owner and mode, to show nothing was added or changed."""
    return sorted(
        (str(p.relative_to(root)), p.lstat().st_uid, p.lstat().st_mode) for p in root.rglob("*")
    )


def _assert_sql_step_with_one_warning(expected: str) -> None:
    """Three connects: each works through the SQL step, and only the first warns."""
    for attempt in range(3):
        con, warned = _connect()
        assert not native.is_loaded(con)
        assert con.execute(NDCG).fetchall() == [(0.5,)]
        if attempt == 0:
            assert len(warned) == 1 and "native matching step did not load" in warned[0]
            assert expected in warned[0], warned[0]
        else:
            assert warned == []
        con.close()


def test_a_private_cache_is_created_private_and_loaded(cache: Path) -> None:
    con, warned = _connect()
    assert warned == [] and native.is_loaded(con)
    target = _build_directory(cache) / native._EXTENSION_FILE
    for directory in (cache / "duckrank", target.parent):
        assert stat.S_IMODE(directory.lstat().st_mode) == 0o700
    assert target.lstat().st_uid == os.geteuid() and not target.lstat().st_mode & 0o077
    assert native.status(con) == (True, f"loaded from {target}")
    assert native.status() == (True, f"loaded from {target}")
    assert con.execute(NDCG).fetchall() == [(0.5,)]


def test_a_sticky_shared_cache_root_is_trusted_like_tmp(cache: Path) -> None:
    """In a sticky directory (mode 1777, as /tmp) only an entry's owner can rename it, so a
    duckrank folder of this user's there is safe."""
    cache.chmod(0o1777)
    con, warned = _connect()
    assert warned == [] and native.is_loaded(con)


def test_a_symlinked_cache_root_of_this_users_is_followed(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$XDG_CACHE_HOME may be a link (a home on another disk): the resolved path is checked."""
    link = tmp_path / "link"
    link.symlink_to(cache)
    monkeypatch.setenv("XDG_CACHE_HOME", str(link))
    con, warned = _connect()
    assert warned == [] and native.is_loaded(con)
    assert (_build_directory(cache) / native._EXTENSION_FILE).is_file()


@pytest.mark.parametrize(
    ("where", "mode"),
    [
        ("cache", 0o777),  # others could rename duckrank/ away and put theirs in its place
        ("duckrank", 0o777),
        ("duckrank", 0o722),  # writable (not readable) by others is enough to swap files
        ("duckrank", 0o770),  # a group may hold other users
        ("build", 0o777),
    ],
)
@whole_suite_only
def test_a_cache_directory_others_can_write_is_refused(cache: Path, where: str, mode: int) -> None:
    build = _build_directory(cache)
    build.mkdir(parents=True, mode=0o700)
    {"cache": cache, "duckrank": build.parent, "build": build}[where].chmod(mode)
    before = _tree(cache)
    _assert_sql_step_with_one_warning("can be written by other users")
    assert _tree(cache) == before


@whole_suite_only
@as_root
@pytest.mark.parametrize("where", ["duckrank", "build"])
def test_a_cache_directory_of_another_user_is_refused(cache: Path, where: str) -> None:
    build = _build_directory(cache)
    build.mkdir(parents=True, mode=0o755)
    os.chown({"duckrank": build.parent, "build": build}[where], OTHER_UID, OTHER_UID)
    before = _tree(cache)
    _assert_sql_step_with_one_warning(f"belongs to another user (uid {OTHER_UID})")
    assert _tree(cache) == before


@whole_suite_only
@pytest.mark.parametrize("where", ["duckrank", "build"])
def test_a_symlink_planted_for_a_cache_directory_is_refused(
    cache: Path, tmp_path: Path, where: str
) -> None:
    """Even to a private directory: below the cache root nothing is followed."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    build = _build_directory(cache)
    if where == "build":
        build.parent.mkdir(mode=0o700)
    (build.parent if where == "duckrank" else build).symlink_to(elsewhere)
    _assert_sql_step_with_one_warning("is not a directory (a symlink or a file)")
    assert list(elsewhere.iterdir()) == []


def _planted(cache: Path) -> Path:
    build = _build_directory(cache)
    build.mkdir(parents=True, mode=0o700)
    return build / native._EXTENSION_FILE


def _assert_replaced_by_own_copy_and_loaded(target: Path) -> None:
    con, warned = _connect()
    assert warned == [] and native.is_loaded(con)
    info = target.lstat()
    assert stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()
    assert not info.st_mode & 0o022
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no partial file left


def test_a_file_with_other_content_is_replaced(cache: Path) -> None:
    target = _planted(cache)
    target.write_bytes(b"not this build")
    _assert_replaced_by_own_copy_and_loaded(target)


def test_a_file_others_can_write_is_replaced(cache: Path) -> None:
    """Same content, but mode 666: someone could change it between the check and the load."""
    _connect()  # writes the right content
    target = _build_directory(cache) / native._EXTENSION_FILE
    target.chmod(0o666)
    _assert_replaced_by_own_copy_and_loaded(target)


@as_root
def test_a_file_of_another_user_is_replaced(cache: Path) -> None:
    _connect()
    target = _build_directory(cache) / native._EXTENSION_FILE
    os.chown(target, OTHER_UID, OTHER_UID)
    _assert_replaced_by_own_copy_and_loaded(target)


@as_root
def test_a_symlink_planted_for_the_file_is_not_followed(cache: Path, tmp_path: Path) -> None:
    """A link to another user's file holding the very same bytes: before, the content check
    followed the link and DuckDB loaded the other user's file. Now the link itself is replaced
    by this user's copy, and the other file is left as it was."""
    _connect()
    target = _build_directory(cache) / native._EXTENSION_FILE
    theirs = tmp_path / "theirs.duckdb_extension"
    shutil.copyfile(target, theirs)
    os.chown(theirs, OTHER_UID, OTHER_UID)
    content = theirs.read_bytes()
    target.unlink()
    target.symlink_to(theirs)
    _assert_replaced_by_own_copy_and_loaded(target)
    assert theirs.read_bytes() == content and theirs.lstat().st_uid == OTHER_UID


def test_a_fifo_planted_for_the_file_does_not_hang_connect(cache: Path) -> None:
    target = _planted(cache)
    os.mkfifo(target, 0o600)
    _assert_replaced_by_own_copy_and_loaded(target)


@whole_suite_only
def test_a_directory_where_the_file_should_be_warns_and_uses_sql(cache: Path) -> None:
    """It cannot be replaced (and is not removed: duckrank deletes nothing it did not make)."""
    target = _planted(cache)
    target.mkdir()
    before = _tree(cache)
    _assert_sql_step_with_one_warning("cannot be used ([Errno 21] Is a directory")
    assert _tree(cache) == before


EVIL_C = r"""
#define DUCKDB_EXTENSION_NAME duckrank_native
#define DUCKDB_EXTENSION_API_VERSION_MAJOR 1
#define DUCKDB_EXTENSION_API_VERSION_MINOR 2
#define DUCKDB_EXTENSION_API_VERSION_PATCH 0
#include "duckdb_extension.h"
#include <stdio.h>
#include <stdlib.h>
DUCKDB_EXTENSION_EXTERN
DUCKDB_EXTENSION_ENTRYPOINT(duckdb_connection connection, duckdb_extension_info info,
                            struct duckdb_extension_access *access) {
    FILE *marker = fopen(getenv("DUCKRANK_TEST_MARKER"), "a");
    if (marker) { fputs("ran\n", marker); fclose(marker); }
    access->set_error(info, "another user's code ran");
    return false;
}
"""


@whole_suite_only
@as_root
@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler for the stand-in")
def test_another_user_swapping_in_their_library_never_gets_it_loaded(monkeypatch) -> None:
    """The reported attack: $XDG_CACHE_HOME is a folder another user can write (mode 777); that
    user made duckrank's build folder there and keeps renaming their own library into place.
    Before, 3 of 20 connects ran their code (and here the marker showed up within 10). Their
    library is a real DuckDB extension whose entry point appends a line to a marker file: it
    must never run."""
    monkeypatch.setattr(native, "_warned", set())
    shared = Path(tempfile.mkdtemp(prefix="duckrank-attack-"))  # reachable by the other uid
    attacker = None
    try:
        shared.chmod(0o755)
        marker = shared / "marker"
        monkeypatch.setenv("DUCKRANK_TEST_MARKER", str(marker))
        source = shared / "evil.c"
        source.write_text(EVIL_C)
        library = shared / "evil.so"
        headers = Path(native.__file__).parent / "duckdb_capi"
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", f"-I{headers}", str(source), "-o",
                        str(library)], check=True)
        platform = duckdb.connect().execute("PRAGMA platform").fetchall()[0][0]
        library.write_bytes(library.read_bytes() + native._footer(platform))
        library.chmod(0o644)
        cache = shared / "cache"
        cache.mkdir()
        cache.chmod(0o777)
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
        build = _build_directory(cache)
        build.parent.mkdir()
        build.parent.chmod(0o777)
        build.mkdir()
        build.chmod(0o777)
        os.chown(build, OTHER_UID, OTHER_UID)
        target = build / native._EXTENSION_FILE
        attacker = subprocess.Popen(
            ["sh", "-c", f'while :; do cp "{library}" "{build}/.x" && mv -f "{build}/.x" '
                         f'"{target}"; done'],
            user=OTHER_UID, group=OTHER_UID, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )
        time.sleep(0.2)
        loaded = 0
        for _ in range(10):
            con, _warned = _connect()
            loaded += native.is_loaded(con)
            assert con.execute(NDCG).fetchall() == [(0.5,)]
            con.close()
        assert not marker.exists(), "the other user's library ran"
        assert loaded == 0
    finally:
        if attacker is not None:
            # The whole group: a cp or mv the loop started could otherwise still be writing into
            # the folder while it is removed ("Directory not empty", seen on a loaded machine).
            os.killpg(attacker.pid, signal.SIGKILL)
            attacker.wait()
        shutil.rmtree(shared)


def test_not_built_warns_once_and_status_says_so(monkeypatch) -> None:
    """Installed without a C compiler: library_path() is None (our own code's answer, forced
    here because this machine has a compiler)."""
    monkeypatch.setattr(native, "_warned", set())
    monkeypatch.setattr(native, "library_path", lambda: None)
    for attempt in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            con = duckrank.connect()
            duckrank.register(duckdb.connect())
        messages = [str(w.message) for w in caught if w.category is RuntimeWarning]
        assert messages == ([f"duckrank: the native matching step did not load, using the SQL "
                             f"matching step (same numbers, slower): {native.NOT_BUILT}"]
                            if attempt == 0 else [])
        assert con.execute(NDCG).fetchall() == [(0.5,)]
    assert native.status() == (False, native.NOT_BUILT)
    assert native.status(con) == (False, native.NOT_BUILT)


def test_status_names_each_reason_without_warning(cache: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = duckdb.connect()
        assert native.status(plain) == (False, native.NOT_ALLOWED)
        unsigned = duckrank.register(
            duckdb.connect(config={"allow_unsigned_extensions": "true"}), native=False
        )
        assert native.status(unsigned) == (False, native.NOT_REGISTERED)
        cache.chmod(0o777)
        active, reason = native.status()
        assert not active and reason.startswith("the extension cache cannot be used (")
        assert f"{cache} can be written by other users (mode 0o777)" in reason


# Run in a child process of root without the capabilities that let root ignore mode bits: it
# connects three times and reports what it saw.
CHILD = """
import json, warnings
import duckrank
from duckrank.matching import native
seen = []
for _ in range(3):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        con = duckrank.connect()
    seen.append({"loaded": native.is_loaded(con),
                 "ndcg": con.execute("SELECT ndcg([1, 2, 3], [3])").fetchall()[0][0],
                 "warnings": [str(w.message) for w in caught if w.category is RuntimeWarning]})
print(json.dumps(seen))
"""

without_override = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to drop the capabilities that bypass permissions",
)


def _run_child(env: dict[str, str]) -> list[dict]:
    result = subprocess.run(
        ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner",
         sys.executable, "-c", CHILD],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _assert_child_used_sql_and_warned_once(seen: list[dict], expected: str) -> None:
    assert [s["loaded"] for s in seen] == [False] * 3
    assert [s["ndcg"] for s in seen] == [0.5] * 3
    assert [len(s["warnings"]) for s in seen] == [1, 0, 0]
    assert expected in seen[0]["warnings"][0], seen[0]["warnings"][0]


@whole_suite_only
@without_override
def test_a_read_only_cache_with_a_wrong_file_warns_and_uses_sql(cache: Path, tmp_path) -> None:
    target = _planted(cache)
    target.write_bytes(b"not this build")
    target.parent.chmod(0o500)
    before = _tree(cache)
    seen = _run_child({"XDG_CACHE_HOME": str(cache), "TMPDIR": str(tmp_path)})
    _assert_child_used_sql_and_warned_once(seen, "[Errno 13] Permission denied")
    # The native step's folder is as it was; the prepared catalog (duckrank.engines.catalog),
    # in a folder of its own, may have been written beside it.
    assert [e for e in _tree(cache) if not e[0].startswith("duckrank/catalog")] == before


@whole_suite_only
@without_override
def test_an_unwritable_home_leaves_nothing_behind(tmp_path: Path) -> None:
    """Before, each connect made a new temporary directory that was never removed."""
    home = tmp_path / "home"
    home.mkdir(mode=0o555)
    scratch = tmp_path / "tmp"
    scratch.mkdir(mode=0o700)
    seen = _run_child({"HOME": str(home), "TMPDIR": str(scratch)})
    _assert_child_used_sql_and_warned_once(seen, f"{home}/.cache")
    assert list(home.iterdir()) == [] and list(scratch.iterdir()) == []


def test_a_macro_named_like_the_native_function_is_not_the_native_step(tmp_path) -> None:
    """A database file may hold a macro called duckrank_match: it must neither count as the
    native step nor be what the metric macros call. By hand: none of [1, 2, 3] is in [4, 5, 6],
    so recall and precision are 0 (the planted macro claims three hits)."""
    path = str(tmp_path / "planted.duckdb")
    planted = duckdb.connect(path)
    planted.execute(
        "CREATE MACRO duckrank_match(fn, rec, truth, k, lim) AS "
        "{'K': 3::BIGINT, 'pos': [1, 2, 3]::BIGINT[], 'n': 3::BIGINT, 'cut': 10::BIGINT}"
    )
    assert not native.is_loaded(planted)
    planted.close()
    con = duckrank.connect(path)
    assert native.is_loaded(con)
    assert con.execute(
        "SELECT recall_at([1, 2, 3], [4, 5, 6], 10), precision_at([1, 2, 3], [4, 5, 6], 3)"
    ).fetchall() == [(0.0, 0.0)]
    con.close()


# --- the library is a build of the sources in the tree -----------------------------------------


def test_the_library_was_built_from_the_sources_in_the_tree() -> None:
    """scripts/build-native and setup.py compile the sources' SHA-256 into the library; a library
    left from other sources (a failed build, an edit not rebuilt) fails here, and warns at load."""
    library = native.library_path()
    if library is None:
        pytest.skip("the native step is not built")
    tree = native.sources_hash(library.parent)
    assert tree is not None and native.built_from(library) == tree
    assert native.stale_reason() is None


def test_a_library_built_from_other_sources_is_found(tmp_path: Path) -> None:
    library = native.library_path()
    if library is None:
        pytest.skip("the native step is not built")
    copy = tmp_path / library.name
    shutil.copyfile(library, copy)
    for source in native.sources.source_files(library.parent):
        target = tmp_path / source.relative_to(library.parent)
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(source, target)
    assert native.stale_reason(copy) is None
    with (tmp_path / "match.c").open("a") as edited:
        edited.write("/* an edit not rebuilt */\n")
    reason = native.stale_reason(copy)
    assert reason is not None and "rebuild it with scripts/build-native" in reason
    # An installed wheel without its sources has nothing to compare with.
    for source in native.sources.source_files(tmp_path):
        source.unlink()
    assert native.stale_reason(copy) is None


def test_a_stale_library_warns_once_at_load(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "stale_reason", lambda library=None: "built from other sources")
    con, warned = _connect()
    assert native.is_loaded(con) and warned == [
        "duckrank: the native matching step is stale: built from other sources"
    ]
    assert _connect()[1] == []
