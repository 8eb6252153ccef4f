"""The intent-aware measures in duckrank.evaluate (issue 27): subtopic qrels (query, subtopic,
item, grade) feed ir_measures' alpha_nDCG, alpha_DCG, ERR_IA, nERR_IA, NRBP, nNRBP, P_IA, AP_IA
and StRecall (and duckrank's own names of them), beside the ordinary metrics, which read each
item's largest grade over its subtopics.

Where the expected values come from: a hand calculation written out in
``test_hand_example_mixed_with_ordinary_metrics`` (no peer needed); the SQL functions of
``duckrank.metrics.diversity`` (themselves checked against pyndeval in
tests/metrics/test_diversity.py) on that module's seeded data; ir_measures 0.4.3 run in the
test (pyndeval for the intent-aware measures, pytrec_eval for nDCG, P and AP), per query, to
1e-12 (skipped without them).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pandas as pd
import pytest

import duckrank

# q1: a is relevant to subtopic 1 (and judged 0 for 2), b to 2, c to 3 (grade 2); the run ranks
# a, c and the unjudged d. q2 has no relevant item; q3 is judged but not ranked.
QRELS = pd.DataFrame(
    [("q1", "1", "a", 1), ("q1", "2", "a", 0), ("q1", "2", "b", 1), ("q1", "3", "c", 2),
     ("q2", "1", "x", 0), ("q3", "1", "y", 1)],
    columns=["query", "subtopic", "item", "grade"])
RUN = pd.DataFrame([("q1", "a", 3.0), ("q1", "c", 2.0), ("q1", "d", 1.0), ("q2", "x", 1.0)],
                   columns=["query", "item", "score"])
LOG3 = math.log2(3)

# The names are ir_measures' (read under duckrank's convention unless said) and q3 is unranked:
# both warn, as they should, in every test.
pytestmark = [pytest.mark.filterwarnings("ignore::duckrank.evaluation.inputs.UnrankedQueries"),
              pytest.mark.filterwarnings(
                  "ignore::duckrank.evaluation.metric_requests.PeerConventionWarning")]


def test_hand_example_mixed_with_ordinary_metrics() -> None:
    """q1 by hand (alpha = beta = 0.5, relevant = grade >= 1; N = 3 subtopics, each with one
    relevant item; the run's gains are 1 (a), 1 (c), 0 (d)):
    alpha-nDCG@20 = (1 + 1 / log2 3) / (1 + 1 / log2 3 + 1 / 2) (the ideal: c, b, a);
    ERR-IA@20 = (1 + 1 / 2) / (3 sum_{i<=20} 0.5^(i-1) / i); NRBP = (1 - 0.25) / 3 (1 + 0.5);
    P-IA@5 = (1/3)(1/5 + 0 + 1/5); MAP-IA = (1/3)(1 + 0 + 1/2); duckrank's own name nerr_ia@20
    = (1 + 1 / 2) / (1 + 1 / 2 + 1 / 3).
    nDCG@10 (ir_measures': linear gains) reads each item's largest grade: a 1 (not its 0 for
    subtopic 2), b 1, c 2: (1 + 2 / log2 3) / (2 + 1 / log2 3 + 1 / 2); P@2 = 1.
    q2 has no relevant item: NULL (duckrank's convention); q3, judged and unranked, scores 0."""
    values = duckrank.evaluate(RUN, QRELS, ["alpha_nDCG@20", "ERR_IA@20", "NRBP", "P_IA@5", "AP_IA",
                                 "nDCG@10", "P@2", "nerr_ia@20"],
                    per_user=True).set_index("query")
    err_norm = 3 * sum(0.5 ** (i - 1) / i for i in range(1, 21))
    expected = {
        "alpha_nDCG@20": (1 + 1 / LOG3) / (1.5 + 1 / LOG3), "ERR_IA@20": 1.5 / err_norm,
        "NRBP": 0.75 / 3 * 1.5, "P_IA@5": 2 / 15, "AP_IA": 0.5,
        "nDCG@10": (1 + 2 / LOG3) / (2.5 + 1 / LOG3), "P@2": 1.0,
        "nerr_ia@20": 1.5 / (1 + 1 / 2 + 1 / 3),
    }
    for column, value in expected.items():
        assert values.loc["q1", column] == pytest.approx(value, abs=1e-15), column
        assert math.isnan(values.loc["q2", column]) or column == "P@2", column
        assert values.loc["q3", column] == 0.0, column


def test_ir_measures_convention_scores_undefined_queries_zero() -> None:
    """Under convention='ir_measures' a query without a relevant item scores 0 and counts, as
    ir_measures (through pyndeval) reports it: the mean of alpha_nDCG@20 over q1, q2 and q3 is
    the hand value of q1 (above) over 3."""
    means = duckrank.evaluate(RUN, QRELS, ["alpha_nDCG@20"], convention="ir_measures")
    assert means["alpha_nDCG@20"][0] == pytest.approx((1 + 1 / LOG3) / (1.5 + 1 / LOG3) / 3,
                                                      abs=1e-15)
    assert means["scored"][0] == 2 and means["unranked"][0] == 1


def test_a_trec_diversity_qrels_file_names_its_subtopic_column(tmp_path: Path, capsys) -> None:
    """A TREC qrels file's second field is the subtopic only when named (a standard file fills
    it with 0): subtopic_column='iteration' (--subtopic-column iteration) gives the values of the
    table with a subtopic column; without it, the request says how to name it."""
    from duckrank.cli import main

    qrels = tmp_path / "qrels.diversity.txt"
    qrels.write_text("".join(f"{q} {s} {d} {g}\n" for q, s, d, g in QRELS.itertuples(index=False)))
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q} Q0 {d} {j} {s} tag\n"
                           for j, (q, d, s) in enumerate(RUN.itertuples(index=False))))
    metrics = ["alpha_nDCG@20", "nERR_IA@10", "StRecall@2", "nDCG@10"]
    from_file = duckrank.evaluate(str(run), str(qrels), metrics, subtopic_column="iteration")
    from_table = duckrank.evaluate(RUN, QRELS, metrics)
    pd.testing.assert_frame_equal(from_file, from_table)
    with pytest.raises(ValueError, match=r"metric 'alpha_nDCG@20' reads subtopic qrels .* no "
                       r"subtopic column: name it with subtopic_column= \(subtopic_column="
                       r"'iteration' for a TREC diversity qrels file\)"):
        duckrank.evaluate(str(run), str(qrels), ["alpha_nDCG@20"])
    assert main(["evaluate", str(run), str(qrels), "-m", "alpha_nDCG@20", "--subtopic-column",
                 "iteration", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert float(out.splitlines()[1].split(",")[-1]) == pytest.approx(
        from_table["alpha_nDCG@20"][0], abs=1e-12)
    assert main(["evaluate", str(run), str(qrels), "-m", "alpha_nDCG@20"]) != 0
    assert "--subtopic-column iteration" in capsys.readouterr().err


def test_bad_subtopic_input_is_named() -> None:
    """A named subtopic column that is not there; one subtopic judgment with two grades; qrels
    that grade an item twice without a subtopic column (the hint names the column)."""
    with pytest.raises(ValueError, match=r"the qrels has no subtopic column 'topic'; its "
                       r"columns are"):
        duckrank.evaluate(RUN, QRELS, ["alpha_nDCG@20"], subtopic_column="topic")
    twice = pd.concat([QRELS, pd.DataFrame([("q1", "1", "a", 2)], columns=QRELS.columns)])
    with pytest.raises(ValueError, match=r"two different grades to query q1, item a, subtopic 1"):
        duckrank.evaluate(RUN, twice, ["alpha_nDCG@20"])
    with pytest.raises(ValueError, match=r"item a; if these are subtopic qrels .* name their "
                       r"subtopic column"):
        duckrank.evaluate(RUN, QRELS.rename(columns={"subtopic": "intent"}), ["nDCG@10"])
    with pytest.raises(ValueError, match=r"judged_only=True is not available for ir_measures' "
                       r"alpha_nDCG"):
        duckrank.evaluate(RUN, QRELS, ["alpha_nDCG(judged_only=True)@20"])


def test_by_groups_score_each_system_apart() -> None:
    """Two systems in one run (by='tag'): each group's values are those of its rows alone."""
    other = RUN.assign(score=[1.0, 3.0, 2.0, 1.0])  # c, d, a for q1
    both = pd.concat([RUN.assign(tag="one"), other.assign(tag="two")])
    metrics = ["alpha_nDCG@5", "ERR_IA@5", "nNRBP", "nDCG@5"]
    grouped = duckrank.evaluate(both, QRELS, metrics, by="tag").set_index("tag")
    for tag, run in (("one", RUN), ("two", other)):
        alone = duckrank.evaluate(run, QRELS, metrics)
        for metric in metrics:
            assert grouped.loc[tag, metric] == pytest.approx(alone[metric][0], abs=1e-15)


def test_ranges_of_query_ids_give_the_same_values(monkeypatch) -> None:
    """Evaluated a few queries at a time (ranges of query ids of about 5 input rows), the
    subtopic truths and the largest grades are those of the whole evaluation."""
    from duckrank.evaluation import planning

    metrics = ["alpha_nDCG@20", "AP_IA", "nDCG@10", "P@2"]
    whole = duckrank.evaluate(RUN, QRELS, metrics, per_user=True)
    monkeypatch.setattr(planning, "ROWS_PER_BUCKET", 5)
    pd.testing.assert_frame_equal(duckrank.evaluate(RUN, QRELS, metrics, per_user=True), whole)


# --- against the SQL functions and ir_measures on tests/metrics/test_diversity.py's data --------

def _diversity_tests():
    """tests/metrics/test_diversity.py as a module (its seeded data and measure names); skipped
    without pyndeval, which that module needs."""
    path = Path(__file__).parent / "metrics" / "test_diversity.py"
    spec = importlib.util.spec_from_file_location("duckrank_diversity_tests", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ir_measures' names of ndeval's @k measures and of those without a cut-off.
CUT = ["alpha_DCG", "alpha_nDCG", "ERR_IA", "nERR_IA", "P_IA", "StRecall"]
WHOLE = ["NRBP", "nNRBP", "AP_IA"]


def _frames(qrels: list, runs: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    run = pd.DataFrame([(q, d, s) for q, docs in runs.items() for d, s in docs.items()],
                       columns=["query", "item", "score"])
    return run, pd.DataFrame(qrels, columns=["query", "subtopic", "item", "grade"])


@pytest.mark.parametrize(("seed", "k", "params"), [
    (1, 5, ""), (2, 10, ""), (4, 10, "rel=2"),
])
def test_equals_the_sql_functions_per_query(seed: int, k: int, params: str) -> None:
    """evaluate's value of each measure is its SQL function's over the query's subtopic qrels
    grouped as docs/diversity.md shows, with the cut-off only (the top-K path) and with the
    whole-list measures (every list ranked whole)."""
    module = _diversity_tests()
    qrels, runs = module._generated(seed)
    run, table = _frames(qrels, runs)
    subtopic_table = module._table(qrels, runs)  # noqa: F841 (read by DuckDB)
    options = {"min_grade": 2} if params else {}
    calls = module._calls(k, options)
    con = duckrank.connect()
    expected = con.sql("SELECT query, " + ", ".join(calls.values())
                       + " FROM subtopic_table ORDER BY query").df().set_index("query")
    con.close()
    names = dict(zip([*module.MEASURES, *module.WHOLE_LIST], [*CUT, *WHOLE], strict=True))
    written = {f: n + (f"({params})" if params else "") + (f"@{k}" if n in CUT else "")
               for f, n in names.items()}
    for requested in ([written[f] for f in module.MEASURES], list(written.values())):
        ours = duckrank.evaluate(run, table, requested, per_user=True).set_index("query")
        for function, column in zip(names, expected.columns, strict=True):
            if written[function] in requested:
                pd.testing.assert_series_equal(
                    ours[written[function]], expected[column], check_names=False,
                    rtol=0, atol=1e-15)


# The parameters each of ir_measures' intent-aware measures takes besides rel (its registry).
TAKES = {"alpha_DCG": ("alpha",), "alpha_nDCG": ("alpha",), "NRBP": ("alpha", "beta"),
         "nNRBP": ("alpha", "beta")}


def _written(name: str, k: int, params: dict) -> str:
    given = {p: v for p, v in params.items() if p == "rel" or p in TAKES.get(name, ())}
    text = name + ("(" + ",".join(f"{p}={v}" for p, v in given.items()) + ")" if given else "")
    return text + (f"@{k}" if name in CUT else "")


@pytest.mark.parametrize(("seed", "k", "params"), [
    (1, 5, {}), (3, 20, {"alpha": 0.3, "beta": 0.8}), (4, 10, {"rel": 2}),
])
def test_matches_ir_measures_per_query(seed: int, k: int, params: dict) -> None:
    """ir_measures' own numbers (pyndeval for the intent-aware names, pytrec_eval for nDCG, P
    and AP) per query, to 1e-12, mixed in one call, under convention='ir_measures' (a query
    without a relevant item: 0; ir_measures gives nNRBP NaN there). ir_measures reads an item
    judged for several subtopics as its last qrels row, duckrank as its largest grade: the
    qrels go to ir_measures ordered by grade, so that the last row is the largest."""
    ir_measures = pytest.importorskip("ir_measures")
    module = _diversity_tests()
    qrels, runs = module._generated(seed)
    run, table = _frames(qrels, runs)
    measures = [*(_written(name, k, params) for name in (*CUT, *WHOLE)), f"nDCG@{k}", "P@5",
                "AP"]
    ours = duckrank.evaluate(run, table, measures, per_user=True,
                  convention="ir_measures").set_index("query")
    ordered = table.sort_values("grade", kind="stable").rename(columns={
        "query": "query_id", "subtopic": "iteration", "item": "doc_id", "grade": "relevance"})
    parsed = {m: ir_measures.parse_measure(m) for m in measures}
    expected: dict = {measure: {} for measure in parsed.values()}
    for measure in expected:
        # One measure a call: ir_measures 0.4.3 hands pyndeval's second invocation (other
        # alpha, beta or rel) a run its first has already consumed, and reports 0 there.
        for metric in ir_measures.iter_calc([measure], ordered, runs):
            expected[metric.measure][metric.query_id] = metric.value
    undefined = 0
    for measure, theirs in parsed.items():
        values = expected[theirs]
        assert set(values) == set(ours.index), measure
        for query, value in values.items():
            if math.isnan(value):  # nNRBP without a relevant item
                assert measure.startswith("nNRBP") and ours.loc[query, measure] == 0.0
                undefined += 1
            else:
                assert ours.loc[query, measure] == pytest.approx(value, abs=1e-12), (
                    measure, query)
    assert undefined  # the data holds a query without a relevant item
