"""trec_eval's measures (duckrank.metrics.trec_eval) and the binary metrics over MAP truth,
against trec_eval's own C code (pytrec-eval-terrier, run in the test) on generated runs with
score ties, unjudged documents, negative grades and queries without relevant documents; the
measures pytrec_eval lacks (rbp, rbp_resid, unj, relstring) against hand calculations written
out below; the numpy kernels against the SQL.

Each ranking is built in trec_eval's order (score descending, then docno descending), as
trec_eval sorts a run, so that duckrank's ranks are trec_eval's.
"""

import math
import random

import numpy as np
import pytest

import duckrank
from duckrank.matching.arrays import match_graded_hits, match_judged
from duckrank.metrics import METRICS

pytrec_eval = pytest.importorskip("pytrec_eval")


def _generated(seed: int = 16, queries: int = 40) -> tuple[dict, dict]:
    """Runs with ties (integer scores 0..4) and qrels with grades -1..3 over 25 documents, some
    retrieved documents judged, some not; every 8th query has no relevant document, and q0 has
    only judged non-relevant ones of grade 0."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(queries):
        docs = [f"d{i:02d}" for i in range(25)]
        judged = rng.sample(docs, rng.randint(1, 15))
        top = 0 if q % 8 == 0 else 3
        qrels[f"q{q}"] = {d: rng.randint(-1, top) for d in judged}
        retrieved = rng.sample(docs, rng.randint(1, 20))
        run[f"q{q}"] = {d: float(rng.randint(0, 4)) for d in retrieved}
    qrels["q0"] = {"d00": 0, "d01": 0}
    return qrels, run


QRELS, RUN = _generated()


def _ranked(scores: dict) -> list:
    """trec_eval's order: score descending, ties by docno descending."""
    return sorted(scores, key=lambda d: (scores[d], d), reverse=True)


@pytest.fixture(scope="module", params=[False, True], ids=["sql", "native"])
def table(request):
    con = duckrank.connect(native=request.param)
    con.execute("CREATE TABLE t (qid VARCHAR, rec VARCHAR[], truth MAP(VARCHAR, DOUBLE))")
    con.executemany(
        "INSERT INTO t VALUES (?, ?, map(?::VARCHAR[], ?::DOUBLE[]))",
        [(q, _ranked(RUN[q]), list(QRELS[q]), [float(g) for g in QRELS[q].values()])
         for q in RUN],
    )
    # Rows trec_eval never sees, for the kernels against the SQL: an empty rec (every measure
    # 0, as trec_eval's -c gives a query missing from the run), an empty truth, NULLs.
    con.execute("INSERT INTO t VALUES ('empty rec', [], map(['d1'], [1.0])), "
                "('empty truth', ['d1'], map([]::VARCHAR[], []::DOUBLE[])), "
                "('nulls', NULL, NULL)")
    yield con
    con.close()


def _reference(measures: set[str], relevance_level: int = 1) -> dict:
    return pytrec_eval.RelevanceEvaluator(QRELS, measures, relevance_level).evaluate(RUN)


def _ours(con, call: str) -> dict:
    return dict(con.execute(f"SELECT qid, {call} FROM t").fetchall())


# (duckrank call, pytrec_eval measure, its per-query key); "{level}" becomes min_grade.
CASES = [
    ("num_ret(rec, truth)", "num_ret", "num_ret"),
    ("num_rel(rec, truth)", "num_rel", "num_rel"),
    ("num_rel_ret(rec, truth)", "num_rel_ret", "num_rel_ret"),
    ("r_precision(rec, truth)", "Rprec", "Rprec"),
    ("bpref(rec, truth)", "bpref", "bpref"),
    ("infap(rec, truth)", "infAP", "infAP"),
    ("eleven_point_ap(rec, truth)", "11pt_avg", "11pt_avg"),
    ("set_precision(rec, truth)", "set_P", "set_P"),
    ("set_recall(rec, truth)", "set_recall", "set_recall"),
    ("set_map(rec, truth)", "set_map", "set_map"),
    ("set_f(rec, truth)", "set_F", "set_F"),
    ("set_relative_precision(rec, truth)", "set_relative_P", "set_relative_P"),
    ("utility(rec, truth)", "utility", "utility"),
    ("bing(rec, truth)", "binG", "binG"),
    ("normalized_gain(rec, truth)", "G", "G"),
    ("ndcg_rel(rec, truth)", "ndcg_rel", "ndcg_rel"),
    ("rndcg(rec, truth)", "Rndcg", "Rndcg"),
    ("num_nonrel_judged_ret(rec, truth)", "num_nonrel_judged_ret", "num_nonrel_judged_ret"),
    *[(f"iprec_at_recall(rec, truth, recall := {level / 10})", "iprec_at_recall",
       f"iprec_at_recall_{level / 10:.2f}") for level in range(11)],
    *[(f"r_precision_mult(rec, truth, multiplier := {m / 10})", "Rprec_mult",
       f"Rprec_mult_{m / 10:.2f}") for m in range(2, 21, 2)],
    *[(f"relative_precision(rec, truth, {k})", "relative_P", f"relative_P_{k}")
      for k in (5, 10, 15)],
    # Binary metrics on MAP truth: NULL without relevant items, where trec_eval says 0.
    ("coalesce(average_precision(rec, truth), 0)", "map", "map"),
    ("coalesce(mrr(rec, truth), 0)", "recip_rank", "recip_rank"),
    *[(f"coalesce(average_precision(rec, truth, {k}), 0)", "map_cut", f"map_cut_{k}")
      for k in (5, 10)],
    *[(f"coalesce(recall_at(rec, truth, {k}), 0)", "recall", f"recall_{k}") for k in (5, 10)],
    *[(f"coalesce(hitrate(rec, truth, {k}), 0)", "success", f"success_{k}") for k in (1, 5)],
]


def _mismatches(con, cases: list[tuple[str, str, str]], relevance_level: int = 1) -> list:
    """(qid, call, ours, trec_eval's) wherever they differ by more than 1e-12: every call in one
    query, every measure in one pytrec_eval run."""
    expected = _reference({measure for _, measure, _ in cases}, relevance_level)
    calls = ", ".join(call for call, _, _ in cases)
    rows = {row[0]: row[1:] for row in con.execute(f"SELECT qid, {calls} FROM t").fetchall()}
    return [
        (qid, call, rows[qid][i], values[key])
        for qid, values in expected.items() for i, (call, _, key) in enumerate(cases)
        if rows[qid][i] != pytest.approx(values[key], abs=1e-12, rel=0)
    ]


def test_measures_are_trec_evals(table):
    assert _mismatches(table, CASES) == []


def test_min_grade_is_trec_evals_relevance_level(table):
    """min_grade := 2 is trec_eval's -l 2 (pytrec_eval's relevance_level)."""
    cases = [
        ("bpref(rec, truth, min_grade := 2)", "bpref", "bpref"),
        ("infap(rec, truth, min_grade := 2)", "infAP", "infAP"),
        ("coalesce(average_precision(rec, truth, min_grade := 2), 0)", "map", "map"),
        ("r_precision(rec, truth, min_grade := 2)", "Rprec", "Rprec"),
        ("rndcg(rec, truth, min_grade := 2)", "Rndcg", "Rndcg"),
        ("num_nonrel_judged_ret(rec, truth, min_grade := 2)", "num_nonrel_judged_ret",
         "num_nonrel_judged_ret"),
    ]
    assert _mismatches(table, cases, relevance_level=2) == []


@pytest.mark.parametrize("function, measure", [("average_precision", "gm_map"),
                                               ("bpref", "gm_bpref")])
def test_geometric_means(table, function, measure):
    """trec_eval's gm_map and gm_bpref: pytrec_eval gives each query's log(max(value, 1e-5))
    (trec_eval's MIN_GEO_MEAN) and trec_eval prints exp of their mean."""
    expected = math.exp(np.mean([v[measure] for v in _reference({measure}).values()]))
    ours = table.execute(f"SELECT trec_geomean(coalesce({function}(rec, truth), 0)) FROM t "
                         "WHERE qid LIKE 'q%'")
    assert ours.fetchall()[0][0] == pytest.approx(expected, rel=1e-12)


# rec d1..d5 against truth {d1: 1, d3: 0, d9: 2, d4: -1, d7: 0}: d1 relevant at rank 1, d3
# judged non-relevant at 3, d4 in the pool but unjudged at 4, d2 and d5 not in the pool.
HAND = "['d1','d2','d3','d4','d5'], map(['d1','d3','d9','d4','d7'], [1, 0, 2, -1, 0]::DOUBLE[])"


@pytest.mark.parametrize("call, expected", [
    # unj@k: items not in the pool or of negative grade in the top k, over k (m_unjudged.c):
    # d2, d4, d5 of 5 -> 3/5; at k = 10 rec is shorter and the rest count as judged -> 3/10.
    ("unjudged({args})", 3 / 5),
    ("unjudged({args}, 10)", 3 / 10),
    # rbp with p = 0.9: (1 - 0.9) * 0.9^0 (one hit at rank 1).
    ("rbp({args})", 0.1),
    # rbp_resid (m_rbp_resid.c): p^5 + (1 - p) (p^1 + p^3 + p^4) for the unjudged d2, d4, d5.
    ("rbp_resid({args})", 0.9 ** 5 + 0.1 * (0.9 + 0.9 ** 3 + 0.9 ** 4)),
    # relstring (m_relstring.c): 1, '-' not in pool, 0, '.' negative grade, '-'.
    ("relstring({args})", "1-0.-"),
    ("relstring({args}, 2)", "1-"),
])
def test_measures_without_pytrec_eval(table, call, expected):
    value = table.execute("SELECT " + call.format(args=HAND)).fetchall()[0][0]
    assert value == (expected if isinstance(expected, str) else pytest.approx(expected, abs=1e-15))


def test_negative_grades_are_not_relevant_and_bad_grades_fail(table):
    """A negative grade is never relevant, even for min_grade := -1 (trec_eval: in the pool,
    unjudged); a NaN grade is an error naming the function and the item."""
    value = table.execute(
        "SELECT num_rel(['a'], map(['a', 'b'], [-1.0, 0.0]), min_grade := -1)").fetchall()
    assert value == [(1.0,)]  # b (grade 0 >= -1) only
    with pytest.raises(Exception, match="bpref: the grade of item a in truth must be a finite"):
        table.execute("SELECT bpref(['a'], map(['a'], ['nan'::DOUBLE]))").fetchall()
    with pytest.raises(Exception, match="precision_at: min_grade must be a finite number"):
        table.execute("SELECT precision_at(['a'], map(['a'], [1.0]), min_grade := 'x')").fetchall()


def test_map_truth_equals_list_of_relevant_items(table):
    """Every binary metric on MAP truth is the metric on the LIST of items of grade >= min_grade
    (one definition: the overload is derived from the record). min_grade := NULL (grade > 0) is
    checked against trec_eval above."""
    names = sorted({m.name for m in METRICS if m.inputs == "graded_hits"})
    relevant = "list_transform(list_filter(map_entries(truth), lambda e: e.value >= 2), " \
        "lambda e: e.key)"
    same = ", ".join(
        f"bool_and({name}(rec, truth, 7, min_grade := 2) IS NOT DISTINCT FROM "
        f"{name}(rec, {relevant}, 7))" for name in names
    )
    assert table.execute(f"SELECT {same} FROM t").fetchall() == [(True,) * len(names)]


def test_kernels_agree_with_sql(table):
    """The numpy kernels of the binary measures, on MAP truth through match_graded_hits, give
    the SQL's values."""
    rows = table.sql("SELECT rec, truth FROM t").to_arrow_table()
    rec, truth = rows.column("rec"), rows.column("truth")
    metrics = [m for m in METRICS if m.inputs == "graded_hits" and m.kernel is not None]
    columns = ", ".join(f"{m.name}(rec, truth, 7, min_grade := 2)" for m in metrics)
    sql = np.array(table.execute(f"SELECT {columns} FROM t").fetchall(), dtype=np.float64)
    hits = match_graded_hits(rec, truth, 7, min_grade=2)
    for column, metric in enumerate(metrics):
        kernel = metric.kernel(hits, min_grade=2)
        np.testing.assert_allclose(kernel, sql[:, column], rtol=0, atol=1e-12,
                                   err_msg=metric.name)


@pytest.mark.parametrize("k, level", [(None, None), (7, 2)])
def test_judged_kernels_agree_with_sql(table, k, level):
    """The numpy kernels of the measures over judged truth (match_judged) give the SQL's values,
    relstring's text included."""
    rows = table.sql("SELECT rec, truth FROM t").to_arrow_table()
    judged = match_judged(rows.column("rec"), rows.column("truth"), k, min_grade=level)
    metrics = [m for m in METRICS if m.inputs == "judged"]
    cut = "" if k is None else f", {k}"

    def call(metric) -> str:
        grade = ", min_grade := ?" if "min_grade" in {o.name for o in metric.options} else ""
        return f"{metric.name}(rec, truth{cut}{grade})"

    levels = [level for m in metrics if "min_grade" in {o.name for o in m.options}]
    sql = table.execute(f"SELECT {', '.join(map(call, metrics))} FROM t", levels).fetchall()
    for column, metric in enumerate(metrics):
        options = {"min_grade": level} if "min_grade" in {o.name for o in metric.options} else {}
        kernel = metric.kernel(judged, **options)
        expected = [row[column] for row in sql]
        if metric.name == "relstring":
            assert list(kernel) == expected
            continue
        expected = np.array([np.nan if v is None else v for v in expected], dtype=np.float64)
        np.testing.assert_allclose(kernel.astype(np.float64), expected, rtol=0, atol=1e-12,
                                   err_msg=metric.name)
