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
from duckrank.fusion import METHODS as FUSION_METHODS
from duckrank.metrics import METRICS, trec_eval
from duckrank.off_policy import RECORDS as OFF_POLICY_RECORDS

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
    """held AS (SELECT * FROM (VALUES (1, 'f'), (2, 'e')) t("user", item)), """
    # issue 28: groups of items and of users
    "item_groups AS (SELECT * FROM (VALUES ('a', 'x'), ('b', 'y'), ('c', 'x'), ('d', 'z')) "
    't(item, "group")), '
    """user_groups AS (SELECT * FROM (VALUES (1, 'm'), (2, 'f'), (3, 'f')) t("user", "group")), """
    """graded AS (SELECT "user", rec, MAP(truth, list_transform(truth, lambda x: 2)) AS truth """
    "FROM recs), "
    """scored AS (SELECT "user", rec, list_transform(rec, lambda x: 0.5) AS score, truth """
    "FROM recs), "
    # the fusion macros' runs: two systems, two queries, a tie and an item one system lacks
    "runs AS (SELECT * FROM (VALUES ('s0', 'q1', 'a', 0.9), ('s0', 'q1', 'b', 0.5), "
    "('s0', 'q2', 'c', 0.5), ('s1', 'q1', 'b', 0.8), ('s1', 'q1', 'c', 0.8), "
    "('s1', 'q2', 'a', 0.3)) t(system, query, item, score)), "
    """timed AS (SELECT "user", item, TIMESTAMP '2026-01-01' + to_hours(timestamp * 7) """
    "AS timestamp FROM ratings) "
)
# The fusion methods' parameters without a default (weights, or what training gives).
_WEIGHTS = ", MAP {'s0': 0.6, 's1': 0.4}"
_POSITIONS = ", MAP {'s0': [0.5, 0.25], 's1': [0.75]}"
FUSION_ARGUMENTS = {
    "fuse_gmnz": ", gamma := 0.5", "fuse_rbc": ", phi := 0.8", "fuse_w_bordafuse": _WEIGHTS,
    "fuse_w_condorcet": _WEIGHTS, "fuse_wsum": _WEIGHTS, "fuse_wmnz": _WEIGHTS,
    "fuse_mixed": _WEIGHTS, "fuse_posfuse": _POSITIONS, "fuse_probfuse": _POSITIONS,
    "fuse_segfuse": _POSITIONS, "fuse_slidefuse": f"{_POSITIONS}, w := 1",
    "fuse_bayesfuse": ", MAP {'s0': [0.5, -1.0], 's1': [0.25]}",
    "fuse_mapfuse": ", MAP {'s0': 0.3, 's1': 0.5}",
}
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
    # issue 28
    "user_coverage": "user_coverage('recs', 2, test := 'held')",
    "sufficient_reco": "sufficient_reco('recs', 3, deep := true)",
    "unrepeated_reco": "unrepeated_reco('recs', 3)",
    "epc": "epc('recs', 'ratings', 5)",
    "efd": "efd('recs', 'ratings', 5, discount := 'rbp')",
    "categorical_diversity": "categorical_diversity('recs', 'categories', 5)",
    "rank_biased_entropy": "rank_biased_entropy('recs', 'categories', 5)",
    "aclt": "aclt('recs', 'ratings', 5)",
    "aplt": "aplt('recs', 'ratings', 5, head := 'items')",
    "pop_reo": "pop_reo('recs', 'ratings', 5)",
    "pop_rsp": "pop_rsp('recs', 'ratings', 5)",
    "reo": "reo('recs', 'ratings', 'item_groups', 5)",
    "rsp": "rsp('recs', 'ratings', 'item_groups', 5)",
    "bias_disparity": "bias_disparity('recs', 'ratings', 'user_groups', 'item_groups', 5)",
    "expected_exposure": "expected_exposure('recs', 3)",
    "group_expected_exposure": "group_expected_exposure('recs', 'item_groups', 3)",
    "extended_epc": "extended_epc('graded', 'ratings', 5)",
    "extended_efd": "extended_efd('graded', 'ratings', 5, threshold := 2)",
    "user_mad_rating": "user_mad_rating('scored', 'user_groups', 5)",
    "item_mad_rating": "item_mad_rating('scored', 'item_groups', 5)",
    "user_mad_ranking": "user_mad_ranking('graded', 'user_groups', 5, threshold := 2)",
    "item_mad_ranking": "item_mad_ranking('graded', 'item_groups', 5)",
    "given_n_split": "given_n_split('ratings', 1, test_items := 1)",
    "leave_last_out": "leave_last_out('ratings')",
    "time_split": "time_split('ratings', 3)",
    "ratio_split": "ratio_split('ratings')",
    "sample_candidates": "sample_candidates('ratings', 'held', n := 2)",
    "k_fold_split": "k_fold_split('ratings', folds := 2)",
    "cold_user_split": "cold_user_split('ratings', ratio := 0.5)",
    "new_users_split": "new_users_split('ratings', ratio := 0.5)",
    "time_range_folds": "time_range_folds('timed', '12H', n_splits := 2)",
    **{m.sql_name: f"{m.sql_name}('runs'{FUSION_ARGUMENTS.get(m.sql_name, '')})"
       for m in FUSION_METHODS},
}


SUBTOPICS = (
    "FROM (VALUES (['a', 'b', 'c'], [{'subtopic': 's1', 'item': 'a', 'grade': 1.0}, "
    "{'subtopic': 's2', 'item': 'a', 'grade': 2.0}, {'subtopic': 's2', 'item': 'c', "
    "'grade': 1.0}, {'subtopic': 's3', 'item': 'd', 'grade': 1.0}])) t(rec, truth)"
)
# The off-policy aggregates' inputs, one log row each (a slate of two for the slate ones).
OFF_POLICY_LOG = (
    "FROM (VALUES (1.0, 0.5, 0.25, 0.4, 0.6, 1, 1.0, 0.5), (0.0, 0.5, 0.25, 0.2, 0.3, 1, 0.5, "
    "0.25), (1.0, 0.8, 0.4, 0.7, 0.5, 2, 1.0, 0.5)) "
    "t(reward, pscore, action_prob, q_hat, v_hat, slate_id, prev_pscore, prev_action_prob)"
)


def _records_calls() -> dict[str, str]:
    """A call of every metric record not called above (from its input kind), of every
    off-policy record (from its inputs), and of the pointwise and classification aggregates."""
    calls = {}
    for metric in METRICS:
        kind = metric.inputs
        if kind == "subtopics":
            calls[metric.name] = (f"SELECT {metric.name}(rec, truth, 2), "
                                  f"{metric.name}(rec, truth) {SUBTOPICS}")
        elif kind == "judged":
            calls[metric.name] = _judged(metric.name)
        elif kind in ("hits", "graded_hits"):
            calls[metric.name] = _metric(metric.name)
    for record in OFF_POLICY_RECORDS:
        calls[record.name] = f"SELECT {record.name}({', '.join(record.inputs)}) {OFF_POLICY_LOG}"
    for name in ("rmse", "mse", "mae", "r2"):
        calls[name] = f"SELECT {name}(score, label) {LABELS}"
    calls["log_loss"] = f"SELECT log_loss(score, label) {LABELS}"
    calls["roc_auc"] = f"SELECT roc_auc(score, label) {LABELS}"
    calls["pr_auc"] = f"SELECT pr_auc(score, label) {LABELS}"
    calls["gauc"] = f"SELECT gauc(rec, truth), gauc(rec, truth, weighting := 'users') {LISTS}"
    return calls


def _hivemall(name: str) -> str:
    return f"SELECT hivemall.{name}(rec, truth), hivemall.{name}(rec, truth, 2) {LISTS}"


# One query per stored function (the duckrank_* helpers are called through them).
CALLS = {
    **_records_calls(),
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
    **{f"hivemall.{name}": f"SELECT hivemall.{name}(score, label) {LABELS}"
       for name in ("mae", "mse", "rmse", "r2")},
    "hivemall.logloss": f"SELECT hivemall.logloss(score, label) {LABELS}",
    "hivemall.f1score": f"SELECT hivemall.f1score(truth, rec) {LISTS}",
    "hivemall.fmeasure": f"SELECT hivemall.fmeasure(truth, rec) {LISTS}",
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
