"""duckrank.evaluate: run and qrels tables in, one column per metric out.

Expected values: the Hivemall guide's table (shared/seeds/001) for its dummy_rec / dummy_truth
tables (every user: rec = [1, 3, 2, 6], truth = [1, 2, 4]), and hand calculations written out in
each test.
"""

from __future__ import annotations

import math
import re
from unittest import mock

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import duckrank
from duckrank.evaluation import (
    COUNT_COLUMNS,
    UnrankedQueries,
    known_metric_names,
    parse_metric,
    parse_metrics,
)
from duckrank.evaluation import api as evaluation_api
from duckrank.evaluation import planning as evaluation_planning
from duckrank.metrics import METRICS, by_name

GUIDE = {  # the guide's table: top-4 (max_k) and top-2
    "recall@4": 0.6666666666666666, "recall@2": 0.3333333333333333,
    "precision@4": 0.5, "precision@2": 0.5,
    "map@4": 0.5555555555555555, "map@2": 0.3333333333333333,
    "auc@4": 0.75, "auc@2": 1.0,
    "mrr@4": 1.0, "mrr@2": 1.0,
    "ndcg@4": 0.7039180890341349, "ndcg@2": 0.6131471927654585,
}


def _dummy_rec() -> pd.DataFrame:
    rows = [(u, i, s) for u in (1, 2, 3) for i, s in ((1, 10.0), (3, 8.0), (2, 6.0), (6, 2.0))]
    return pd.DataFrame(rows, columns=["user", "item", "score"])


def _dummy_truth() -> pd.DataFrame:
    return pd.DataFrame([(u, i) for u in (1, 2, 3) for i in (1, 2, 4)], columns=["user", "item"])


def test_guide_example_from_pandas() -> None:
    result = duckrank.evaluate(_dummy_rec(), _dummy_truth(), list(GUIDE))
    assert list(result.columns) == [*COUNT_COLUMNS, *GUIDE]
    assert result.loc[0, list(COUNT_COLUMNS)].tolist() == [3, 0, 0, 0]
    for request, value in GUIDE.items():
        assert result[request][0] == pytest.approx(value, abs=1e-12), request


@pytest.mark.parametrize("convert", [pl.from_pandas, pa.Table.from_pandas,
                                     lambda df: pa.Table.from_pandas(df).to_reader()])
def test_polars_and_arrow_inputs(convert) -> None:
    result = duckrank.evaluate(convert(_dummy_rec()), convert(_dummy_truth()), ["ndcg@2"])
    assert result["ndcg@2"][0] == pytest.approx(GUIDE["ndcg@2"], abs=1e-12)


def test_per_user_and_default_query_column() -> None:
    run = _dummy_rec().rename(columns={"user": "query"})
    qrels = _dummy_truth().rename(columns={"user": "query"}).assign(grade=1)
    result = duckrank.evaluate(run, qrels, ["mrr@2", "ndcg@2"], per_user=True)
    assert list(result.columns) == ["query", "mrr@2", "ndcg@2"]
    assert result["query"].tolist() == [1, 2, 3]
    assert result["ndcg@2"].tolist() == pytest.approx([GUIDE["ndcg@2"]] * 3, abs=1e-12)


def test_configurable_column_names() -> None:
    run = _dummy_rec().rename(columns={"user": "uid", "item": "sku", "score": "p"})
    qrels = _dummy_truth().rename(columns={"user": "uid", "item": "sku"}).assign(rel=1)
    result = duckrank.evaluate(run, qrels, "map@4", query_column="uid", item_column="sku",
                               score_column="p", grade_column="rel")
    assert result["map@4"][0] == pytest.approx(GUIDE["map@4"], abs=1e-12)


def test_counts_of_scored_unjudged_and_unranked_queries_by_system() -> None:
    # System A ranks users 1, 2, 3; system B ranks users 1 and 9. Judgments: users 1, 2, 4.
    run = pd.DataFrame({
        "system": ["A"] * 3 + ["B"] * 2,
        "user": [1, 2, 3, 1, 9],
        "item": [10, 20, 30, 11, 90],
        "score": [1.0] * 5,
    })
    qrels = pd.DataFrame({"user": [1, 2, 4], "item": [10, 20, 40], "grade": [1, 1, 1]})
    with pytest.warns(UnrankedQueries, match="3 judged queries"):
        result = duckrank.evaluate(run, qrels, ["hitrate"], by="system")
    assert result["system"].tolist() == ["A", "B"]
    # A: users 1 and 2 scored (both hit), 3 unjudged, 4 unranked.
    # B: user 1 scored (misses: it recommends 11), 9 unjudged, 2 and 4 unranked.
    assert result[list(COUNT_COLUMNS)].values.tolist() == [[2, 1, 1, 0], [1, 1, 2, 0]]
    # An unranked judged user scores 0 (duckrank's convention): A (1 + 1 + 0) / 3, B 0 / 3;
    # trec_eval's leaves them out: A (1 + 1) / 2, B 0 / 1.
    assert result["hitrate"].tolist() == [2 / 3, 0.0]
    with pytest.warns(UnrankedQueries, match="left out of the means"):
        trec = duckrank.evaluate(run, qrels, ["hitrate"], by="system", convention="trec_eval")
    assert trec["hitrate"].tolist() == [1.0, 0.0]


def test_tied_scores_keep_every_item_in_trec_eval_order() -> None:
    """Items 5, 7 and 6 tie at 0.5: every one is kept, in descending item order (7, 6, 5), after
    item 1 (0.9). The only relevant item, 5, is at rank 4: mrr = 1/4, ndcg = 1/log2(5)."""
    run = pd.DataFrame({"query": ["q"] * 4, "item": [5, 7, 1, 6], "score": [0.5, 0.5, 0.9, 0.5]})
    qrels = pd.DataFrame({"query": ["q"], "item": [5], "grade": [1]})
    result = duckrank.evaluate(run, qrels, ["mrr", "ndcg", "precision"], per_user=True)
    assert result["mrr"][0] == 0.25
    assert result["ndcg"][0] == pytest.approx(1 / math.log2(5), abs=1e-15)
    assert result["precision"][0] == 0.25  # 1 hit in 4: no tied item was dropped


def _graded_ndcg_available() -> bool:
    return any(m.name == "ndcg" and m.truth_type.upper().startswith("MAP") for m in METRICS)


@pytest.mark.skipif(not _graded_ndcg_available(), reason="no graded ndcg in the registry yet")
def test_graded_qrels_feed_a_map_to_graded_metrics_and_grade_above_zero_to_binary_ones() -> None:
    """rec = [a, b, c], grades a: 0, b: 2, c: 1.
    graded ndcg (gain 2^g - 1, discount log2(i + 1)):
      DCG = 0/1 + 3/log2(3) + 1/log2(4) = 3/log2(3) + 0.5; IDCG = 3/1 + 1/log2(3).
    binary average precision over {b, c}: (1/2 + 2/3) / 2 = 7/12."""
    run = pd.DataFrame({"query": [1, 1, 1], "item": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"query": [1, 1, 1], "item": ["a", "b", "c"], "grade": [0, 2, 1]})
    result = duckrank.evaluate(run, qrels, ["ndcg", "map"])
    dcg = 3 / math.log2(3) + 0.5
    idcg = 3 + 1 / math.log2(3)
    # The column names the gain the graded qrels chose (docs/integrations.md, "Graded qrels").
    assert list(result.columns)[-2:] == ["ndcg(gain=exponential)", "map"]
    assert result["ndcg(gain=exponential)"][0] == pytest.approx(dcg / idcg, abs=1e-12)
    assert result["map"][0] == pytest.approx(7 / 12, abs=1e-12)


def test_qrels_without_grade_column_count_every_row_as_relevant() -> None:
    result = duckrank.evaluate(_dummy_rec(), _dummy_truth(), ["recall@4"])
    assert result["recall@4"][0] == pytest.approx(GUIDE["recall@4"], abs=1e-12)


def test_grade_zero_rows_are_not_relevant() -> None:
    """Judged non-relevant items (grade 0) are not hits: user 1 of the guide with items 1, 2, 4
    relevant and item 3 judged 0 keeps the guide's recall@4 = 2/3."""
    qrels = _dummy_truth().assign(grade=1)
    qrels = pd.concat([qrels, pd.DataFrame({"user": [1], "item": [3], "grade": [0]})])
    result = duckrank.evaluate(_dummy_rec(), qrels, ["recall@4"], per_user=True)
    assert result["recall@4"].tolist() == pytest.approx([2 / 3] * 3, abs=1e-12)


def test_every_usable_metric_in_the_registry_runs_from_its_name() -> None:
    """Generic over the records: each metric name and alias that qrels can feed is accepted and
    gives the value of calling the SQL function on the same lists (the qrels name one subtopic,
    which the intent-aware measures read)."""
    con = duckrank.connect()
    requests = [
        f"{name}@3" if by_name(name).cutoff else name for name in known_metric_names()
    ]
    result = duckrank.evaluate(_dummy_rec(), _dummy_truth().assign(subtopic="s"), requests,
                               per_user=True, connection=con)
    truths = {"list": "['1', '2', '4']", "map": "MAP {'1': 1.0, '2': 1.0, '4': 1.0}",
              "subtopics": "[{'subtopic': 's', 'item': i, 'grade': 1} for i in ['1', '2', '4']]"}
    for request in requests:
        parsed = parse_metric(request)
        k = ", 3" if parsed.k else ""
        truth = truths[parsed.truth_form(graded=False)]
        direct = con.execute(
            f"SELECT {parsed.name}(['1', '3', '2', '6'], {truth}{k})"
        ).fetchall()[0][0]
        value = result[parsed.column(graded=False)][0]  # err@3 is err(max_grade=4)@3
        if isinstance(direct, str):  # trec_eval's relstring
            assert value == direct, request
            continue
        assert (value is None or math.isnan(value)) if direct is None else (
            value == pytest.approx(float(direct), abs=1e-12)
        ), request


def test_parse_metric_reads_names_aliases_k_and_options() -> None:
    request = parse_metric("MAP@100")
    assert (request.label, request.name, request.k, request.options) == (
        "MAP@100", "average_precision", 100, ()
    )
    assert parse_metric("ndcg").k is None
    assert parse_metric("ndcg@all").k is None
    options = {o.name: o for m in METRICS if m.name == "ndcg" for o in m.options}
    if "gain" in options:
        assert parse_metric("ndcg(gain=linear)@10").options == (("gain", "linear"),)


@pytest.mark.parametrize(
    ("request_text", "message"),
    [
        ("nope@10", "unknown metric 'nope'; known metrics: .*average_precision"),
        ("ndcg@0", "the cut-off after @ must be a positive integer or 'all', got '0'"),
        ("ndcg@ten", "got 'ten'"),
        ("mrr(color=red)", "unknown option 'color=red'; mrr takes: min_grade"),
        ("spearman(color=red)", "unknown option 'color=red'; spearman takes: none"),
        ("spearman@10", "spearman takes no cut-off"),
        ("ndcg@10;drop", "the cut-off after @ must be a positive integer"),
        ("ndcg@10; drop table x", "cannot read metric"),
        ("ndcg'); select 1; --", "cannot read metric"),
    ],
)
def test_bad_requests_are_clear_errors(request_text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_metric(request_text)


def test_missing_column_lists_the_columns() -> None:
    with pytest.raises(ValueError, match="the run has no score column 'score'; its columns are: "
                                         "user, item, rating"):
        duckrank.evaluate(_dummy_rec().rename(columns={"score": "rating"}), _dummy_truth(),
                          ["ndcg"])


def test_ids_of_different_kinds_are_an_error() -> None:
    qrels = _dummy_truth().assign(item=lambda df: df["item"].astype(str))
    with pytest.raises(ValueError, match=r"the item ids are BIGINT in the run \('item'\) but "
                                         r"VARCHAR in the qrels \('item'\): compare them as "
                                         r"text with ids='varchar'"):
        duckrank.evaluate(_dummy_rec(), qrels, ["ndcg"])


def test_conflicting_grades_are_an_error() -> None:
    qrels = pd.DataFrame({"user": [1, 1], "item": [1, 1], "grade": [1, 2]})
    with pytest.raises(ValueError, match="two different grades to query 1, item 1"):
        duckrank.evaluate(_dummy_rec(), qrels, ["ndcg"])


def test_a_given_connection_is_left_without_the_temporary_views() -> None:
    con = duckrank.connect()
    made = ("SELECT (SELECT count(*) FROM duckdb_views() WHERE NOT internal), "
            "(SELECT count(*) FROM duckdb_tables())")
    before = con.execute(made).fetchall()
    duckrank.evaluate(_dummy_rec(), _dummy_truth(), ["ndcg"], connection=con)
    duckrank.evaluate(_dummy_rec(), _dummy_truth(), ["ndcg"], per_user=True, connection=con)
    assert con.execute(made).fetchall() == before


# --- issue 13: labels say what was computed (20) --------------------------------------------------

def _graded_example() -> tuple[pd.DataFrame, pd.DataFrame]:
    """rec = [a, b, c] (scores 3, 2, 1); grades a: 0, b: 2, c: 1."""
    run = pd.DataFrame({"query": [1, 1, 1], "item": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"query": [1, 1, 1], "item": ["a", "b", "c"], "grade": [0, 2, 1]})
    return run, qrels


def test_graded_readings_are_named_in_the_column_and_binary_ones_asked_for_by_name() -> None:
    """Hand calculations, discount log2(i + 1) (rank 2: log2(3), rank 3: log2(4) = 2):
    graded exponential gain (2^g - 1): DCG = 3/log2(3) + 1/2, IDCG = 3 + 1/log2(3);
    graded linear gain (g): DCG = 2/log2(3) + 1/2, IDCG = 2 + 1/log2(3);
    binary, relevant = grade > 0 = {b, c}: DCG = 1/log2(3) + 1/2, IDCG = 1 + 1/log2(3);
    binary, relevant = grade >= 2 = {b}: DCG = 1/log2(3), IDCG = 1; AP = (1/2) / 1."""
    run, qrels = _graded_example()
    requests = ["ndcg", "ndcg(gain=exponential)", "ndcg(gain=linear)", "ndcg(relevance=binary)",
                "ndcg(min_grade=2)", "map(min_grade=2)", "map"]
    result = duckrank.evaluate(run, qrels, requests)
    log3 = math.log2(3)
    expected = {
        "ndcg(gain=exponential)": (3 / log3 + 0.5) / (3 + 1 / log3),
        "ndcg(gain=linear)": (2 / log3 + 0.5) / (2 + 1 / log3),
        "ndcg(relevance=binary)": (1 / log3 + 0.5) / (1 + 1 / log3),
        "ndcg(min_grade=2)": 1 / log3,
        "map(min_grade=2)": 0.5,
        "map": (1 / 2 + 2 / 3) / 2,
    }
    # ndcg and ndcg(gain=exponential) are one computation: one column, named by its gain.
    assert list(result.columns) == [*COUNT_COLUMNS, *expected]
    for column, value in expected.items():
        assert result[column][0] == pytest.approx(value, abs=1e-12), column


def test_binary_qrels_keep_the_label_as_written() -> None:
    """On 0/1 grades every gain gives 1: ndcg@2 is the binary one (the guide's 0.6131...)."""
    result = duckrank.evaluate(_dummy_rec(), _dummy_truth().assign(grade=1), ["ndcg@2"])
    assert list(result.columns) == [*COUNT_COLUMNS, "ndcg@2"]
    assert result["ndcg@2"][0] == pytest.approx(GUIDE["ndcg@2"], abs=1e-12)


@pytest.mark.parametrize(
    ("request_text", "message"),
    [
        ("ndcg(gain=linear,gain=exponential)@10", "option gain is given twice"),
        # relevance= picks between a LIST and a MAP form: spearman has only the MAP one.
        ("spearman(relevance=graded)", "unknown option 'relevance=graded'; spearman takes: none"),
        ("spearman(min_grade=1)", "unknown option 'min_grade=1'; spearman takes: none"),
        ("ndcg(relevance=graded,min_grade=2)", "min_grade sets what counts as relevant"),
        ("ndcg(min_grade=x)", "option min_grade must be a number, got 'x'"),
    ],
)
def test_bad_evaluation_options_are_clear_errors(request_text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_metric(request_text)


# --- errors name evaluate()'s arguments (17) ------------------------------------------------------

def test_err_max_grade_hint_in_python_syntax_before_any_sql() -> None:
    """Grades 1..5 with err's default max_grade 4: the hint is the Python request to write."""
    qrels = _dummy_truth().assign(grade=[1, 5, 2] * 3)
    with pytest.raises(ValueError) as raised:
        duckrank.evaluate(_dummy_rec(), qrels, ["err@4"])
    message = str(raised.value)
    assert "the qrels have grade 5 (query " in message
    assert "above err's max_grade 4; raise it: metrics=['err(max_grade=5)@4']" in message
    assert "--" not in message and ":=" not in message
    # The hint works: max_grade 5 reads every grade.
    assert duckrank.evaluate(_dummy_rec(), qrels, ["err(max_grade=5)@4"])["scored"][0] == 3


def test_errors_name_python_arguments_not_flags() -> None:
    run = _dummy_rec().rename(columns={"user": "uid"})
    with pytest.raises(ValueError, match="query_column=") as raised:
        duckrank.evaluate(run, _dummy_truth(), ["ndcg"])
    assert "--" not in str(raised.value)
    with pytest.raises(ValueError, match=r"name it with score_column=\)") as raised:
        duckrank.evaluate(_dummy_rec().rename(columns={"score": "s"}), _dummy_truth(), ["ndcg"])
    with pytest.raises(ValueError, match=r"by='user': that is the query column; for one row per "
                                         r"query use per_user=True"):
        duckrank.evaluate(_dummy_rec(), _dummy_truth(), ["ndcg"], by="user")


# --- dropped rows are counted (18) ----------------------------------------------------------------

def test_rows_with_null_ids_or_scores_are_counted_as_dropped() -> None:
    """Run: (1, a, 3), (1, b, NULL score), (NULL query, c), (2, NULL item): 3 run rows dropped,
    so query 2 has no list (it is neither scored nor unjudged). Qrels: (1, a), (NULL query, a),
    (1, NULL item): 2 dropped. Query 1 ranks its one relevant item first: mrr 1."""
    run = pd.DataFrame({"query": [1, 1, None, 2], "item": ["a", "b", "c", None],
                        "score": [3.0, None, 1.0, 1.0]})
    qrels = pd.DataFrame({"query": [1, None, 1], "item": ["a", "a", None], "grade": [1, 1, 1]})
    with pytest.warns(duckrank.evaluation.DroppedRows,
                      match="left out 3 run rows with a NULL query, item or score and 2 qrels "
                            "rows with a NULL query or item"):
        result = duckrank.evaluate(run, qrels, ["mrr"])
    assert result[list(COUNT_COLUMNS)].values.tolist() == [[1, 0, 0, 5]]
    assert result["mrr"][0] == 1.0


def test_dropped_rows_by_group_count_the_groups_run_rows_and_every_qrels_row() -> None:
    """System A drops 1 run row, B none; the 1 dropped qrels row counts in both groups (each
    group's evaluation left it out). B's only list is for unjudged query 9."""
    run = pd.DataFrame({"system": ["A", "A", "B"], "query": pd.array([1, None, 9], "Int64"),
                        "item": [1, 2, 3], "score": [1.0, 1.0, 1.0]})
    qrels = pd.DataFrame({"query": [1, 1], "item": pd.array([1, None], "Int64"),
                          "grade": [1, 1]})
    with pytest.warns(duckrank.evaluation.DroppedRows):
        result = duckrank.evaluate(run, qrels, ["mrr"], by="system")
    assert result[["system", *COUNT_COLUMNS]].values.tolist() == [
        ["A", 1, 0, 0, 2], ["B", 0, 1, 1, 1]
    ]


# --- per-file columns, id casts, rank columns (19) ------------------------------------------------

def test_per_file_column_names_and_ids_compared_as_text() -> None:
    """A run with BIGINT user_id / movie / pred against qrels with VARCHAR user / item: the
    guide's lists again, so the guide's ndcg@2."""
    run = _dummy_rec().rename(columns={"user": "user_id", "item": "movie", "score": "pred"})
    qrels = _dummy_truth().astype(str)
    columns = {"run_columns": {"query": "user_id", "item": "movie", "score": "pred"},
               "qrels_columns": {"query": "user"}}
    with pytest.raises(ValueError, match=r"the query ids are BIGINT in the run \('user_id'\) but "
                                         r"VARCHAR in the qrels \('user'\): compare them as text "
                                         r"with ids='varchar'"):
        duckrank.evaluate(run, qrels, ["ndcg@2"], **columns)
    result = duckrank.evaluate(run, qrels, ["ndcg@2"], per_user=True, ids="varchar", **columns)
    assert list(result.columns) == ["user_id", "ndcg@2"]
    assert result["user_id"].tolist() == ["1", "2", "3"]
    assert result["ndcg@2"].tolist() == pytest.approx([GUIDE["ndcg@2"]] * 3, abs=1e-12)


def test_per_file_names_win_over_the_shared_ones() -> None:
    run = _dummy_rec().rename(columns={"user": "uid"})
    result = duckrank.evaluate(run, _dummy_truth(), ["ndcg@2"], query_column="user",
                               run_columns={"query": "uid"})
    assert result["ndcg@2"][0] == pytest.approx(GUIDE["ndcg@2"], abs=1e-12)


def test_rank_column_ranks_ascending_with_ties_broken_by_item_descending() -> None:
    """The guide's rec as ranks 1..4: the guide's ndcg@2. Query 2: items 5 and 7 share rank 1
    (tie broken by item, descending, as for scores: 7 then 5); the relevant 5 is second: mrr 1/2."""
    run = pd.DataFrame({"user": [1, 1, 1, 1, 2, 2], "item": [1, 3, 2, 6, 5, 7],
                        "pos": [1, 2, 3, 4, 1, 1]})
    qrels = pd.DataFrame({"user": [1, 1, 1, 2], "item": [1, 2, 4, 5]})
    result = duckrank.evaluate(run, qrels, ["ndcg@2", "mrr"], per_user=True, rank_column="pos")
    assert result["ndcg@2"][0] == pytest.approx(GUIDE["ndcg@2"], abs=1e-12)
    assert result["mrr"].tolist() == [1.0, 0.5]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"score_column": "score", "rank_column": "pos"},
         "ranked by a score column or by a rank column, not both"),
        ({"run_columns": {"grade": "g"}},
         "run_columns=: unknown role 'grade'; the run roles are: query, item, score, rank"),
        ({"ids": "text"}, "ids= must be one of typed, varchar, got 'text'"),
    ],
)
def test_bad_column_arguments_are_clear_errors(arguments: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        duckrank.evaluate(_dummy_rec(), _dummy_truth(), ["ndcg"], **arguments)


def test_text_scores_are_an_error() -> None:
    """A text score would rank '9' above '10'."""
    run = _dummy_rec().assign(score=lambda df: df["score"].astype(str))
    with pytest.raises(ValueError, match="the run's score column 'score' is VARCHAR: it must be "
                                         "numeric"):
        duckrank.evaluate(run, _dummy_truth(), ["ndcg"])


# --- memory: lists built one range of query ids at a time (14) ------------------------------------

def _random_tables(seed: int, ids: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n = 2_000
    users = rng.integers(0, 150, n)
    run = pd.DataFrame({
        "system": rng.choice(["A", "B"], n),
        "user": users if ids == "bigint" else [f"u{u}" for u in users],
        "item": rng.integers(0, 30, n), "score": rng.integers(0, 5, n).astype(float),
    }).drop_duplicates(["system", "user", "item"])
    judged = rng.integers(20, 170, 600)
    qrels = pd.DataFrame({
        "user": judged if ids == "bigint" else [f"u{u}" for u in judged],
        "item": rng.integers(0, 30, 600), "grade": rng.integers(0, 4, 600),
    }).drop_duplicates(["user", "item"])
    return run, qrels


@pytest.mark.parametrize("ids", ["bigint", "varchar"])
def test_ranges_of_query_ids_give_the_single_pass_result(monkeypatch, ids: str) -> None:
    """About 2,600 input rows in ranges of 700: every count, mean and per-query row equals the
    evaluation in one range (itself checked against the guide and trec_eval), and the per-query
    rows stay ordered by query."""
    run, qrels = _random_tables(13, ids)
    requests = ["ndcg@5", "map", "recall(min_grade=2)@10"]
    whole = duckrank.evaluate(run, qrels, requests, by="system")
    whole_rows = duckrank.evaluate(run, qrels, requests, by="system", per_user=True)

    ranges: list[int] = []
    split = evaluation_api._buckets

    def spy(*args):
        found = split(*args)
        ranges.append(len(found))
        return found

    monkeypatch.setattr(evaluation_planning, "ROWS_PER_BUCKET", 700)
    monkeypatch.setattr(evaluation_api, "_buckets", spy)
    parts = duckrank.evaluate(run, qrels, requests, by="system")
    part_rows = duckrank.evaluate(run, qrels, requests, by="system", per_user=True)
    assert min(ranges) >= 3
    pd.testing.assert_frame_equal(parts, whole, check_exact=False, rtol=1e-12, atol=1e-15)
    pd.testing.assert_frame_equal(part_rows, whole_rows, check_exact=False, rtol=1e-12)
    keys = list(zip(part_rows["user"], part_rows["system"], strict=True))
    assert keys == sorted(keys)


def test_uhugeint_against_signed_ids_is_an_error_naming_the_cast() -> None:
    """DuckDB compares UHUGEINT with HUGEINT as DOUBLE, where 2^64 - 1 and 2^64 are equal: the
    evaluation refuses the pair instead of joining such ids, and compares them exactly as text
    with ids='varchar' (query 2^64 - 1 ranks its judged item first: mrr 1)."""
    con = duckrank.connect()
    run = con.sql("SELECT 18446744073709551615::UHUGEINT AS query, 1 AS item, 1.0 AS score")
    qrels = con.sql("SELECT 18446744073709551616::HUGEINT AS query, 1 AS item UNION ALL "
                    "SELECT 18446744073709551615::HUGEINT, 1")
    with pytest.raises(ValueError, match="the query ids are UHUGEINT in the run"):
        duckrank.evaluate(run, qrels, ["mrr"], connection=con)
    result = duckrank.evaluate(run, qrels, ["mrr"], connection=con, ids="varchar")
    assert result[list(COUNT_COLUMNS)].values.tolist() == [[1, 0, 1, 0]]
    assert result["mrr"][0] == 0.5  # 2^64 - 1 ranked (1.0), 2^64 unranked (0)


# --- cut-off lists and ranges (issue 15) ---------------------------------------------------------

def test_cutoff_lists_and_ranges_give_one_column_per_k_in_order() -> None:
    """ndcg@4,2 is ndcg@4 then ndcg@2, recall@1..3 recall@1, 2, 3, each the value of its own
    request: the guide's table for ndcg@4 and ndcg@2; by hand for rec = [1, 3, 2, 6] and
    truth = {1, 2, 4}: recall@1 = recall@2 = 1/3 (item 1), recall@3 = 2/3 (items 1 and 2);
    precision(denominator=k)@6 = 2/6 (2 hits, 6 places of which 2 are past the list's end)."""
    result = duckrank.evaluate(_dummy_rec(), _dummy_truth(),
                               ["ndcg@4,2", "recall@1..3", "precision(denominator=k)@2,6"])
    assert list(result.columns)[len(COUNT_COLUMNS):] == [
        "ndcg@4", "ndcg@2", "recall@1", "recall@2", "recall@3",
        "precision(denominator=k)@2", "precision(denominator=k)@6",
    ]
    assert result["ndcg@4"][0] == pytest.approx(GUIDE["ndcg@4"], abs=1e-12)
    assert result["ndcg@2"][0] == pytest.approx(GUIDE["ndcg@2"], abs=1e-12)
    assert result[["recall@1", "recall@2", "recall@3"]].iloc[0].tolist() == pytest.approx(
        [1 / 3, 1 / 3, 2 / 3], abs=1e-12)
    assert result["precision(denominator=k)@6"][0] == pytest.approx(2 / 6, abs=1e-12)


@pytest.mark.parametrize(("request_text", "message"), [
    ("ndcg@5..1", r"metric 'ndcg@5\.\.1': the cut-off '5\.\.1' is not a positive integer or a "
                  r"range low\.\.high"),
    ("ndcg@0,5", "metric 'ndcg@0,5': the cut-off '0' is not a positive integer"),
    ("ndcg@1,,5", "metric 'ndcg@1,,5': cannot read the cut-off ''"),
    ("ndcg@1,all", "metric 'ndcg@1,all': cannot read the cut-off 'all'"),
    ("ndcg@1..3,2", "metric 'ndcg@1..3,2': the cut-off 2 is given twice"),
    ("ndcg@1..20000", "more than 10,000 cut-offs"),
])
def test_bad_cutoff_lists_name_the_request(request_text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_metrics([request_text])


# --- convention="trec_eval" (issue 16) -----------------------------------------------------------

def test_trec_eval_convention_against_pytrec_eval(tmp_path) -> None:
    """Means over the judged queries of the run equal trec_eval's (pytrec-eval-terrier: P, map,
    ndcg without and with a cut-off, recip_rank) on graded qrels with a query whose judgments
    hold no relevant item (trec_eval scores it 0 and averages it in), a list shorter than k
    (P divides by k), and scores equal as C floats (ranked by docid, descending)."""
    import pytrec_eval

    qrels = {"q1": {"a": 2, "b": 0, "c": 1, "z": 3}, "q2": {"a": 0, "d": -1}, "q3": {"e": 1}}
    scores = {"q1": {"a": 1.0, "b": 1.0 + 1e-10, "c": 0.5, "e": 0.25},
              "q2": {"a": 3.0, "d": 2.0}, "q3": {"e": 1.0, "a": 1.0}}
    run = pd.DataFrame([(q, d, s) for q, docs in scores.items() for d, s in docs.items()],
                       columns=["query", "item", "score"])
    judged = pd.DataFrame([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
                          columns=["query", "item", "grade"])
    names = {"P_10": "precision@10", "map": "map", "ndcg": "ndcg(gain=linear)",
             "ndcg_cut_3": "ndcg(gain=linear)@3", "recip_rank": "mrr"}
    per_query = pytrec_eval.RelevanceEvaluator(
        qrels, {"P.10", "map", "ndcg", "ndcg_cut.3", "recip_rank"}).evaluate(scores)
    result = duckrank.evaluate(run, judged, ["precision@10", "map", "ndcg", "ndcg@3", "mrr"],
                               convention="pytrec_eval")
    assert result["scored"][0] == 3
    for theirs, ours in names.items():
        expected = sum(row[theirs] for row in per_query.values()) / 3
        assert result[ours][0] == pytest.approx(expected, abs=1e-12), ours
    # duckrank's own convention leaves q2 (no relevant item) out of map's mean.
    own = duckrank.evaluate(run, judged, ["map"])
    assert own["map"][0] == pytest.approx((per_query["q1"]["map"] + per_query["q3"]["map"]) / 2,
                                          abs=1e-12)


def test_trec_eval_10_compares_scores_as_doubles() -> None:
    """trec_eval 10.0 ranks by the score read as a double, 9.0.8 (pytrec-eval-terrier) as a C
    float. By hand: a (grade 1) scores 1.0 and b (unjudged) 1.0 - 1e-10, equal as floats, where
    ties go by docid descending (b, then a: reciprocal rank 1/2) and apart as doubles (a first:
    1)."""
    run = pd.DataFrame({"query": ["q1", "q1"], "item": ["a", "b"], "score": [1.0, 1.0 - 1e-10]})
    judged = pd.DataFrame({"query": ["q1"], "item": ["a"], "grade": [1]})
    ten = duckrank.evaluate(run, judged, ["mrr"], convention="trec_eval")
    nine = duckrank.evaluate(run, judged, ["mrr"], convention="pytrec_eval")
    assert (ten["mrr"][0], nine["mrr"][0]) == (1.0, 0.5)


def test_unknown_convention_is_an_error() -> None:
    with pytest.raises(ValueError, match="convention='trec': the conventions are duckrank, "
                                         "trec_eval"):
        duckrank.evaluate(_dummy_rec(), _dummy_truth(), ["map"], convention="trec")


# --- issue 19, item 4: long tables ranked by their top K ------------------------------------------

def _tied_long_run(queries: int = 40, rows: int = 60, seed: int = 19) -> pa.Table:
    """``rows`` run rows per query with scores from 6 values (many ties, including -0.0 against
    0.0 and NaN), item ids from 0 to 29 (items repeated within a query) and no NULL (dropped
    rows are tested above)."""
    rng = np.random.default_rng(seed)
    scores = rng.choice([1.0, 0.5, 0.0, -0.0, float("nan"), 2.0], queries * rows)
    return pa.table({"user": np.repeat(np.arange(queries), rows),
                     "item": rng.integers(0, 30, queries * rows),
                     "score": pa.array(scores, from_pandas=False)})


def _ranked_queries(con, run, qrels, metrics: list[str]) -> list[str]:
    """The SQL of each range of query ids that evaluate(per_user=True) runs."""
    made = []
    scored_sql = evaluation_api._scored_sql

    def spy(*args):
        made.append(scored_sql(*args)[0])
        return scored_sql(*args)

    with mock.patch.object(evaluation_api, "_scored_sql", spy), \
            duckrank.evaluation.evaluation(con, run, qrels, metrics, per_user=True):
        return made


CUTOFF_METRICS = ["ndcg@3", "map@3", "P@3", "recall@5", "mrr@5", "auc@5", "hitrate@2",
                  "ndcg(gain=linear)@4", "err@5"]


@pytest.fixture(params=["native", "sql"])
def ranking_con(request) -> tuple[duckdb.DuckDBPyConnection, str]:
    """A connection with the native step (which ranks the top K with duckrank_top_k) or
    without it (DuckDB's max over {score, item} structs), and the aggregate its SQL calls."""
    connection = duckrank.connect(native=request.param == "native")
    yield connection, "duckrank_top_k(" if request.param == "native" else "max({'k'"
    connection.close()


@pytest.mark.parametrize("graded", [False, True])
def test_cut_off_metrics_rank_only_the_top_k_and_give_the_whole_lists_values(ranking_con,
                                                                             graded) -> None:
    """Every metric has a cut-off and the lists are 12x the largest (5): evaluate ranks each
    query's top 5 (duckrank_top_k, or DuckDB's max over {score, item} without the native step)
    instead of sorting its 60 rows. The expected values are the documented definition: each
    metric of the query's whole list (to_ordered_list by score, then by the item's text,
    descending) and the qrels' truth, computed here in SQL row by row; ties (equal scores, -0.0
    against 0.0, NaN, repeated items) must come out in the same order."""
    con, aggregate = ranking_con
    run = _tied_long_run()
    rng = np.random.default_rng(7)
    qrels = pd.DataFrame({"user": np.repeat(np.arange(40), 8), "item": rng.integers(0, 30, 320),
                          "grade": rng.integers(1, 4, 320) if graded else 1})
    qrels = qrels.drop_duplicates(["user", "item"])
    metrics = CUTOFF_METRICS if graded else [m for m in CUTOFF_METRICS if "gain" not in m]
    assert all(aggregate in sql for sql in _ranked_queries(con, run, qrels, metrics))

    got = duckrank.evaluate(run, qrels, metrics, per_user=True, connection=con)
    con.register("run_table", run)
    con.register("qrels_table", qrels)
    truth = ("map_from_entries(list({'key': item, 'value': grade::DOUBLE}))" if graded
             else "list(item)")
    calls = []
    for request in metrics:
        parsed = parse_metric(request)
        options = "".join(f", {name} := '{value}'" for name, value in parsed.options)
        calls.append(f"{parsed.name}(rec, truth, {parsed.k}{options})")
    expected = con.execute(f"""
        WITH r AS (SELECT user, to_ordered_list(item, {{'k': score, 't': item::VARCHAR}},
                                                '-reverse') AS rec FROM run_table GROUP BY user),
             t AS (SELECT user, {truth} AS truth FROM qrels_table GROUP BY user)
        SELECT user, {', '.join(calls)} FROM (SELECT * FROM r JOIN t USING (user)) ORDER BY user
    """).df()
    assert got["user"].tolist() == expected["user"].tolist()
    for index, request in enumerate(metrics, start=1):  # the columns in request order
        assert got.iloc[:, index].tolist() == pytest.approx(expected.iloc[:, index].tolist(),
                                                            abs=1e-12, nan_ok=True), request


@pytest.mark.parametrize(("metrics", "native", "ranked_by"), [
    (["ndcg@5", "map"], True, "to_ordered_list("), (["ndcg@20"], False, "to_ordered_list("),
    (["ndcg@20"], True, "duckrank_top_k("),
])
def test_the_whole_list_is_ranked_without_a_cut_off_or_with_short_lists(metrics, native,
                                                                       ranked_by) -> None:
    """A metric without a cut-off reads the whole list; without the native step, lists under
    4x the cut-off (60 rows, k = 20) sort faster than DuckDB's heap of k keeps them: both take
    to_ordered_list. duckrank_top_k grows its heap with the rows, so it ranks short lists too."""
    run = _tied_long_run()
    qrels = pd.DataFrame({"user": [0, 1], "item": [3, 4]})
    con = duckrank.connect(native=native)
    try:
        assert all(ranked_by in sql for sql in _ranked_queries(con, run, qrels, metrics))
    finally:
        con.close()


def test_conflicts_are_found_among_queries_of_one_grade(con) -> None:
    """Queries 0 and 1 have one grade each (no conflict possible), query 2 has two grades on
    different items (no conflict), query 3 gives item 5 the grades 1 and 2: the error names
    it."""
    run = _tied_long_run(queries=4)
    qrels = pd.DataFrame({"user": [0, 0, 1, 2, 2, 3, 3, 3], "item": [1, 1, 2, 3, 4, 5, 5, 6],
                          "grade": [1, 1, 2, 1, 2, 1, 2, 1]})
    with pytest.raises(ValueError, match="two different grades to query 3, item 5"):
        duckrank.evaluate(run, qrels, ["ndcg@3"], connection=con)
    fine = duckrank.evaluate(run, qrels[qrels["user"] < 3], ["ndcg@3"], connection=con)
    assert fine["scored"][0] == 3 and fine["unranked"][0] == 0  # 3 judged queries, all ranked


def test_repeated_judgments_count_once_without_a_distinct_pass(con) -> None:
    """Binary qrels are no longer made distinct before the truth lists are built (a LIST truth
    is read as a set, docs/reference.md): qrels with every other judgment repeated give the
    values of the qrels without repeats, for metrics that count the relevant items (recall,
    map, num_rel, bpref, Rprec) as well as the others. Expected: the same evaluation of the
    qrels without repeats."""
    rng = np.random.default_rng(3)
    run = pd.DataFrame({"user": np.repeat(np.arange(20), 15), "item": rng.integers(0, 20, 300),
                        "score": rng.random(300)})
    qrels = pd.DataFrame({"user": np.repeat(np.arange(20), 6),
                          "item": rng.integers(0, 20, 120)}).drop_duplicates()
    repeated = pd.concat([qrels, qrels.iloc[::2]])
    metrics = ["P@5", "recall@5", "map", "ndcg", "mrr", "auc", "num_rel", "bpref", "Rprec"]
    for convention in ("duckrank", "trec_eval"):
        once = duckrank.evaluate(run, qrels, metrics, convention=convention, connection=con)
        twice = duckrank.evaluate(run, repeated, metrics, convention=convention, connection=con)
        assert twice.iloc[0, 4:].tolist() == pytest.approx(once.iloc[0, 4:].tolist(), abs=1e-15)


@pytest.mark.parametrize(("score_type", "item_type", "ranked_by"), [
    ("DOUBLE", "VARCHAR", "duckrank_top_k("), ("INTEGER", "UBIGINT", "duckrank_top_k("),
    ("DECIMAL(9, 3)", "BIGINT", "to_ordered_list("), ("UBIGINT", "BIGINT", "to_ordered_list("),
    ("DOUBLE", "HUGEINT", "to_ordered_list("),
])
def test_native_top_k_takes_only_the_types_it_ranks_exactly(con, score_type, item_type,
                                                            ranked_by) -> None:
    """duckrank_top_k reads keys as BIGINT or DOUBLE: a DECIMAL or UBIGINT score (which a cast
    could tie or reorder) and an item type it does not take rank as without the native step
    (3-row lists, under 4x the cut-off: to_ordered_list).
    Expected values (hand calculation): query 1 ranks items 7, 5, 6 (scores 3, 2, 1), its truth
    is 5: ndcg@2 = (1 / log2(3)) / 1 = 0.6309..."""
    con.execute(f"""CREATE TEMP TABLE typed_run AS SELECT 1 AS user, i::{item_type} AS item,
                    s::{score_type} AS score FROM (VALUES (7, 3), (5, 2), (6, 1)) t(i, s)""")
    con.execute(f"CREATE TEMP TABLE typed_qrels AS SELECT 1 AS user, 5::{item_type} AS item")
    run, qrels = con.table("typed_run"), con.table("typed_qrels")
    assert all(ranked_by in sql for sql in _ranked_queries(con, run, qrels, ["ndcg@2"]))
    result = duckrank.evaluate(run, qrels, ["ndcg@2"], connection=con)
    assert result["ndcg@2"][0] == pytest.approx(1 / math.log2(3), abs=1e-12)


@pytest.mark.parametrize(("grades", "filtered"), [([1, 2, 1], False), ([1, 0, 1], True)])
def test_truth_lists_skip_the_relevance_filter_when_every_grade_passes(con, grades,
                                                                       filtered) -> None:
    """Binary reading (min_grade=1): when the smallest grade passes, every judged item is
    relevant and the truth list is built without the FILTER; a grade 0 keeps it. Expected
    (hand calculation): the run ranks items 1, 2, 3; relevant are the items of grade >= 1, so
    recall@2 = 2/3 with every grade passing (items 1, 2 of 1, 2, 3) and 1/2 with item 2 at 0
    (item 1 of 1, 3)."""
    run = pd.DataFrame({"user": [1, 1, 1], "item": [1, 2, 3], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"user": [1, 1, 1], "item": [1, 2, 3], "grade": grades})
    metrics = ["recall(min_grade=1)@2"]
    assert all(("FILTER (WHERE g >=" in sql) == filtered
               for sql in _ranked_queries(con, run, qrels, metrics))
    result = duckrank.evaluate(run, qrels, metrics, connection=con)
    assert result[metrics[0]][0] == pytest.approx(1 / 2 if filtered else 2 / 3, abs=1e-12)


@pytest.mark.parametrize("options", [
    {"ids": "varchar"}, {"convention": "trec_eval"}, {"by": "system"},
    {"rank_column": "rank"},
])
def test_native_top_k_gives_the_sql_heaps_values_under_every_option(options) -> None:
    """VARCHAR ids, trec_eval's float scores, a by column and an ascending rank column all reach
    duckrank_top_k (through the casts evaluate makes); each must give, query by query, the values
    of the same evaluation without the native step (DuckDB's max over {key, item}, which
    test_cut_off_metrics_rank_only_the_top_k_and_give_the_whole_lists_values checks against the
    definition)."""
    run = _tied_long_run()
    scores = run["score"].to_numpy()
    run = run.append_column("system", pa.array(np.where(run["item"].to_numpy() % 2, "b", "a")))
    run = run.append_column("rank", pa.array(np.where(np.isnan(scores), 9, scores * 4)
                                              .astype("int64")))
    rng = np.random.default_rng(5)
    qrels = pd.DataFrame({"user": np.repeat(np.arange(40), 8), "item": rng.integers(0, 30, 320),
                          "grade": rng.integers(1, 3, 320)}).drop_duplicates(["user", "item"])
    metrics = ["ndcg@3", "P@3", "recall@5"]
    values = []
    for native in (True, False):
        con = duckrank.connect(native=native)
        try:
            if options.get("by") is None:  # per query (by gives one row per group)
                assert all(("duckrank_top_k(" in sql) == native
                           for sql in _ranked_queries(con, run, qrels, metrics))
            values.append(duckrank.evaluate(run, qrels, metrics, per_user="by" not in options,
                                            connection=con, **options))
        finally:
            con.close()
    pd.testing.assert_frame_equal(values[0], values[1], rtol=1e-12)


def test_gains_map_the_grades_before_a_graded_metric_reads_them() -> None:
    """ir_measures' nDCG gains= (the evaluation's gains option), by hand: grades a 1, b 2, c 3
    (unranked) under gains {1: 0, 2: 5} are gains 0, 5 and 3 (not in the map: kept); the run
    ranks a, b: DCG = 0 + 5 / log2 3, IDCG = 5 + 3 / log2 3 (linear gains)."""
    run = pd.DataFrame({"query": ["q", "q"], "item": ["a", "b"], "score": [2.0, 1.0]})
    qrels = pd.DataFrame({"query": ["q"] * 3, "item": ["a", "b", "c"], "grade": [1, 2, 3]})
    result = duckrank.evaluate(run, qrels, ["ndcg(gain=linear,gains={1:0,2:5})@10"])
    log3 = math.log2(3)
    assert result["ndcg(gain=linear,gains={1:0,2:5})@10"][0] == pytest.approx(
        (5 / log3) / (5 + 3 / log3), abs=1e-15)
    with pytest.raises(ValueError, match="gains maps the grades of the graded reading; it does "
                       "not go with relevance=binary"):
        duckrank.evaluate(run, qrels, ["ndcg(relevance=binary,gains={1:0})@10"])
