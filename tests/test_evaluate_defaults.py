"""duckrank.evaluate's defaults and readings that agree with the other entry points (issue 25:
negative grades, unranked users, ties, labels and warnings, polars, any k).

Expected values: hand calculations written out in each test, and trec_eval's own numbers
(pytrec-eval-terrier) where a test says so.
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest

import duckrank
from duckrank.evaluation import ShortLists, UngradedQrels, UnrankedQueries


def _frame(rows: list[tuple], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)


# --- 1.10: a negative grade is in the pool but unjudged, as in trec_eval and the SQL functions ---

def test_negative_grades_are_unjudged_as_in_trec_eval() -> None:
    """One query ranks a, b, c, d; the qrels: a 1, b -1, c 0 (d not judged). trec_eval reads
    b's -1 as in the pool but unjudged (pytrec-eval-terrier below), so:
    unjudged@4 (unj) = 2 / 4 (b and d), num_nonrel_judged_ret = 1 (c), bpref = 1 (a before any
    judged non-relevant), ndcg (linear gains) = 1. The old reading (b judged non-relevant:
    grade 0) gave unj 1/4 and num_nonrel_judged_ret 2."""
    import pytrec_eval

    run = _frame([("q", "a", 4.0), ("q", "b", 3.0), ("q", "c", 2.0), ("q", "d", 1.0)],
                 ["query", "item", "score"])
    qrels = _frame([("q", "a", 1), ("q", "b", -1), ("q", "c", 0)], ["query", "item", "grade"])
    result = duckrank.evaluate(run, qrels, ["unjudged@4", "num_nonrel_judged_ret", "bpref",
                                            "infap", "ndcg(gain=linear)"])
    theirs = pytrec_eval.RelevanceEvaluator(
        {"q": {"a": 1, "b": -1, "c": 0}}, {"bpref", "infAP", "num_nonrel_judged_ret"},
    ).evaluate({"q": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}})["q"]
    assert result["unjudged@4"][0] == 0.5
    assert result["num_nonrel_judged_ret"][0] == theirs["num_nonrel_judged_ret"] == 1
    assert result["bpref"][0] == pytest.approx(theirs["bpref"], abs=1e-12)
    assert result["infap"][0] == pytest.approx(theirs["infAP"], abs=1e-12)
    assert result["ndcg(gain=linear)"][0] == 1.0


def test_negative_grades_agree_with_the_sql_functions() -> None:
    """evaluate gives each judged measure what the SQL function gives for the qrels' grades as
    they are (MAP item -> grade, -2 kept): one reading at every entry point."""
    run = _frame([(1, i, 10.0 - i) for i in range(8)], ["user", "item", "score"])
    grades = {0: -2, 1: 1, 2: 0, 3: -1, 5: 2, 9: 1}
    qrels = _frame([(1, i, g) for i, g in grades.items()], ["user", "item", "grade"])
    metrics = ["unjudged@5", "num_nonrel_judged_ret", "rbp_resid", "relstring", "infap"]
    got = duckrank.evaluate(run, qrels, metrics, per_user=True)
    con = duckrank.connect()
    truth = "MAP {" + ", ".join(f"{i}: {g}.0" for i, g in grades.items()) + "}"
    rec = "[" + ", ".join(str(i) for i in range(8)) + "]"
    for request in metrics:
        name, _, k = request.partition("@")
        direct = con.execute(f"SELECT {name}({rec}, {truth}{', ' + k if k else ''})"
                             ).fetchall()[0][0]
        assert got[request][0] == (direct if isinstance(direct, str)
                                   else pytest.approx(direct, abs=1e-15)), request
    # Items 0..7: grades -2, 1, 0, -1, (none), 2, (none), (none); a negative grade is '.', an
    # item not in the qrels '-'.
    assert got["relstring"][0] == ".10.-2--"


# --- section 3: judged users the run did not rank ---------------------------------------------

def _partial_model() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Users 1..4 each judge item 1 relevant. The full model ranks item 1 first for every user
    (ndcg@2 = 1); the partial one ranks users 1 and 2 only."""
    qrels = _frame([(u, 1) for u in (1, 2, 3, 4)], ["user", "item"])
    full = _frame([(u, i, 2.0 - i) for u in (1, 2, 3, 4) for i in (1, 2)],
                  ["user", "item", "score"])
    return full, full[full["user"] <= 2], qrels


def test_unranked_judged_users_score_zero_and_are_warned_about() -> None:
    """The partial model misses 2 of 4 users: ndcg@2 = (1 + 1 + 0 + 0) / 4 = 0.5, not the 1.0
    of the users it ranked (which tied the full model, which ranks all 4); per user, the
    unranked users are rows of 0, so the per-user mean is the summary's."""
    _, partial, qrels = _partial_model()
    with pytest.warns(UnrankedQueries, match=r"2 judged queries have no list in the run: each "
                                             r"is scored as an empty list"):
        result = duckrank.evaluate(partial, qrels, ["ndcg@2", "p@2", "mrr"])
    assert result[["scored", "unranked"]].values.tolist() == [[2, 2]]
    # P@2: (1/2 + 1/2 + 0 + 0) / 4 (precision's 0/0 on an empty list counts 0)
    assert result[["ndcg@2", "p@2", "mrr"]].values.tolist() == [[0.5, 0.25, 0.5]]
    with pytest.warns(UnrankedQueries):
        rows = duckrank.evaluate(partial, qrels, ["ndcg@2"], per_user=True)
    assert rows.values.tolist() == [[1, 1.0], [2, 1.0], [3, 0.0], [4, 0.0]]


def test_an_unranked_user_without_a_relevant_item_stays_undefined() -> None:
    """ndcg is undefined for a user whose judgments hold no relevant item, ranked or not: user
    3 (only a grade 0) is left out of the mean either way; user 2 (unranked, relevant item)
    scores 0: ndcg@2 = (1 + 0) / 2."""
    run = _frame([(1, 1, 1.0)], ["user", "item", "score"])
    qrels = _frame([(1, 1, 1), (2, 1, 1), (3, 1, 0)], ["user", "item", "grade"])
    with pytest.warns(UnrankedQueries, match="2 judged queries"):
        rows = duckrank.evaluate(run, qrels, ["ndcg@2"], per_user=True)
    assert rows["ndcg@2"].tolist()[:2] == [1.0, 0.0] and math.isnan(rows["ndcg@2"][2])
    with pytest.warns(UnrankedQueries):
        assert duckrank.evaluate(run, qrels, ["ndcg@2"])["ndcg@2"][0] == 0.5


def test_trec_eval_convention_leaves_unranked_users_out_as_trec_eval_does() -> None:
    """trec_eval without -c averages over the queries of the run (pytrec-eval-terrier evaluates
    only the run's queries): 1.0 for the partial model."""
    _, partial, qrels = _partial_model()
    with pytest.warns(UnrankedQueries, match="left out of the means, as trec_eval does"):
        result = duckrank.evaluate(partial, qrels, ["ndcg@2"], convention="trec_eval")
    assert result["ndcg@2"][0] == 1.0


def test_evaluate_and_compare_give_one_number_for_a_model_missing_users() -> None:
    """The issue's case in small: compare scores the users the partial model did not rank 0;
    evaluate, by default, gives the same mean (0.5, hand calculation above)."""
    full, partial, qrels = _partial_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnrankedQueries)
        alone = duckrank.evaluate(partial, qrels, ["ndcg@2"])["ndcg@2"][0]
        report = duckrank.compare({"full": full, "partial": partial}, qrels, ["ndcg@2"],
                                  level=None)
    means = dict(zip(report.summary["system"].to_pylist(), report.summary["mean"].to_pylist(),
                     strict=True))
    assert alone == means["partial"] == 0.5
    assert means["full"] == 1.0


# --- section 3: ties do not depend on the file format ---------------------------------------------

def test_ties_break_by_the_ids_text_whatever_the_file_format(tmp_path) -> None:
    """Items 9, 10 and 100 tie: by text, descending, the list is 9, 100, 10 ('9' > '100' >
    '10'), for integer ids (Parquet) as for the same ids read as text (CSV). Item 10 is the
    relevant one: mrr = 1/3 and P@1 = 0 from both files (integer order, 100, 10, 9, gave
    the Parquet file mrr 1/2)."""
    run = _frame([(1, i, 0.5) for i in (9, 10, 100)], ["user", "item", "score"])
    qrels = _frame([(1, 10)], ["user", "item"])
    run.to_csv(tmp_path / "run.csv", index=False)
    run.to_parquet(tmp_path / "run.parquet")
    qrels.to_csv(tmp_path / "qrels.csv", index=False)
    qrels.to_parquet(tmp_path / "qrels.parquet")
    metrics = ["mrr", "p@1", "ndcg@2"]
    results = []
    for fmt in ("csv", "parquet"):
        for native in (True, False):
            con = duckrank.connect(native=native)
            results.append(duckrank.evaluate(tmp_path / f"run.{fmt}", tmp_path / f"qrels.{fmt}",
                                             metrics, connection=con))
            results.append(duckrank.evaluate(tmp_path / f"run.{fmt}", tmp_path / f"qrels.{fmt}",
                                             ["mrr@3", "p@1"], connection=con))
            con.close()
    for result in results[::2]:
        assert result["mrr"][0] == pytest.approx(1 / 3, abs=1e-15)
        assert result["p@1"][0] == 0.0
    for result in results[1::2]:  # the top-K heaps
        assert result["mrr@3"][0] == pytest.approx(1 / 3, abs=1e-15)


def test_the_native_top_k_ranks_integer_ids_by_their_text_and_gives_them_back_typed() -> None:
    """Long lists of integer ids with many ties: the native heap (which ranks their text) and
    DuckDB's max heap give the whole list's values (to_ordered_list by score, then text)."""
    rng = np.random.default_rng(25)
    run = pd.DataFrame({"user": np.repeat(np.arange(30), 50), "item": rng.integers(0, 200, 1500),
                        "score": rng.choice([0.0, 1.0, 2.0], 1500)})
    qrels = pd.DataFrame({"user": np.repeat(np.arange(30), 5), "item": rng.integers(0, 200, 150)})
    qrels = qrels.drop_duplicates()
    values = [duckrank.evaluate(run, qrels, ["mrr@5", "ndcg@5"], per_user=True,
                                connection=duckrank.connect(native=native))
              for native in (True, False)]
    whole = duckrank.evaluate(run, qrels, ["mrr", "ndcg(relevance=binary)"], per_user=True)
    pd.testing.assert_frame_equal(values[0], values[1])
    # mrr of the whole list equals mrr@5 where the first hit is in the top 5 (else 0 vs 1/r).
    first_in_top = whole["mrr"] >= 1 / 5
    assert values[0]["mrr@5"][first_in_top].tolist() == whole["mrr"][first_in_top].tolist()


# --- section 3: labels and warnings say what was computed ----------------------------------------

def test_a_rating_column_is_named_in_a_warning_when_it_is_not_read() -> None:
    """Qrels with (user, item, rating) and no grade column: every row counts (recall@2 = 1/2 for
    items 1 and 2 of which the run returns item 1), and a warning names rating and the argument
    that reads it; with grade_column='rating' the rating-0 item 2 is not relevant: 1/1."""
    run = _frame([(1, 1, 2.0), (1, 3, 1.0)], ["user", "item", "score"])
    qrels = _frame([(1, 1, 5), (1, 2, 0)], ["user", "item", "rating"])
    with pytest.warns(UngradedQrels, match=r"column 'rating' is not read; to grade by one, "
                                           r"name it: grade_column='rating'"):
        assert duckrank.evaluate(run, qrels, ["recall@2"])["recall@2"][0] == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error", UngradedQrels)
        graded = duckrank.evaluate(run, qrels, ["recall@2"], grade_column="rating")
    assert graded["recall@2"][0] == 1.0


def test_err_names_its_max_grade_in_the_label() -> None:
    """err's max_grade (4 by default) scales every value, binary ones too: one hit at rank 1
    is (2^1 - 1) / 2^4 = 1/16, and the column says max_grade=4; written, it stays as written."""
    run = _frame([(1, 1, 1.0)], ["user", "item", "score"])
    qrels = _frame([(1, 1)], ["user", "item"])
    result = duckrank.evaluate(run, qrels, ["err@5", "err(max_grade=1)@5"])
    assert list(result.columns)[-2:] == ["err(max_grade=4)@5", "err(max_grade=1)@5"]
    assert result["err(max_grade=4)@5"][0] == 1 / 16
    assert result["err(max_grade=1)@5"][0] == 1 / 2


def test_precision_over_lists_shorter_than_k_is_warned_about() -> None:
    """User 1's list holds 2 items (1 hit), user 2's 10 (1 hit): P@10 = (1/2 + 1/10) / 2 = 0.3
    (hits / items returned), and the warning says 1 list is short and what gives trec_eval's
    (1/10 + 1/10) / 2 = 0.1."""
    run = _frame([(1, 1, 2.0), (1, 2, 1.0)] + [(2, i, float(-i)) for i in range(1, 11)],
                 ["user", "item", "score"])
    qrels = _frame([(1, 1), (2, 1)], ["user", "item"])
    with pytest.warns(ShortLists, match=r"p@10: 1 of the 2 ranked lists are shorter than 10, "
                                        r".*p\(denominator=k\)@10 gives their number"):
        result = duckrank.evaluate(run, qrels, ["p@10"])
    assert result["p@10"][0] == pytest.approx(0.3, abs=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShortLists)
        peer = duckrank.evaluate(run, qrels, ["p(denominator=k)@10"])
        assert duckrank.evaluate(run, qrels, ["p@2"])["p@2"][0] == 0.5  # no list under 2
    assert peer["p(denominator=k)@10"][0] == pytest.approx(0.1, abs=1e-15)


# --- section 3: polars in, polars out ---------------------------------------------------------

def test_polars_in_gives_polars_out() -> None:
    run = pl.DataFrame({"user": [1, 1], "item": [1, 2], "score": [2.0, 1.0]})
    qrels = pl.DataFrame({"user": [1], "item": [2]})
    result = duckrank.evaluate(run, qrels, ["mrr"])
    assert isinstance(result, pl.DataFrame)
    assert result["mrr"].to_list() == [0.5]
    rows = duckrank.evaluate(run, qrels, ["mrr"], per_user=True)
    assert isinstance(rows, pl.DataFrame) and rows.columns == ["user", "mrr"]


def test_evaluate_runs_without_pandas() -> None:
    """A polars-only environment: pandas cannot be imported (a None in sys.modules)."""
    code = (
        "import sys; sys.modules['pandas'] = None\n"
        "import polars as pl, duckrank\n"
        "run = pl.DataFrame({'user': [1, 1], 'item': [1, 2], 'score': [2.0, 1.0]})\n"
        "qrels = pl.DataFrame({'user': [1], 'item': [2]})\n"
        "print(duckrank.evaluate(run, qrels, ['mrr'])['mrr'].to_list())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0.5]"


# --- section 2: any k, and the unknown-metric error ---------------------------------------------

@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("k", [2**32, 10**19, 10**30])
def test_any_cut_off_gives_the_whole_lists_value(native: bool, k: int) -> None:
    """A cut-off above every list (and above 2^32 - 1, the native heap's limit) is the whole
    list: ranked 2, 1 with item 1 relevant, ndcg = 1 / log2(3) and P (items returned) = 1/2."""
    run = _frame([(1, 1, 1.0), (1, 2, 2.0)], ["user", "item", "score"])
    qrels = _frame([(1, 1)], ["user", "item"])
    con = duckrank.connect(native=native)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShortLists)
        result = duckrank.evaluate(run, qrels, [f"ndcg@{k}", f"p@{k}"], connection=con)
    con.close()
    assert result[f"ndcg@{k}"][0] == pytest.approx(1 / math.log2(3), abs=1e-15)
    assert result[f"p@{k}"][0] == 0.5


def test_unknown_metric_error_lists_the_beyond_accuracy_metrics() -> None:
    with pytest.raises(ValueError, match=r"unknown metric 'ndgc'; known metrics: .*; "
                                         r"beyond-accuracy metrics .*arp.*catalog_coverage"):
        duckrank.evaluate(_frame([(1, 1, 1.0)], ["user", "item", "score"]),
                          _frame([(1, 1)], ["user", "item"]), ["ndgc@10"])
