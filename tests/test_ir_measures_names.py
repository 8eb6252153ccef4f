"""ir_measures' measure names in duckrank.evaluate (duckrank.evaluation.peer_names): for every
measure both have, the values per query against ir_measures 0.4.3 itself (run in the test, its
default providers: pytrec_eval, gdeval, judged, compat, accuracy, msmarco) on seeded random
graded qrels and runs with score ties, grades -1..3, unjudged retrieved documents, queries
without a relevant document and queries only in the run or only in the qrels; ranx's f1@k and
hits@k against ranx 0.3.21. The registry's 39 measures are each either translated or refused
with a message that says why.
"""

from __future__ import annotations

import math
import random
import warnings

import pandas as pd
import pytest

import duckrank
from duckrank.evaluation.metric_requests import PeerConventionWarning, parse_metric
from duckrank.evaluation.peer_names import IR_MEASURES, IR_MEASURES_ALIASES

ir_measures = pytest.importorskip("ir_measures")


def _generated(seed: int, ties: bool) -> tuple[dict, dict]:
    """qrels with grades -1..3 over 20 documents (every 6th query: no relevant document) and runs
    of 1..16 documents, some judged, some not. With ``ties`` the scores are 0..4 (exact as C
    floats, so trec_eval's float ranking is the double one); without, distinct positive
    scores. q_run is only in the run, q_qrels only in the qrels."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(24):
        docs = [f"d{i:02d}" for i in range(20)]
        top = 0 if q % 6 == 0 else 3
        qrels[f"q{q}"] = {d: rng.randint(-1, top) for d in rng.sample(docs, rng.randint(1, 12))}
        retrieved = rng.sample(docs, rng.randint(1, 16))
        scores = (rng.sample(range(1, 100), len(retrieved)) if not ties
                  else [rng.randint(0, 4) for _ in retrieved])
        run[f"q{q}"] = {d: float(s) for d, s in zip(retrieved, scores, strict=True)}
    qrels["q_qrels"] = {"d01": 2}
    run["q_run"] = {"d01": 1.0, "d02": 0.5}
    return qrels, run


def _frames(qrels: dict, run: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    run_rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    qrels_rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    return (pd.DataFrame(run_rows, columns=["query", "item", "score"]),
            pd.DataFrame(qrels_rows, columns=["query", "item", "grade"]))


def _theirs(measures: list[str], qrels: dict, run: dict) -> dict[str, dict[str, float]]:
    parsed = {m: ir_measures.parse_measure(m) for m in measures}  # MRR is RR there
    values: dict = {measure: {} for measure in parsed.values()}
    for metric in ir_measures.iter_calc(list(values), qrels, run):
        values[metric.measure][metric.query_id] = metric.value
    return {m: values[measure] for m, measure in parsed.items()}


def _ours(measures: list[str], qrels: dict, run: dict) -> pd.DataFrame:
    run_frame, qrels_frame = _frames(qrels, run)
    return duckrank.evaluate(run_frame, qrels_frame, measures, per_user=True,
                             convention="ir_measures").set_index("query")


# ir_measures gives every judged query without a list its DEFAULT, 0, whatever the measure: a
# NumRel of 0 for q_qrels, which has a relevant item (duckrank: 1, as trec_eval -c counts it;
# docs/conventions.md).
NUM_REL_OF_UNRANKED = {("NumRel", "q_qrels")}


def _compare(measures: list[str], qrels: dict, run: dict) -> None:
    theirs, ours = _theirs(measures, qrels, run), _ours(measures, qrels, run)
    for measure in measures:
        expected = theirs[measure]
        # The same queries: every judged one (ir_measures scores one without a list 0).
        assert set(expected) == set(ours.index), measure
        for query, value in expected.items():
            if (measure, query) not in NUM_REL_OF_UNRANKED:
                assert ours.loc[query, measure] == pytest.approx(value, abs=1e-12), (
                    measure, query)


# pytrec_eval's measures (trec_eval 9): ties broken by document id descending, as duckrank does.
PYTREC_EVAL = [
    "AP", "AP@5", "AP(rel=2)", "MAP@10", "P@5", "P(rel=2)@3", "P@20", "R@10", "R(rel=3)@5",
    "RR", "RR(rel=2)", "Rprec", "Rprec(rel=2)", "Success@3", "Success(rel=3)@10", "SetP",
    "SetRelP", "SetP(rel=2)", "SetR", "SetF", "SetF(beta=0.5)", "SetAP", "NumRel",
    "NumRet", "NumRelRet", "NumRet(rel=2)", "NumQ", "IPrec@0.3", "IPrec@0.0",
    "Bpref", "Bpref(rel=2)", "infAP", "nDCG", "nDCG@5", "NDCG@10", "nDCG@30",
    "Precision@4", "Recall@4", "MRR",
]


@pytest.mark.filterwarnings("ignore::duckrank.evaluation.inputs.UnrankedQueries")
def test_pytrec_eval_measures_match_per_query_with_ties() -> None:
    """Every measure ir_measures runs through pytrec_eval, per query, to 1e-12."""
    qrels, run = _generated(5, ties=True)
    _compare(PYTREC_EVAL, qrels, run)


@pytest.mark.filterwarnings("ignore::duckrank.evaluation.inputs.UnrankedQueries")
@pytest.mark.parametrize("measure", [
    "nDCG(gains={0:0,1:1,2:3,3:7})@10", "nDCG(gains={1:5,2:1})", "nDCG(gains={3:1,2:0})@5",
    "nDCG(gains={1:0,2:3},judged_only=True)@5",
])
def test_ndcg_gains_match_per_query_with_ties(measure: str) -> None:
    """gains= maps the grades before pytrec_eval reads them (a grade not in the map keeps its
    value; grades -1..3 here), per query, to 1e-12. One measure a call: ir_measures 0.4.3 runs
    each gains map as a pytrec_eval invocation of its own, and with several in one call
    (nDCG beside nDCG(gains=...)) some queries' values change with the process's hash seed
    (checked outside the suite: alone, each is stable)."""
    qrels, run = _generated(5, ties=True)
    _compare([measure], qrels, run)


JUDGED_ONLY = [
    "P(judged_only=True)@5", "P(judged_only=True)@20", "P(rel=2,judged_only=True)@5",
    "AP(judged_only=True)", "AP(judged_only=True)@5", "R(judged_only=True)@5",
    "RR(judged_only=True)", "Rprec(judged_only=True)", "Success(judged_only=True)@3",
    "SetP(judged_only=True)", "SetRelP(judged_only=True)", "SetF(judged_only=True)",
    "SetAP(judged_only=True)", "IPrec(judged_only=True)@0.3", "nDCG(judged_only=True)",
    "nDCG(judged_only=True)@5", "nDCG(judged_only=True)@20",
]


@pytest.mark.filterwarnings("ignore::duckrank.evaluation.inputs.UnrankedQueries")
def test_judged_only_matches_per_query_with_ties() -> None:
    """judged_only=True (pytrec_eval's judged_docs_only_flag, trec_eval's -J: unjudged and
    negative-grade documents removed before the cut-off), per query, to 1e-12. One documented
    difference: where no judged document is retrieved, trec_eval's iprec_at_recall divides 0 by
    0 (m_iprec_at_recall.c: num_rel_ret / num_ret) and ir_measures reports NaN; duckrank 0."""
    qrels, run = _generated(5, ties=True)
    theirs, ours = _theirs(JUDGED_ONLY, qrels, run), _ours(JUDGED_ONLY, qrels, run)
    nan_cases = 0
    for measure in JUDGED_ONLY:
        assert set(theirs[measure]) == set(ours.index), measure
        for query, value in theirs[measure].items():
            if math.isnan(value):
                assert measure.startswith("IPrec") and ours.loc[query, measure] == 0.0
                nan_cases += 1
            else:
                assert ours.loc[query, measure] == pytest.approx(value, abs=1e-12), (
                    measure, query)
    assert nan_cases  # the data holds such a query


@pytest.mark.filterwarnings("ignore::duckrank.evaluation.inputs.UnrankedQueries")
def test_providers_that_break_ties_otherwise_match_without_ties() -> None:
    """Judged, Compat, Accuracy and RR@k (ir_measures' judged, compat, accuracy and msmarco
    providers) rank tied scores by document id ascending, duckrank as trec_eval (descending):
    compared on distinct scores (docs/conventions.md names the difference). Accuracy leaves out
    a query without a relevant retrieved document (NULL here) and fails where the top K holds
    only relevant ones: those queries are not in the data (checked by the comparison)."""
    qrels, run = _generated(11, ties=False)
    _compare(["Judged@5", "Judged@10", "Judged", "Compat", "Compat(p=0.8)",
              "Compat(normalize=False)", "RR@5", "RR(rel=2)@3", "Accuracy@10", "Accuracy"],
             qrels, run)


@pytest.mark.filterwarnings("ignore::duckrank.evaluation.inputs.UnrankedQueries")
def test_cwl_eval_measures_match_without_ties() -> None:
    """The C/W/L measures (ir_measures' cwl_eval provider; RBP with rel= goes there too), per
    query through evaluate's names (tests/metrics/test_cwl.py compares the functions more
    widely)."""
    qrels, run = _generated(13, ties=False)
    _compare(["BPM(max_rel=3)@5", "BPM(T=2.0,max_rel=2)@10", "SDCG(max_rel=3)@10",
              "NERR8(max_rel=3)@5", "NERR9(max_rel=3)@5", "NERR10(max_rel=3)",
              "NERR11(max_rel=3)", "INST(max_rel=3)", "INSQ(max_rel=3)", "RBP(rel=1)",
              "RBP(p=0.9,rel=2)"], qrels, run)


@pytest.mark.filterwarnings("ignore::duckrank.evaluation.inputs.UnrankedQueries")
def test_gdeval_measures_match_to_its_five_decimals() -> None:
    """ERR@k and nDCG(dcg='exp-log2')@k run TREC's gdeval.pl, which prints 5 decimals (and
    reads a negative grade as 0): equal to 5e-6. gdeval needs perl."""
    import shutil
    if shutil.which("perl") is None:
        pytest.skip("gdeval.pl needs perl")
    qrels, run = _generated(7, ties=False)
    # gdeval reads numeric query ids only.
    number = {q: str(j) for j, q in enumerate(sorted(set(qrels) | set(run)))}
    qrels = {number[q]: {d: max(g, 0) for d, g in docs.items()} for q, docs in qrels.items()}
    run = {number[q]: docs for q, docs in run.items()}
    measures = ["ERR@5", "ERR@20", "nDCG(dcg='exp-log2')@5", "nDCG(dcg='exp-log2')@20"]
    theirs, ours = _theirs(measures, qrels, run), _ours(measures, qrels, run)
    for measure in measures:
        for query, value in theirs[measure].items():
            if query in ours.index:  # gdeval also prints queries with no relevant document
                ours_value = ours.loc[query, measure]
                assert (0.0 if math.isnan(ours_value) else ours_value) == pytest.approx(
                    value, abs=5e-6), (measure, query)


def test_the_issue_example_ndcg_is_trec_evals_linear_gain() -> None:
    """nDCG@10 is ir_measures' (trec_eval's linear gain) under every convention; ndcg@10 stays
    duckrank's exponential gain. One query, grades 2 and 1 at ranks 2 and 1, a third relevant
    item (grade 3) unranked, by hand: DCG = 1 / log2(2) + 2 / log2(3) = 2.26186,
    IDCG = 3 + 2 / log2(3) + 1 / 2 = 4.76186, nDCG = 0.47500; exponential gains:
    (1 + 3 / log2(3)) / (7 + 3 / log2(3) + 1 / 2) = 0.30798."""
    run = pd.DataFrame({"query": ["q", "q"], "item": ["a", "b"], "score": [2.0, 1.0]})
    qrels = pd.DataFrame({"query": ["q"] * 3, "item": ["a", "b", "c"], "grade": [1, 2, 3]})
    with pytest.warns(PeerConventionWarning, match="nDCG@10: ir_measures' measures"):
        result = duckrank.evaluate(run, qrels, ["nDCG@10", "ndcg@10"])
    dcg = 1 + 2 / math.log2(3)
    assert result["nDCG@10"][0] == pytest.approx(dcg / (3 + 2 / math.log2(3) + 0.5), abs=1e-15)
    exponential = (1 + 3 / math.log2(3)) / (7 + 3 / math.log2(3) + 0.5)
    assert result["ndcg(gain=exponential)@10"][0] == pytest.approx(exponential, abs=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PeerConventionWarning)
        duckrank.evaluate(run, qrels, ["nDCG@10"], convention="ir_measures")


@pytest.mark.filterwarnings("ignore::duckrank.evaluation.inputs.UnrankedQueries")
def test_ranx_f1_and_hits() -> None:
    """f1@k and hits@k as ranx 0.3.21 computes them (run in the test), per query; ranx gives 0
    where a query has no relevant document, duckrank NULL (f1) and 0 (hits)."""
    ranx = pytest.importorskip("ranx")
    qrels, run = _generated(3, ties=False)
    relevant = {q: {d: g for d, g in docs.items() if g >= 1} for q, docs in qrels.items()}
    relevant = {q: docs for q, docs in relevant.items() if docs and q in run}
    shared_run = {q: docs for q, docs in run.items() if q in relevant}
    theirs = ranx.evaluate(ranx.Qrels(relevant), ranx.Run(shared_run), ["f1@5", "hits@5", "f1@30"],
                           return_mean=False)
    ours = _ours(["f1@5", "hits@5", "f1@30"], qrels, run)
    for j, query in enumerate(sorted(relevant)):
        for measure in ("f1@5", "hits@5", "f1@30"):
            assert ours.loc[query, measure] == pytest.approx(theirs[measure][j], abs=1e-12)


def test_every_registered_measure_is_translated() -> None:
    """The 39 measures of ir_measures' registry (51 names): each name parses to a duckrank
    function (the 9 of subtopic qrels to the SQL functions of duckrank.metrics.diversity, which
    evaluate feeds from the qrels' subtopic column: tests/test_evaluate_intent_aware.py)."""
    registry = ir_measures.measures.registry
    assert set(registry) == set(IR_MEASURES) | set(IR_MEASURES_ALIASES)
    assert len({type(m).__name__ for m in registry.values()}) == len(IR_MEASURES) == 39
    needs = {"IPrec": "IPrec@0.5", "RBP": "RBP(rel=1)", "BPM": "BPM(max_rel=3)@5",
             "SDCG": "SDCG(max_rel=3)@5", "NERR8": "NERR8(max_rel=3)@5",
             "NERR9": "NERR9(max_rel=3)@5", "NERR10": "NERR10(max_rel=3)",
             "NERR11": "NERR11(max_rel=3)", "INST": "INST(max_rel=3)",
             "INSQ": "INSQ(max_rel=3)"}
    for name, measure in IR_MEASURES.items():
        assert parse_metric(needs.get(name, name)).name == measure.function, name


@pytest.mark.parametrize(("text", "message"), [
    ("ERR(judged_only=True)@5", "has no parameter 'judged_only'"),
    ("Success(judged_only=maybe)@5", "judged_only must be True or False"),
    ("nDCG(gains=x)@10", r"gains must be a map \{grade: gain, ...\}, got 'x'"),
    ("nDCG(gains={1:a})@10", "a gain of gains must be a number, got 'a'"),
    ("nDCG(gains={1:2,1:3})@10", "gains maps a grade twice"),
    ("RBP(rel=1)@10", "RBP takes no cut-off"),
    ("IPrec", "IPrec needs cutoff given"),
    ("BPM@5", "BPM needs max_rel given"),
    ("SDCG(dcg=exp-log2,max_rel=3)@5", "dcg must be 'log2'"),
    ("Bpref@10", "takes no cut-off"),
    ("P(foo=1)@5", "has no parameter 'foo'; it takes: judged_only, rel"),
    ("P(rel=x)@5", "rel must be a number, got 'x'"),
    ("nDCG(dcg=log3)@5", "dcg must be 'log2' or 'exp-log2'"),
    ("SetP(relative=maybe)", "relative must be True or False"),
])
def test_bad_parameters_are_named(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_metric(text)


def test_the_conventions_page_lists_every_name() -> None:
    """docs/conventions.md ("ir_measures' names") has a row per measure with its other names."""
    from pathlib import Path

    text = Path(__file__).resolve().parents[1].joinpath("docs", "conventions.md").read_text()
    section = text[text.index("## ir_measures' names"):]
    for name in [*IR_MEASURES, *IR_MEASURES_ALIASES]:
        assert f"`{name}`" in section, name
