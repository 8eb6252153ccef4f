"""Start-up (issue 32, part 1): what ``import duckrank``, the command line and ``connect()``
import, and the prepared catalog (``duckrank/engines/catalog.py``) that ``register`` reads:
every function still there on first use, the stored macros the same as those created from their
text, and the text path taken wherever the catalog cannot be used."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import duckrank
from duckrank import cli
from duckrank.engines import catalog
from duckrank.engines import duckdb as engine

# Heavy modules a start-up should not import, and whether the child imported them.
CHILD = """
import json, sys
{code}
heavy = ("numpy", "pyarrow", "duckrank.metrics", "duckrank.render.macros", "duckrank.stats")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def _imported(code: str, cache: Path) -> list[str]:
    """The heavy modules imported by running ``code`` in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(code=code)],
        env={**os.environ, "XDG_CACHE_HOME": str(cache)}, capture_output=True, text=True,
        timeout=300, check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private, empty cache folder, and a process that has loaded no catalog yet."""
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    engine._load_catalog.cache_clear()
    yield folder
    engine._load_catalog.cache_clear()


def test_import_help_and_version_import_no_records(cache: Path) -> None:
    assert _imported("import duckrank", cache) == []
    assert _imported("from duckrank.cli import build_parser; build_parser([])", cache) == []
    assert _imported("from duckrank.cli import build_parser; build_parser(['sql'])", cache) == []


def test_connect_with_a_prepared_catalog_imports_no_records(cache: Path) -> None:
    """The first connect of a build prepares the catalog; the next ones only read it, and the
    Python functions import their modules when first called."""
    prepare = "import duckrank; duckrank.connect()"
    _imported(prepare, cache)
    assert {p.suffix for p in (cache / "duckrank" / "catalog").iterdir()} == {".duckdb", ".json"}
    # create_function imports numpy (DuckDB's own doing): no metric record, no statistical
    # test, no pyarrow, no rendering (the interrupt counting lives in a module of its own). A
    # source edited meanwhile (a shared tree) is a new build, prepared again: a few tries.
    imported = [_imported(prepare, cache) for _ in range(3)]
    assert ["numpy"] in imported, imported


def _excluded_in_order(definition: str) -> str:
    """DuckDB keeps a SELECT's EXCLUDE names as a set: their order in the text may differ."""
    return re.sub(r"EXCLUDE \(([^()]*)\)",
                  lambda m: f"EXCLUDE ({', '.join(sorted(m[1].split(', ')))})", definition)


def _macros(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return sorted((*row[:4], _excluded_in_order(row[4] or "")) for row in con.execute(
        "SELECT schema_name, function_name, function_type, parameters::VARCHAR, "
        "macro_definition FROM duckdb_functions() WHERE database_name = current_database() "
        "AND NOT internal AND function_type IN ('macro', 'table_macro')"
    ).fetchall())


def test_copied_macros_are_those_created_from_their_text(cache: Path, tmp_path: Path) -> None:
    copied = duckrank.connect(str(tmp_path / "copied.duckdb"), native=False)
    assert engine._catalog().database is not None
    from_text = duckdb.connect(str(tmp_path / "text.duckdb"))
    statements, build = engine._macro_statements()
    engine._store_macros(from_text, [*statements, engine._version_statement(build)])
    assert _macros(copied) == _macros(from_text)
    # Their recorded dependencies too (what export and reopening need).
    query = "SELECT count(*) FROM duckdb_dependencies()"
    assert copied.execute(query).fetchall() == from_text.execute(query).fetchall() != [(0,)]


def test_a_taken_name_falls_back_to_the_text(cache: Path) -> None:
    """A database holding a macro of one of duckrank's names (and no duckrank_version): COPY
    fails on it, and the macros are created from their text, replacing it, as before."""
    engine._catalog()  # prepared
    con = duckdb.connect()
    con.execute("CREATE MACRO mrr(a, b) AS 42")
    duckrank.register(con, native=False)
    assert con.execute("SELECT mrr([3, 1], [1])").fetchall() == [(0.5,)]
    assert con.execute("SELECT count(*) FROM duckdb_databases() "
                       "WHERE database_name = 'duckrank_prepared_catalog'").fetchall() == [(0,)]


def test_an_unusable_cache_renders_from_the_records(cache: Path) -> None:
    cache.chmod(0o777)  # other users could write it: not trusted
    con = duckrank.connect(native=False)  # (the native step would warn of it)
    assert engine._catalog().database is None
    assert con.execute("SELECT ndcg([1, 3, 2, 6], [1, 2, 4], 2)").fetchall() == [
        (0.6131471927654584,)]
    assert not (cache / "duckrank" / "catalog").exists()


def test_the_key_follows_every_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "duckrank"
    (package / "metrics").mkdir(parents=True)
    source = package / "metrics" / "binary.py"
    source.write_text("A = 1\n")
    monkeypatch.setattr(catalog, "_PACKAGE", package)
    before = catalog._key()
    source.write_text("A = 2\n")  # same size, another content
    assert catalog._key() == before  # read once per process
    catalog._digest.cache_clear()  # as a new process
    assert catalog._key() != before


def test_a_process_older_than_its_sources_keeps_no_catalog(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that imported duckrank before a source changed may run the old modules while
    the key reads the new files: it renders for itself (every function there) and writes no
    catalog a later process would take for the new sources' (found when a test process
    connected after another developer's edit)."""
    monkeypatch.setattr(duckrank, "_IMPORTED_AT_NS", 0)  # every source is newer
    con = duckrank.connect()
    assert con.execute("SELECT ndcg([1, 3, 2, 6], [1, 2, 4], 2)").fetchall() == [
        (0.6131471927654584,)]
    assert not list((cache / "duckrank" / "catalog").glob("*"))


def test_deferred_functions_and_stats_work_on_first_use(cache: Path) -> None:
    con = duckrank.connect()
    # Through the Python UDFs (UUID ids: never the native step) and the tests' aggregates.
    uuids = [f"'00000000-0000-0000-0000-00000000000{i}'::UUID" for i in range(3)]
    rec = f"[{', '.join(uuids)}]"
    truth = f"MAP {{{uuids[0]}: 3.0, {uuids[1]}: 2.0, {uuids[2]}: 1.0}}"
    assert con.execute(f"SELECT kendall_tau({rec}, {truth})").fetchall() == [(1.0,)]
    t = con.execute("SELECT (paired_ttest(x, y)).n FROM (VALUES (1.0, 2.0), (2.0, 2.5), "
                    "(3.0, 3.9)) v(x, y)").fetchall()
    assert t == [(3,)]


def test_the_command_line_adds_only_the_command_it_runs() -> None:
    def commands(parser) -> dict:
        return next(a for a in parser._actions if a.dest == "command").choices

    lazy = commands(cli.build_parser(["trec_eval", "a", "b"]))
    assert set(lazy) == {c.name for c in cli.COMMANDS}
    assert any(a.dest == "per_query" for a in lazy["trec_eval"]._actions)
    assert [a.dest for a in lazy["evaluate"]._actions] == ["help"]  # listed, never parsed
    full = commands(cli.build_parser())
    assert any(a.dest == "metric" for a in full["evaluate"]._actions)


def test_an_interrupt_bound_at_once_stops_a_resampling_run(cache: Path) -> None:
    """``con.interrupt`` taken right after connect (a Timer's) is the counting one, though the
    tests' kernels have not been imported for a call yet (``duckrank.engines.interrupts``)."""
    code = """
import threading, duckdb, duckrank
con = duckrank.connect()
threading.Timer(0.3, con.interrupt).start()
try:
    con.sql("SELECT randomization_test(x, y, trials := 100000000) FROM "
            "(SELECT random() x, random() y FROM range(100))").fetchall()
    print("finished")
except duckdb.Error as error:
    print(error)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache)}, timeout=600)
    assert "interrupted" in done.stdout.lower(), done.stdout + done.stderr
