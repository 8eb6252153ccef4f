"""The intent-aware measures (duckrank.metrics.diversity) against ndeval as pyndeval 0.0.8 runs
it (in the test; the provider of ir_measures' diversity measures), per query, to 1e-12, on
seeded random subtopic qrels (grades 0..2, 1..4 subtopics, judged non-relevant and unjudged
documents, queries without a relevant document) with alpha, beta and rel at their defaults and
away from them; the numpy kernels against the SQL; a hand calculation of the greedy ideal's tie
rule; bad input.

pyndeval ranks a query's documents by score descending, then document id ascending: each rec is
built in that order, so that duckrank's ranks are ndeval's.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pyarrow as pa
import pytest

import duckrank
from duckrank.metrics import diversity
from duckrank.metrics.inputs import INPUT_KINDS

pyndeval = pytest.importorskip("pyndeval")


@pytest.fixture(scope="module")
def con():
    """One connection for the module, with the functions it calls."""
    connection = duckrank.connect(functions=[m.name for m in diversity.METRICS])
    yield connection
    connection.close()


# duckrank function -> ndeval's measure name: those ndeval cuts at @k, and those without.
MEASURES = {
    "alpha_dcg": "alpha-DCG", "alpha_ndcg": "alpha-nDCG", "err_ia": "ERR-IA",
    "nerr_ia": "nERR-IA", "precision_ia": "P-IA", "subtopic_recall": "strec",
}
WHOLE_LIST = {"nrbp": "NRBP", "nnrbp": "nNRBP", "ap_ia": "MAP-IA"}


def _generated(seed: int, queries: int = 14) -> tuple[list, dict]:
    rng = random.Random(seed)
    qrels, runs = [], {}
    for q in range(queries):
        docs = [f"d{i:02d}" for i in range(18)]
        top = 0 if q % 7 == 3 else 2
        for subtopic in range(1, rng.randint(1, 4) + 1):
            for doc in rng.sample(docs, rng.randint(1, 8)):
                qrels.append((f"q{q}", str(subtopic), doc, rng.randint(0, top)))
        retrieved = rng.sample(docs, rng.randint(1, 16))
        runs[f"q{q}"] = {d: float(s) for d, s in zip(retrieved, rng.sample(range(100),
                                                                           len(retrieved)),
                                                      strict=True)}
    return qrels, runs


def _ranked(scores: dict) -> list[str]:
    return [d for d, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))]


def _table(qrels: list, runs: dict) -> pa.Table:
    queries = sorted(runs)
    truth = [[{"subtopic": s, "item": d, "grade": g} for q2, s, d, g in qrels if q2 == q]
             for q in queries]
    return pa.table({"query": queries, "rec": [_ranked(runs[q]) for q in queries],
                     "truth": truth})


def _calls(k: int, options: dict) -> dict[str, str]:
    """Each function's call: with the cut-off k (ndeval's @k measures), its options given."""
    calls = {}
    for name in (*MEASURES, *WHOLE_LIST):
        own = {o.name for m in diversity.METRICS if m.name == name for o in m.options}
        given = "".join(f", {n} := {v}" for n, v in options.items() if n in own)
        cut = f", {k}" if name in MEASURES else ""
        calls[name] = f"{name}(rec, truth{cut}{given})"
    return calls


@pytest.mark.parametrize(("seed", "k", "options", "theirs"), [
    (1, 5, {}, {}),
    (2, 10, {}, {}),
    (3, 20, {"alpha": 0.3, "beta": 0.8}, {"alpha": 0.3, "beta": 0.8}),
    (4, 10, {"min_grade": 2}, {"relevance_level": 2}),
])
def test_matches_pyndeval_per_query(con, seed: int, k: int, options: dict, theirs: dict) -> None:
    qrels, runs = _generated(seed)
    measures = [f"{v}@{k}" for v in MEASURES.values()] + list(WHOLE_LIST.values())
    expected = pyndeval.RelevanceEvaluator(qrels, measures, **theirs).evaluate(
        [(q, d, s) for q, docs in runs.items() for d, s in docs.items()])
    subtopic_table = _table(qrels, runs)  # noqa: F841 (read by DuckDB)
    calls = _calls(k, options)
    rows = con.sql("SELECT query, " + ", ".join(f"{c} AS {n}" for n, c in calls.items())
                   + " FROM subtopic_table ORDER BY query").fetchall()
    assert [r[0] for r in rows] == sorted(expected)
    names = list(calls)
    no_relevant = 0
    for row in rows:
        theirs_row = expected[row[0]]
        for name, value in zip(names, row[1:], strict=True):
            peer = theirs_row[f"{MEASURES[name]}@{k}" if name in MEASURES else WHOLE_LIST[name]]
            if value is None:  # no relevant item: ndeval prints 0 (nNRBP: NaN)
                assert peer == 0 or math.isnan(peer), (row[0], name)
                no_relevant += 1
            else:
                assert value == pytest.approx(peer, abs=1e-12), (row[0], name, value, peer)
    assert no_relevant  # the data holds such a query


@pytest.mark.parametrize("seed", [1, 3])
def test_kernels_match_the_sql(con, seed: int) -> None:
    qrels, runs = _generated(seed)
    subtopic_table = _table(qrels, runs)
    options = {"alpha": 0.3, "beta": 0.8} if seed == 3 else {}
    calls = _calls(7, options)
    sql = con.sql("SELECT " + ", ".join(calls.values())
                  + " FROM subtopic_table ORDER BY query").fetchall()
    ordered = subtopic_table.sort_by("query")
    kind = INPUT_KINDS["subtopics"]
    cut = np.full(len(ordered), 7.0)
    for j, name in enumerate(calls):
        metric = next(m for m in diversity.METRICS if m.name == name)
        given = {o.name: options.get(o.name, o.default) for o in metric.options}
        matched = kind.match(ordered["rec"], ordered["truth"],
                             cut if metric.name in MEASURES else None, name, given)
        values = kind.run(name, metric.kernel, matched, given)
        for row, value in zip(sql, values, strict=True):
            if row[j] is None:
                assert math.isnan(value), name
            else:
                assert value == pytest.approx(row[j], abs=1e-12), name


def test_greedy_ideal_ties_go_to_the_largest_item_id(con) -> None:
    """Items x {1, 2}, y {3, 4}, w {1, 3} all gain 2 first (alpha 0.5). Taking y (the largest
    id) then x gives the ideal gains 2, 2, 1 (w's subtopics each covered once: 0.5 + 0.5); taking
    w first would give 2, 1.5, 1.5. rec = [x]: alpha-nDCG@3 = 2 / (2 + 2 / log2(3) + 1 / 2)
    = 0.53165; with x renamed a and w renamed z, w ranks first in the ideal:
    2 / (2 + 1.5 / log2(3) + 1.5 / 2) = 0.54107. pyndeval gives both (checked here too)."""
    truth = ("[{'subtopic': 1, 'item': 'X', 'grade': 1}, {'subtopic': 2, 'item': 'X', 'grade': 1},"
             " {'subtopic': 3, 'item': 'y', 'grade': 1}, {'subtopic': 4, 'item': 'y', 'grade': 1},"
             " {'subtopic': 1, 'item': 'W', 'grade': 1}, {'subtopic': 3, 'item': 'W', 'grade': 1}]")
    first = 2 / (2 + 2 / math.log2(3) + 0.5)
    second = 2 / (2 + 1.5 / math.log2(3) + 0.75)
    for x, w, expected in (("x", "w", first), ("a", "z", second)):
        text = truth.replace("'X'", f"'{x}'").replace("'W'", f"'{w}'")
        value = con.sql(f"SELECT alpha_ndcg(['{x}'], {text}, 3)").fetchall()[0][0]
        assert value == pytest.approx(expected, abs=1e-15)
        qrels = [("q", s, d, 1) for s, d in (("1", x), ("2", x), ("3", "y"), ("4", "y"),
                                              ("1", w), ("3", w))]
        peer = pyndeval.ndeval(qrels, [("q", x, 1.0)], ["alpha-nDCG@3"])["q"]["alpha-nDCG@3"]
        assert peer == pytest.approx(expected, abs=1e-15)


def test_collection_normalisation_by_hand(con) -> None:
    """One subtopic, its item at rank 2 of 2: alpha-DCG@5 = (1 / log2(3)) / sum_{i<=5}
    0.5^(i-1) / log2(1 + i), ERR-IA@5 = (1 / 2) / sum_{i<=5} 0.5^(i-1) / i, P-IA@5 = 1 / 5,
    NRBP = (1 - 0.25) * 0.5 = 0.375."""
    truth = "[{'subtopic': 's', 'item': 2, 'grade': 1}]"
    values = con.sql(f"SELECT alpha_dcg([1, 2], {truth}, 5), err_ia([1, 2], {truth}, 5), "
                     f"precision_ia([1, 2], {truth}, 5), nrbp([1, 2], {truth})").fetchall()[0]
    dcg = sum(0.5 ** (i - 1) / math.log2(1 + i) for i in range(1, 6))
    err = sum(0.5 ** (i - 1) / i for i in range(1, 6))
    assert values == pytest.approx((1 / math.log2(3) / dcg, 0.5 / err, 0.2, 0.375), abs=1e-15)


def test_bad_input_is_named(con) -> None:
    truth = "[{'subtopic': 's', 'item': 2, 'grade': 'nan'::DOUBLE}]"
    with pytest.raises(Exception, match="alpha_ndcg: truth holds a grade that is not a finite"):
        con.sql(f"SELECT alpha_ndcg([1, 2], {truth}, 5)").fetchall()
    with pytest.raises(Exception, match=r"nrbp: beta must be a finite number >= 0 and <= 1"):
        con.sql("SELECT nrbp([1], [{'subtopic': 's', 'item': 1, 'grade': 1}], beta := 2)"
                ).fetchall()
    assert con.sql("SELECT alpha_ndcg(NULL::INT[], [{'subtopic': 's', 'item': 1, 'grade': 1}])"
                   ).fetchall() == [(None,)]


def test_kernels_and_sql_agree_on_nulls(con) -> None:
    """A NULL rec or truth is NULL; a NULL item in rec is no item; entries with a NULL field are
    left out; a NULL list among others leaves the other rows' matching intact."""
    entry = pa.struct([("subtopic", pa.string()), ("item", pa.string()), ("grade", pa.int64())])
    truth = pa.array([
        [{"subtopic": "1", "item": "a", "grade": 1}, {"subtopic": "2", "item": "b", "grade": 1}],
        None,
        [{"subtopic": "1", "item": "a", "grade": 1}, {"subtopic": None, "item": "b", "grade": 1},
         {"subtopic": "2", "item": "c", "grade": None}, {"subtopic": "2", "item": "b",
                                                          "grade": 1}],
        [{"subtopic": "1", "item": "b", "grade": 1}],
    ], pa.list_(entry))
    rec = pa.array([None, ["a"], [None, "b", "a"], ["a", "b", "b"]], pa.list_(pa.string()))
    null_table = pa.table({"row": [0, 1, 2, 3], "rec": rec, "truth": truth})  # noqa: F841
    kind = INPUT_KINDS["subtopics"]
    for metric in diversity.METRICS:
        sql = [r[0] for r in con.sql(f"SELECT {metric.name}(rec, truth) FROM null_table "
                                     "ORDER BY row").fetchall()]
        options = {o.name: o.default for o in metric.options}
        matched = kind.match(rec, truth, None, metric.name, options)
        values = kind.run(metric.name, metric.kernel, matched, options)
        assert sql[:2] == [None, None], metric.name
        assert np.isnan(values[:2]).all(), metric.name
        assert values[2:] == pytest.approx(sql[2:], abs=1e-12), metric.name
