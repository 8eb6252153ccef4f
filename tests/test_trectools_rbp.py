"""ir_measures' RBP without rel: trectools 0.0.50's graded RBP (ir_measures' trectools provider,
``TrecEval.get_rbp(p, depth, binary_topical_relevance=False, average_ties=True)``), which duckrank
translates to ``graded_rbp(gain=ranx, persistence=p)`` (duckrank.evaluation.peer_names). The
expected values are trectools' own, run in the test through ir_measures 0.4.3, on seeded random
qrels with grades -1..3 and runs with unjudged documents; scores are distinct across the whole
run, since trectools averages the weights of equal scores (the tie case is written out by hand
below)."""

from __future__ import annotations

import random

import pandas as pd
import pytest

import duckrank
from duckrank.evaluation.metric_requests import parse_metric

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("trectools")
# ir_measures' trectools provider sorts with inplace=True, which pandas 3.1 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword:Warning")


def _generated(seed: int) -> tuple[list, list]:
    """Qrels of 1..12 of 20 documents with grades -1..3 (every 5th query: none above 0), runs of
    1..16 documents, judged or not, with scores distinct over the whole run."""
    rng = random.Random(seed)
    scores = iter(rng.sample(range(1, 10_000), 30 * 16))
    qrels, run = [], []
    for q in range(30):
        docs = [f"d{i:02d}" for i in range(20)]
        top = 0 if q % 5 == 0 else 3
        qrels += [ir_measures.Qrel(f"q{q}", d, rng.randint(-1, top))
                  for d in rng.sample(docs, rng.randint(1, 12))]
        run += [ir_measures.ScoredDoc(f"q{q}", d, float(next(scores)))
                for d in rng.sample(docs, rng.randint(1, 16))]
    return qrels, run


def _trectools(measure: str, qrels: list, run: list) -> dict[str, float]:
    """trectools' values per query, one measure a call: ir_measures 0.4.3's trectools provider
    reads each measure's p and cut-off when it runs, from the last measure of the call (a
    closure over its loop variable), so two measures in one call both get the last one's."""
    provider = ir_measures.providers.registry["trectools"]
    return {m.query_id: m.value
            for m in provider.iter_calc([ir_measures.parse_measure(measure)], qrels, run)}


def _duckrank(measures: list[str], qrels: list, run: list) -> pd.DataFrame:
    run_frame = pd.DataFrame([(d.query_id, d.doc_id, d.score) for d in run],
                             columns=["query", "item", "score"])
    qrels_frame = pd.DataFrame([(r.query_id, r.doc_id, r.relevance) for r in qrels],
                               columns=["query", "item", "grade"])
    return duckrank.evaluate(run_frame, qrels_frame, measures, per_user=True,
                             convention="ir_measures").set_index("query")


@pytest.mark.parametrize("seed", [1, 2])
def test_rbp_without_rel_is_trectools_graded_rbp(seed: int) -> None:
    """Per query to 1e-12; trectools leaves out a query without a relevant retrieved document
    (its value is 0 there: no document gains)."""
    qrels, run = _generated(seed)
    measures = ["RBP", "RBP(p=0.5)@5", "RBP(p=0.95)@10", "RBP(p=0.8)@1"]
    ours = _duckrank(measures, qrels, run)
    assert parse_metric("RBP(p=0.5)@5").name == "graded_rbp"
    for measure in measures:
        theirs = _trectools(measure, qrels, run)
        assert set(theirs) <= set(ours.index)
        assert any(value > 0 for value in theirs.values()), measure
        for query in ours.index:
            assert ours.loc[query, measure] == pytest.approx(theirs.get(query, 0.0), abs=1e-12), (
                measure, query)


def test_tied_scores_are_where_trectools_differs() -> None:
    """q1 ranks b (grade 1) and a (grade 2) at score 5, then x (unjudged) at 3; q2 ranks a
    (grade 3) at 3, then b at 1. By hand, p = 0.5 (weights (1 - p) p^(i-1): 0.5, 0.25, 0.125):
    trectools gives b and a the mean weight of ranks 1 and 2, 0.375: q1 = 0.375 * (1 + 2) =
    1.125; the last score of q1 and the first of q2 are equal (3), so x and q2's a share
    (0.125 + 0.5) / 2 = 0.3125: q2 = 3 * 0.3125 = 0.9375. duckrank ranks ties by id
    descending (b, a): q1 = 0.5 * 1 + 0.25 * 2 = 1.0, q2 = 0.5 * 3 = 1.5."""
    qrels = [ir_measures.Qrel("q1", "a", 2), ir_measures.Qrel("q1", "b", 1),
             ir_measures.Qrel("q2", "a", 3)]
    run = [ir_measures.ScoredDoc("q1", "b", 5.0), ir_measures.ScoredDoc("q1", "a", 5.0),
           ir_measures.ScoredDoc("q1", "x", 3.0), ir_measures.ScoredDoc("q2", "a", 3.0),
           ir_measures.ScoredDoc("q2", "b", 1.0)]
    assert _trectools("RBP(p=0.5)", qrels, run) == pytest.approx({"q1": 1.125, "q2": 0.9375},
                                                                 abs=1e-15)
    ours = _duckrank(["RBP(p=0.5)"], qrels, run)["RBP(p=0.5)"]
    assert ours.to_dict() == pytest.approx({"q1": 1.0, "q2": 1.5}, abs=1e-15)


def test_rbp_with_rel_and_a_cut_off_is_refused() -> None:
    """ir_measures has no provider for RBP(rel=...)@k (cwl_eval takes no cut-off, trectools
    fails on rel): neither has duckrank."""
    with pytest.raises(ValueError, match="RBP takes no cut-off"):
        parse_metric("RBP(rel=1)@10")
