"""A database duckrank registered, taken out of Python: ``EXPORT DATABASE`` / ``IMPORT DATABASE``
and ``COPY FROM DATABASE``, then every stored function in a plain DuckDB without duckrank (issue
13, item 12; docs/reliability.md, "What duckrank stores in a database file").

Expected values: what a duckrank connection with the SQL matching step (the form that is stored)
gives for the same query. The point here is that the copy holds working macros that compute the
same; the numbers themselves are checked against their sources in tests/metrics.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import duckrank
from duckrank.engines import duckdb as duckdb_engine
from duckrank.metrics import trec_eval

LISTS = "FROM (VALUES ([1, 3, 2, 6], [1, 2, 4]), ([5, 1], [9])) t(rec, truth)"
GRADED = "FROM (VALUES ([1, 3, 2, 6], MAP {1: 3.0, 2: 1.0, 4: 2.0})) t(rec, truth)"
LONG = (
    "FROM (VALUES (1, 'a', 0.5), (1, 'b', 0.9), (2, 'c', 0.1), (1, 'd', 0.7), (2, 'e', 0.3)) "
    "t(u, item, score)"
)
LABELS = "FROM (VALUES (0.9, 1), (0.2, 0), (0.4, 1), (0.5, 0)) t(score, label)"


def _metric(name: str) -> str:
    """Every stored binary metric: with k, without, and with LIST truth and MAP truth where it
    has both forms."""
    return f"SELECT {name}(rec, truth, 2), {name}(rec, truth) {LISTS}"


def _graded(name: str) -> str:
    return (
        f"SELECT (SELECT list({name}(rec, truth, 3)) {LISTS}), "
        f"(SELECT {name}(rec, truth) {GRADED})"
    )


def _judged(name: str) -> str:
    """The trec_eval measures over judged documents: MAP truth only."""
    return f"SELECT {name}(rec, truth, 3), {name}(rec, truth) {GRADED}"


# Side tables of the beyond-accuracy and protocol table macros, as CTEs (query_table finds them).
SIDE_TABLES = (
    "WITH recs AS (SELECT * FROM (VALUES (1, ['a', 'b', 'c'], ['a']), (2, ['b', 'd'], ['d', 'e']))"
    ' t("user", rec, truth)), '
    "ratings AS (SELECT * FROM (VALUES (1, 'a', 4.0, 1), (1, 'b', 3.0, 2), (1, 'c', 5.0, 4), "
    "(2, 'b', 2.0, 3), (2, 'd', 1.0, 5), (3, 'a', 5.0, 6)) "
    't("user", item, rating, timestamp)), '
    "items AS (SELECT * FROM (VALUES ('a'), ('b'), ('c'), ('d'), ('e'), ('f')) t(item)), "
    "embeddings AS (SELECT * FROM (VALUES ('a', [1.0, 0.0]), ('b', [0.0, 1.0]), "
    "('c', [1.0, 1.0]), ('d', [0.5, 0.2])) t(item, embedding)), "
    "categories AS (SELECT * FROM (VALUES ('a', 'x'), ('b', 'y'), ('c', 'x'), ('d', 'z')) "
    "t(item, category)), "
    """held AS (SELECT * FROM (VALUES (1, 'f'), (2, 'e')) t("user", item)) """
)
TABLE_MACRO_CALLS = {
    "catalog_coverage": "catalog_coverage('recs', 5, catalog := 'items')",
    "exposure_entropy": "exposure_entropy('recs', 5)",
    "exposure_gini": "exposure_gini('recs', 5, catalog := 'items')",
    "arp": "arp('recs', 'ratings', 5)",
    "self_information": "self_information('recs', 'ratings', 5)",
    "long_tail_share": "long_tail_share('recs', 'ratings', 5)",
    "ild_embedding": "ild_embedding('recs', 'embeddings', 5)",
    "ild_category": "ild_category('recs', 'categories', 5)",
    "inter_user_diversity": "inter_user_diversity('recs', 5)",
    "serendipity": "serendipity('recs', 'ratings', 5, catalog := 'items')",
    "ips_recall": "ips_recall('recs', 5, train := 'ratings', min_propensity := 0.1)",
    "ips_precision": "ips_precision('recs', 3, train := 'ratings', min_propensity := 0.1)",
    "ips_ndcg": "ips_ndcg('recs', 5, train := 'ratings', min_propensity := 0.1)",
    "given_n_split": "given_n_split('ratings', 1, test_items := 1)",
    "leave_last_out": "leave_last_out('ratings')",
    "time_split": "time_split('ratings', 3)",
    "ratio_split": "ratio_split('ratings')",
    "sample_candidates": "sample_candidates('ratings', 'held', n := 2)",
}


def _hivemall(name: str) -> str:
    return f"SELECT hivemall.{name}(rec, truth), hivemall.{name}(rec, truth, 2) {LISTS}"


# One query per stored function (the duckrank_* helpers are called through them).
CALLS = {
    **{name: _metric(name) for name in (
        "precision_at", "recall_at", "average_precision", "mrr", "hitrate", "auc")},
    **{name: _graded(name) for name in ("ndcg", "dcg", "err", "half_life_utility")},
    **{m.name: _metric(m.name) for m in trec_eval.BINARY},
    **{m.name: _judged(m.name) for m in trec_eval.JUDGED},
    "trec_geomean": "SELECT trec_geomean(x), trec_geomean(x, floor := 0.1) "
                    "FROM (VALUES (0.5), (0.0), (0.25)) t(x)",
    **{name: f"SELECT {name}(rec, truth, 2), {name}(rec, truth, 4) {LISTS}"
       for name in ("overlap_at", "jaccard_at", "rbo")},
    **{name: f"{SIDE_TABLES}SELECT * FROM {call} ORDER BY ALL"
       for name, call in TABLE_MACRO_CALLS.items()},
    "ndcg_grades": "SELECT ndcg_grades([{'g': 3.0}, {'g': 0.0}, {'g': 1.0}], [3.0, 2.0, 1.0], 2)",
    "to_ordered_list": (
        "SELECT u, to_ordered_list(item, score, '-reverse'), to_ordered_list(item, '-k 1'), "
        f"to_ordered_list(item) {LONG} GROUP BY u ORDER BY u"
    ),
    "to_ordered_kv_map": f"SELECT u, to_ordered_kv_map(item, score) {LONG} GROUP BY u ORDER BY u",
    "to_ordered_vk_map": f"SELECT u, to_ordered_vk_map(item, score) {LONG} GROUP BY u ORDER BY u",
    "read_trec_run": "SELECT * FROM read_trec_run('RUN')",
    "read_trec_qrels": "SELECT * FROM read_trec_qrels('QRELS')",
    "duckrank_version": "SELECT duckrank_version()",
    **{f"hivemall.{name}": _hivemall(name) for name in (
        "precision_at", "recall_at", "average_precision", "mrr", "hitrate", "ndcg")},
    "hivemall.auc": f"SELECT (SELECT hivemall.auc(rec, truth) {LISTS}), "
                    f"(SELECT hivemall.auc(score, label) {LABELS})",
    "hivemall.to_ordered_list": (
        f"SELECT u, hivemall.to_ordered_list(item, score, '-reverse') {LONG} GROUP BY u ORDER BY u"
    ),
    "hivemall.to_ordered_map": (
        f"SELECT u, hivemall.to_ordered_map(score, item) {LONG} GROUP BY u ORDER BY u"
    ),
    "hivemall.collect_set": f"SELECT u, list_sort(hivemall.collect_set(u)) {LONG} GROUP BY u "
                            "ORDER BY u",
    "hivemall.collect_list": f"SELECT u, hivemall.collect_list(u) {LONG} GROUP BY u ORDER BY u",
    "hivemall.struct": "SELECT hivemall.struct(1, 'a')",
}


def _stored_functions(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The stored functions of ``con``'s database but the duckrank_* helpers, which they call."""
    rows = con.execute(
        "SELECT DISTINCT schema_name, function_name FROM duckdb_functions() "
        "WHERE database_name = current_database() AND NOT internal "
        "AND function_type IN ('macro', 'table_macro') "
        "AND (function_name = 'duckrank_version' OR NOT starts_with(function_name, 'duckrank_'))"
    ).fetchall()
    return {name if schema == "main" else f"{schema}.{name}" for schema, name in rows}


@pytest.fixture(scope="module")
def queries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("trec")
    run, qrels = folder / "a.run", folder / "a.qrels"
    run.write_text("q1 Q0 d1 1 2.0 s\nq1 Q0 d2 2 1.0 s\n")
    qrels.write_text("q1 0 d1 1\nq1 0 d3 2\n")
    return {
        name: sql.replace("'RUN'", f"'{run}'").replace("'QRELS'", f"'{qrels}'")
        for name, sql in CALLS.items()
    }


@pytest.fixture(scope="module")
def expected(queries: dict[str, str]) -> dict[str, list]:
    con = duckrank.connect(native=False)
    return {name: con.execute(sql).fetchall() for name, sql in queries.items()}


def _check_every_function(
    plain: duckdb.DuckDBPyConnection, queries: dict[str, str], expected: dict[str, list]
) -> None:
    """Every stored function is called, and gives what duckrank gives."""
    assert _stored_functions(plain) == set(queries)
    assert {name: plain.execute(sql).fetchall() for name, sql in queries.items()} == expected


def test_calls_cover_every_stored_function(queries, expected) -> None:
    """A function added to duckrank's stored macros needs a call in CALLS."""
    assert _stored_functions(duckrank.connect(native=False)) == set(queries)
    assert all(expected.values())


@pytest.mark.parametrize("reopened", [True, False],
                         ids=["exported by plain DuckDB after reopening", "exported by duckrank"])
def test_export_then_import_in_plain_duckdb(
    tmp_path: Path, queries, expected, reopened: bool
) -> None:
    """Before the fix, a file reopened (which loads each schema's macros by name) exported
    ``auc`` before the ``duckrank_cutoff`` it calls, and IMPORT DATABASE failed."""
    path, exported = tmp_path / "user.duckdb", tmp_path / "exported"
    con = duckrank.connect(str(path))
    con.execute("CREATE TABLE kept AS SELECT 42 AS answer")
    if reopened:
        con.close()
        con = duckdb.connect(str(path))
    con.execute(f"EXPORT DATABASE '{exported}'")
    con.close()

    plain = duckdb.connect()
    plain.execute(f"IMPORT DATABASE '{exported}'")
    assert plain.execute("SELECT answer FROM kept").fetchall() == [(42,)]
    _check_every_function(plain, queries, expected)


def test_copy_from_database_to_a_file_works_in_plain_duckdb(
    tmp_path: Path, queries, expected
) -> None:
    """Before the fix, an in-memory database held the native macros, which call duckrank_match
    (a function of duckrank's extension): the copy failed every metric in plain DuckDB. The copy
    also keeps the macros' dependencies, so it exports and imports in its turn."""
    copy, exported = tmp_path / "copy.duckdb", tmp_path / "exported"
    con = duckrank.connect()
    con.execute(f"ATTACH '{copy}' AS copy")
    con.execute("COPY FROM DATABASE memory TO copy")
    con.close()

    plain = duckdb.connect(str(copy))
    _check_every_function(plain, queries, expected)
    plain.execute(f"EXPORT DATABASE '{exported}'")
    plain.close()
    imported = duckdb.connect()
    imported.execute(f"IMPORT DATABASE '{exported}'")
    _check_every_function(imported, queries, expected)


def test_an_import_with_dependencies_on_exports_again_after_reopening(tmp_path: Path) -> None:
    """docs/reliability.md: IMPORT DATABASE creates the macros without their dependencies unless
    enable_macro_dependencies is on; with it, the imported file exports again once reopened."""
    original, first, imported, second = (
        tmp_path / "user.duckdb", tmp_path / "first", tmp_path / "imported.duckdb",
        tmp_path / "second",
    )
    duckrank.connect(str(original)).execute(f"EXPORT DATABASE '{first}'").close()
    con = duckdb.connect(str(imported))
    con.execute("SET enable_macro_dependencies = true")
    con.execute(f"IMPORT DATABASE '{first}'")
    con.close()
    duckdb.connect(str(imported)).execute(f"EXPORT DATABASE '{second}'").close()
    plain = duckdb.connect()
    plain.execute(f"IMPORT DATABASE '{second}'")
    # The first hit at rank 2 of 2 with one relevant item: 1 / log2(3).
    assert plain.execute("SELECT ndcg([5, 1], [1])").fetchall() == [(0.6309297535714575,)]


def test_macros_of_another_build_are_replaced_despite_their_dependencies(
    tmp_path: Path, monkeypatch
) -> None:
    """DuckDB refuses to replace a macro that another depends on: register drops duckrank's
    macros, callers first, before creating those of its own build."""
    path = str(tmp_path / "user.duckdb")
    duckrank.connect(path).close()
    real = duckdb_engine._macro_statements

    def another_build() -> tuple[list[str], str]:
        return real()[0], "another-build"  # another fingerprint: everything is replaced

    monkeypatch.setattr(duckdb_engine, "_macro_statements", another_build)
    con = duckrank.connect(path)
    assert con.execute("SELECT duckrank_version(), mrr([3, 1], [1])").fetchall() == [
        ("another-build", 0.5)  # the first hit at rank 2
    ]
    assert con.execute("SELECT count(*) FROM duckdb_dependencies()").fetchall() != [(0,)]
    con.close()
