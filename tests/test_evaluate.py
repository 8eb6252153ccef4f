"""duckrank.evaluate: run and qrels tables in, one column per metric out.

Expected values: the Hivemall guide's table (shared/seeds/001) for its dummy_rec / dummy_truth
tables (every user: rec = [1, 3, 2, 6], truth = [1, 2, 4]), and hand calculations written out in
each test.
"""

from __future__ import annotations

import math

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import duckrank
from duckrank.evaluation import COUNT_COLUMNS, known_metric_names, parse_metric
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
    assert result.loc[0, list(COUNT_COLUMNS)].tolist() == [3, 0, 0]
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
    result = duckrank.evaluate(run, qrels, ["hitrate"], by="system")
    assert result["system"].tolist() == ["A", "B"]
    # A: users 1 and 2 scored (both hit), 3 unjudged, 4 unranked.
    # B: user 1 scored (misses: it recommends 11), 9 unjudged, 2 and 4 unranked.
    assert result[list(COUNT_COLUMNS)].values.tolist() == [[2, 1, 1], [1, 1, 2]]
    assert result["hitrate"].tolist() == [1.0, 0.0]


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
    assert result["ndcg"][0] == pytest.approx(dcg / idcg, abs=1e-12)
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
    gives the value of calling the SQL function on the same lists."""
    con = duckrank.connect()
    requests = [
        f"{name}@3" if by_name(name).cutoff else name for name in known_metric_names()
    ]
    result = duckrank.evaluate(_dummy_rec(), _dummy_truth(), requests, per_user=True,
                               connection=con)
    truths = {"list": "['1', '2', '4']", "map": "MAP {'1': 1.0, '2': 1.0, '4': 1.0}"}
    for request in requests:
        parsed = parse_metric(request)
        k = ", 3" if parsed.k else ""
        truth = truths[parsed.truth_form(graded=False)]
        direct = con.execute(
            f"SELECT {parsed.name}(['1', '3', '2', '6'], {truth}{k})"
        ).fetchall()[0][0]
        value = result[request][0]
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
        ("mrr(color=red)", "unknown option 'color=red'; mrr takes: none"),
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
    with pytest.raises(ValueError, match="the 'item' ids are BIGINT in the run but VARCHAR"):
        duckrank.evaluate(_dummy_rec(), qrels, ["ndcg"])


def test_conflicting_grades_are_an_error() -> None:
    qrels = pd.DataFrame({"user": [1, 1], "item": [1, 1], "grade": [1, 2]})
    with pytest.raises(ValueError, match="two different grades to query 1, item 1"):
        duckrank.evaluate(_dummy_rec(), qrels, ["ndcg"])


def test_a_given_connection_is_left_without_the_temporary_views() -> None:
    con = duckrank.connect()
    before = con.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchall()
    duckrank.evaluate(_dummy_rec(), _dummy_truth(), ["ndcg"], connection=con)
    after = con.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchall()
    assert before == after
