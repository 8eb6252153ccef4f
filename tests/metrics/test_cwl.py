"""The C/W/L measures (duckrank.metrics.cwl) against cwl-eval 1.0.12 as ir_measures 0.4.3 runs it
(its cwl_eval provider, in the test), per query, to 1e-12, on seeded random qrels with grades
-1..3, unjudged and repeated documents, a ranking longer than cwl_eval's 1000 items, and the
parameters at and away from their defaults; the numpy kernels against the SQL; by-hand values;
bad options.

The runs have distinct scores and each rec is built in score order (the order cwl_eval reads).
"""

from __future__ import annotations

import logging
import math
import random

import numpy as np
import pyarrow as pa
import pytest

import duckrank
from duckrank.metrics import cwl
from duckrank.metrics.inputs import INPUT_KINDS

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("cwl")
logging.getLogger("ir_measures.cwl_eval").setLevel(logging.ERROR)

FUNCTIONS = [m.name for m in cwl.METRICS]


@pytest.fixture(scope="module")
def con():
    connection = duckrank.connect(functions=FUNCTIONS)
    yield connection
    connection.close()


def _generated(seed: int) -> tuple[dict, dict]:
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(12):
        docs = [f"d{i:02d}" for i in range(30)]
        qrels[f"q{q}"] = {d: rng.randint(-1, 3 if q % 5 else 0)
                          for d in rng.sample(docs, rng.randint(1, 15))}
        retrieved = rng.sample(docs, rng.randint(1, 25))
        run[f"q{q}"] = {d: float(s) for d, s in zip(retrieved, rng.sample(range(1000),
                                                                           len(retrieved)),
                                                      strict=True)}
    # A ranking past cwl_eval's 1000 items, relevant items on both sides of rank 1000.
    long_docs = [f"x{i:04d}" for i in range(1100)]
    run["q_long"] = {d: float(2000 - i) for i, d in enumerate(long_docs)}
    qrels["q_long"] = {long_docs[i]: 1 + i % 3 for i in (0, 3, 500, 998, 999, 1000, 1050)}
    return qrels, run


def _table(qrels: dict, run: dict) -> pa.Table:
    queries = sorted(run)
    recs = [[d for d, _ in sorted(run[q].items(), key=lambda x: -x[1])] for q in queries]
    truth = pa.array([list(qrels[q].items()) for q in queries],
                     pa.map_(pa.string(), pa.float64()))
    return pa.table({"query": queries, "rec": recs, "truth": truth})


# (ir_measures' measure, duckrank's call); ir_measures requires max_rel.
CASES = [
    ("BPM(max_rel=3)@5", "bpm(rec, truth, 5, max_rel := 3)"),
    ("BPM(T=2.5,min_rel=1,max_rel=3)@20",
     "bpm(rec, truth, 20, t := 2.5, min_rel := 1, max_rel := 3)"),
    ("SDCG(max_rel=3)@10", "sdcg(rec, truth, 10, max_rel := 3)"),
    ("SDCG(max_rel=2)@1000", "sdcg(rec, truth, 1000, max_rel := 2)"),
    ("NERR8(max_rel=3)@10", "nerr8(rec, truth, 10, max_rel := 3)"),
    ("NERR9(max_rel=3)@20", "nerr9(rec, truth, 20, max_rel := 3)"),
    ("NERR10(max_rel=3)", "nerr10(rec, truth, max_rel := 3)"),
    ("NERR10(p=0.7,min_rel=1,max_rel=2)",
     "nerr10(rec, truth, p := 0.7, min_rel := 1, max_rel := 2)"),
    ("NERR11(max_rel=3)", "nerr11(rec, truth, max_rel := 3)"),
    ("NERR11(T=3.0,max_rel=3)", "nerr11(rec, truth, t := 3, max_rel := 3)"),
    ("INST(max_rel=3)", "inst(rec, truth, max_rel := 3)"),
    ("INST(T=2.0,max_rel=1)", "inst(rec, truth, t := 2, max_rel := 1)"),
    ("INSQ(max_rel=3)", "insq(rec, truth, max_rel := 3)"),
    ("INSQ(T=0.5,max_rel=2)", "insq(rec, truth, t := 0.5, max_rel := 2)"),
    # ir_measures runs RBP(rel=r) through cwl_eval with binary gains (grade >= r).
    ("RBP(rel=1)", "cwl_rbp(rec, truth, p := 0.8, min_rel := 0, max_rel := 1)"),
    ("RBP(p=0.95,rel=2)", "cwl_rbp(rec, truth, p := 0.95, min_rel := 1, max_rel := 2)"),
]


def test_matches_cwl_eval_per_query(con) -> None:
    qrels, run = _generated(5)
    parsed = {text: ir_measures.parse_measure(text) for text, _ in CASES}
    theirs: dict = {measure: {} for measure in parsed.values()}
    for metric in ir_measures.iter_calc(list(theirs), qrels, run):
        theirs[metric.measure][metric.query_id] = metric.value
    cwl_table = _table(qrels, run)  # noqa: F841 (read by DuckDB)
    rows = con.sql("SELECT query, " + ", ".join(call for _, call in CASES)
                   + " FROM cwl_table ORDER BY query").fetchall()
    assert len(rows) == len(run)
    for row in rows:
        for (text, _), value in zip(CASES, row[1:], strict=True):
            assert value == pytest.approx(theirs[parsed[text]][row[0]], abs=1e-12), (row[0], text)


def test_kernels_match_the_sql(con) -> None:
    qrels, run = _generated(9)
    cwl_table = _table(qrels, run)
    kind = INPUT_KINDS["judged"]
    options = {"t": 2.0, "p": 0.7, "min_rel": 1, "max_rel": 3}
    for k in (7, None):
        for metric in cwl.METRICS:
            given = {o.name: options[o.name] for o in metric.options}
            named = "".join(f", {n} := {v}" for n, v in given.items())
            cut = "" if k is None else f", {k}"
            sql = con.sql(f"SELECT {metric.name}(rec, truth{cut}{named}) FROM cwl_table "
                          "ORDER BY query").fetchall()
            ordered = cwl_table.sort_by("query")
            matched = kind.match(ordered["rec"], ordered["truth"],
                                 None if k is None else np.full(len(ordered), float(k)),
                                 metric.name, given)
            values = kind.run(metric.name, metric.kernel, matched, given)
            assert np.allclose(values, [r[0] for r in sql], atol=1e-12, rtol=0), metric.name


def test_by_hand(con) -> None:
    """rec = a (grade 3), x (unjudged), b (grade 1); max_rel 3: gains 1, 0, 1/3.
    BPM(T=1)@5: the gain reaches T at rank 1, so the user reads 1 item: 1.
    SDCG@2: (1 / log2(2) + 0) / (1 + 1 / log2(3)).
    NERR8@3: C(1) = 1 - 1 = 0: the user stops at rank 1: W(1) = 1, value 1."""
    truth = "map(['a', 'b'], [3.0, 1.0])"
    bpm, sdcg, nerr8 = con.sql(
        f"SELECT bpm(['a', 'x', 'b'], {truth}, 5, max_rel := 3), "
        f"sdcg(['a', 'x', 'b'], {truth}, 2, max_rel := 3), "
        f"nerr8(['a', 'x', 'b'], {truth}, 3, max_rel := 3)").fetchall()[0]
    assert bpm == 1.0
    assert sdcg == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-15)
    assert nerr8 == 1.0


def test_bad_options_are_named(con) -> None:
    with pytest.raises(Exception, match=r"insq: max_rel must be greater than min_rel, got "
                                        r"max_rel 1 and min_rel 2"):
        con.sql("SELECT insq(['a'], map(['a'], [1.0]), min_rel := 2, max_rel := 1)").fetchall()
    with pytest.raises(Exception, match=r"inst: t must be a finite number > 0"):
        con.sql("SELECT inst(['a'], map(['a'], [1.0]), t := 0)").fetchall()
