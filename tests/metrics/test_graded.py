"""Acceptance tests of the graded-relevance issue: ndcg / dcg with gain, discount and base options,
err, half_life_utility and ndcg_grades (Hivemall's graded form), through real DuckDB.

Where each expected value comes from is said next to it: the seeds' worked examples (Järvelin's
DCG in the "Rank-Aware Top-N Metrics" lecture slides, Hivemall's dummy_recrel in the Apache Hivemall
user guide, "Evaluation of ranking problems"), hand calculations written out here, or peer tools run
in the test on random graded cases (ranx, pytrec-eval-terrier, ir-measures, scikit-learn), each with
the convention it follows. The numpy kernels (used where there is no DuckDB) are checked against the
SQL macros on the same rows.
"""

import math
import random
from decimal import Decimal, getcontext
from fractions import Fraction

import duckdb
import numpy as np
import pytest
from conftest import scalar

import duckrank
from duckrank.matching.arrays import match_grade_lists, match_grades, match_hits
from duckrank.metrics import binary, by_name, graded

# --- seed 003: Järvelin & Kekäläinen's DCG, linear (rating) gain ---------------------------------
# The slides' list: A rated 4, B 3, C 0, D 5, recommended in the order A, B, C, D, with
# disc(i) = 1 for i <= 2, log2(i) after (base b = 2).
#   DCG     = 4/1 + 3/1 + 0/log2(3) + 5/log2(4)       = 9.5
#   DCG_ideal (D, A, B, C) = 5/1 + 4/1 + 3/log2(3) + 0 = 9 + 3/log2(3) = 10.89... ("10.9")
#   nDCG    = 9.5 / 10.89 = 0.872
JARVELIN_TRUTH = "map(['A', 'B', 'C', 'D'], [4, 3, 0, 5])"
JARVELIN = f"['A', 'B', 'C', 'D'], {JARVELIN_TRUTH}"
JARVELIN_OPTIONS = "gain := 'linear', discount := 'jarvelin'"


def test_seed_003_jarvelin_example(con):
    dcg = scalar(con, f"SELECT dcg({JARVELIN}, {JARVELIN_OPTIONS})")
    ideal_order = f"['D', 'A', 'B', 'C'], {JARVELIN_TRUTH}"
    ideal = scalar(con, f"SELECT dcg({ideal_order}, {JARVELIN_OPTIONS})")
    ndcg = scalar(con, f"SELECT ndcg({JARVELIN}, {JARVELIN_OPTIONS})")
    assert dcg == 9.5
    assert ideal == pytest.approx(9 + 3 / math.log2(3), rel=1e-15)
    assert round(ideal, 1) == 10.9
    assert ndcg == pytest.approx(9.5 / (9 + 3 / math.log2(3)), abs=1e-15)
    assert round(ndcg, 3) == 0.872


def test_seed_003_example_with_the_default_options(con):
    # Same list, gain 2^g - 1 and disc log2(i + 1):
    # DCG = 15/1 + 7/log2(3) + 0/2 + 31/log2(5); ideal = 31/1 + 15/log2(3) + 7/2 + 0/log2(5).
    dcg = 15 + 7 / math.log2(3) + 31 / math.log2(5)
    ideal = 31 + 15 / math.log2(3) + 7 / 2
    assert scalar(con, f"SELECT dcg({JARVELIN})") == pytest.approx(dcg, abs=1e-13)
    assert scalar(con, f"SELECT ndcg({JARVELIN})") == pytest.approx(dcg / ideal, abs=1e-15)



@pytest.fixture(scope="module")
def con():
    """One connection for the module (registering duckrank takes most of a second, and most
    tests here only read): tests that create a table name it for themselves or replace it."""
    connection = duckrank.connect()
    yield connection
    connection.close()


# --- seed 001: Hivemall's dummy_recrel -----------------------------------------------------------
DUMMY_RECREL = """
CREATE OR REPLACE TEMP TABLE dummy_recrel AS SELECT * FROM (VALUES
  (1, 1, 10.0, 5.0), (1, 3, 8.0, 2.0), (1, 2, 6.0, 4.0), (1, 6, 2.0, 1.0), (1, 4, 1.0, 3.0),
  (2, 1, 10.0, 5.0), (2, 3, 8.0, 2.0), (2, 2, 6.0, 4.0), (2, 6, 2.0, 1.0), (2, 4, 1.0, 3.0),
  (3, 1, 10.0, 5.0), (3, 3, 8.0, 2.0), (3, 2, 6.0, 4.0), (3, 6, 2.0, 1.0), (3, 4, 1.0, 3.0)
) t(userid, itemid, score, relscore)
"""

# The guide's query in DuckDB: Hivemall's struct(relscore, itemid) is a struct literal, and the
# graded form is ndcg_grades in duckrank's main schema (ndcg(rec, truth) reads rec as item ids).
HIVEMALL_QUERY = """
WITH truth AS (
  SELECT userid, to_ordered_list(relscore, '-reverse') AS truth FROM dummy_recrel GROUP BY userid
), rec AS (
  SELECT userid,
         to_ordered_list({'relscore': relscore, 'itemid': itemid}, score, '-reverse') AS rec,
         count(itemid) AS max_k
  FROM dummy_recrel GROUP BY userid
)
SELECT ndcg_grades(t1.rec, t2.truth, 2), ndcg_grades(t1.rec, t2.truth, 3)
FROM rec t1 JOIN truth t2 ON (t1.userid = t2.userid)
"""

# The same data the duckrank way: rec as item ids, truth as a MAP item -> grade built with the
# issue's map_from_entries(list({'key': itemid, 'value': relscore})).
MAP_QUERY = """
WITH truth AS (
  SELECT userid, map_from_entries(list({'key': itemid, 'value': relscore})) AS truth
  FROM dummy_recrel GROUP BY userid
), rec AS (
  SELECT userid, to_ordered_list(itemid, score, '-reverse') AS rec FROM dummy_recrel GROUP BY userid
)
SELECT ndcg(t1.rec, t2.truth, 2), ndcg(t1.rec, t2.truth, 3)
FROM rec t1 JOIN truth t2 ON (t1.userid = t2.userid)
"""

# The guide's printed values.
HIVEMALL_AT_2, HIVEMALL_AT_3 = 0.8128912838590544, 0.9187707805346093


def _exact_dummy_recrel_ndcg(k: int) -> Decimal:
    """Relevances in rec order [5, 2, 4, 1, 3], ideal [5, 4, 3, 2, 1]; 40 significant digits."""
    getcontext().prec = 40

    def dcg(grades: list[int]) -> Decimal:
        return sum(Decimal(2**g - 1) / (Decimal(i + 2).ln() / Decimal(2).ln())
                   for i, g in enumerate(grades[:k]))

    return dcg([5, 2, 4, 1, 3]) / dcg([5, 4, 3, 2, 1])


@pytest.mark.parametrize("query", [HIVEMALL_QUERY, MAP_QUERY], ids=["ndcg_grades", "map_truth"])
def test_seed_001_dummy_recrel(con, query):
    con.execute(DUMMY_RECREL)
    rows = con.execute(query).fetchall()
    assert len(rows) == 3
    for at_2, at_3 in rows:
        # Hivemall prints 0.8128912838590544 and 0.9187707805346093: it divides by
        # ln(i + 1) / ln 2 and averages three rows. The exact values (0.81289128385905447845...,
        # 0.91877078053460933922...) round to the doubles duckrank returns, one unit in the last
        # place above Hivemall's.
        assert abs(at_2 - HIVEMALL_AT_2) <= math.ulp(HIVEMALL_AT_2)
        assert abs(at_3 - HIVEMALL_AT_3) <= math.ulp(HIVEMALL_AT_3)
        assert at_2 == float(_exact_dummy_recrel_ndcg(2))
        assert at_3 == float(_exact_dummy_recrel_ndcg(3))


def test_ndcg_grades_sorts_truth_itself(con):
    # Hivemall trusts the caller to sort truth (an unsorted [3, 4, 5] gives 1.26 there); duckrank
    # sorts it, so any order of the same grades gives the guide's k = 3 value.
    rec = "[{'r': 5}, {'r': 2}, {'r': 4}, {'r': 1}, {'r': 3}]"
    for truth in ("[5, 4, 3, 2, 1]", "[1, 2, 3, 4, 5]", "[3, 1, 5, 2, 4]"):
        value = scalar(con, f"SELECT ndcg_grades({rec}, {truth}, 3)")
        assert abs(value - HIVEMALL_AT_3) <= math.ulp(HIVEMALL_AT_3)


# --- hand calculations ---------------------------------------------------------------------------

def test_ndcg_exponential_gain_by_hand(con):
    # rec [a, b] with a -> 1, b -> 3: DCG = (2^1 - 1)/1 + (2^3 - 1)/log2(3); ideal (b, a) =
    # 7/1 + 1/log2(3).
    expected = (1 + 7 / math.log2(3)) / (7 + 1 / math.log2(3))
    assert scalar(con, "SELECT ndcg(['a', 'b'], map(['a', 'b'], [1, 3]))") == pytest.approx(
        expected, abs=1e-15)


def test_linear_gain_takes_fractional_grades(con):
    # rec [x, y, z], grades y -> 0.5, z -> 2.5: DCG = 0.5/log2(3) + 2.5/log2(4); ideal (z, y) =
    # 2.5/1 + 0.5/log2(3).
    expected = (0.5 / math.log2(3) + 2.5 / 2) / (2.5 + 0.5 / math.log2(3))
    value = scalar(con, "SELECT ndcg(['x', 'y', 'z'], map(['y', 'z'], [0.5, 2.5]), "
                        "gain := 'linear')")
    assert value == pytest.approx(expected, abs=1e-15)


def test_jarvelin_discount_with_another_base(con):
    # base 3: ranks 1..3 are not discounted, rank 4 is divided by log3(4). rec [p, q, r, s] with
    # s -> 2 only, linear gain: DCG = 2 / log3(4); ideal = 2 / 1.
    value = scalar(con, "SELECT dcg(['p', 'q', 'r', 's'], map(['s'], [2]), gain := 'linear', "
                        "discount := 'jarvelin', base := 3)")
    assert value == pytest.approx(2 / (math.log(4) / math.log(3)), abs=1e-15)
    value = scalar(con, "SELECT ndcg(['p', 'q', 'r', 's'], map(['s'], [2]), gain := 'linear', "
                        "discount := 'jarvelin', base := 3)")
    assert value == pytest.approx(1 / (math.log(4) / math.log(3)), abs=1e-15)


def test_err_by_hand(con):
    # Grades in rec order 3, 0, 4, 1 (item d is not in truth... it is: 1), max_grade 4:
    # R = (2^g - 1) / 16 = 7/16, 0, 15/16, 1/16.
    # ERR = 7/16 / 1 + (9/16)(1) 0 / 2 + (9/16)(1)(15/16) / 3 + (9/16)(1)(1/16)(1/16) / 4.
    r = [Fraction(7, 16), Fraction(0), Fraction(15, 16), Fraction(1, 16)]
    expected = r[0] + (1 - r[0]) * r[1] / 2 + (1 - r[0]) * (1 - r[1]) * r[2] / 3 \
        + (1 - r[0]) * (1 - r[1]) * (1 - r[2]) * r[3] / 4
    rec_truth = "['a', 'b', 'c', 'd'], map(['a', 'c', 'd', 'e'], [3, 4, 1, 2])"
    assert scalar(con, f"SELECT err({rec_truth})") == float(expected)  # 0.61383056640625
    assert scalar(con, f"SELECT err({rec_truth}, 2)") == float(r[0])


def test_err_on_xclimf_scale(con):
    # The xCLiMF paper's 1..5 ratings with y_max = 5: R = (2^y - 1) / 32. rec ratings 5, 3:
    # ERR = 31/32 + (1/32)(7/32)/2.
    expected = Fraction(31, 32) + Fraction(1, 32) * Fraction(7, 32) / 2
    value = scalar(con, "SELECT err([1, 2], map([1, 2], [5, 3]), max_grade := 5)")
    assert value == float(expected)


def test_half_life_utility_by_hand(con):
    # half_life 5: weight of rank i = 2^(-(i - 1)/4). rec grades 2, 0, 3; ideal 3, 2.
    # utility = 2*1 + 0 + 3*2^(-1/2); ideal = 3*1 + 2*2^(-1/4).
    expected = (2 + 3 * 2 ** -0.5) / (3 + 2 * 2 ** -0.25)
    value = scalar(con, "SELECT half_life_utility([1, 2, 3], map([1, 3], [2, 3]))")
    assert value == pytest.approx(expected, abs=1e-15)
    # half_life 2: weights 1, 1/2, 1/4. rec grades 0, 1, 1 against ideal 1, 1: (1/2 + 1/4) / 1.5.
    value = scalar(con, "SELECT half_life_utility([7, 1, 2], [1, 2], half_life := 2)")
    assert value == pytest.approx(0.75 / 1.5, abs=1e-15)


def test_list_truth_means_grade_one(con):
    rec, truth_list, truth_map = "[1, 3, 2, 6]", "[1, 2, 4]", "map([1, 2, 4], [1, 1, 1])"
    for function, options in [("dcg", ""), ("err", ""), ("half_life_utility", ""),
                              ("ndcg", ""), ("ndcg", ", discount := 'jarvelin'"),
                              ("dcg", ", gain := 'linear', discount := 'jarvelin', base := 3")]:
        for k in ("2", "3", "'all'"):
            listed = scalar(con, f"SELECT {function}({rec}, {truth_list}, {k}{options})")
            mapped = scalar(con, f"SELECT {function}({rec}, {truth_map}, {k}{options})")
            assert listed == pytest.approx(mapped, abs=1e-15), (function, options, k)
    # Binary ndcg with Järvelin's discount, k = 2: one hit at rank 1 (disc 1), ideal 2 hits at
    # ranks 1 and 2 (disc 1 and 1): 1 / 2.
    assert scalar(con, f"SELECT ndcg({rec}, {truth_list}, 2, discount := 'jarvelin')") == 0.5
    # ERR with grade 1 everywhere: R = 1/16; hits at ranks 1 and 3: 1/16 + (15/16)(1)(1/16)/3.
    assert scalar(con, f"SELECT err({rec}, {truth_list})") == float(
        Fraction(1, 16) + Fraction(15, 16) * Fraction(1, 16) / 3)


# --- conventions ---------------------------------------------------------------------------------

FUNCTIONS = ("ndcg", "dcg", "err", "half_life_utility")


@pytest.mark.parametrize("function", FUNCTIONS)
def test_null_inputs_and_no_relevant_grade(con, function):
    truth = "map(['a'], [2])"
    assert scalar(con, f"SELECT {function}(NULL::VARCHAR[], {truth})") is None
    assert scalar(con, f"SELECT {function}(['a'], NULL::MAP(VARCHAR, DOUBLE))") is None
    assert scalar(con, f"SELECT {function}(['a'], {truth}, NULL)") is None
    # No positive grade in truth: NULL, as binary metrics give NULL for an empty truth.
    assert scalar(con, f"SELECT {function}(['a'], map(['a', 'b'], [0, 0]))") is None
    assert scalar(con, f"SELECT {function}(['a'], map([]::VARCHAR[], []::DOUBLE[]))") is None
    # Nothing recommended: 0.
    assert scalar(con, f"SELECT {function}([]::VARCHAR[], {truth})") == 0.0
    assert scalar(con, f"SELECT {function}(['z'], {truth}, 5)") == 0.0


def test_duplicates_and_null_elements_have_grade_zero(con):
    # [a, a, NULL, b] with a -> 2, b -> 1, exponential gain: the second a and the NULL gain 0.
    # DCG = 3/log2(2) + 0 + 0 + 1/log2(5).
    value = scalar(con, "SELECT dcg(['a', 'a', NULL, 'b'], map(['a', 'b'], [2, 1]))")
    assert value == pytest.approx(3 + 1 / math.log2(5), abs=1e-15)


def test_ideal_is_cut_at_k_not_at_len_rec(con):
    # rec [a] against a -> 1, b -> 1: with k = 5 the ideal holds both items (a short list is
    # penalised, as in binary ndcg and trec_eval); with k omitted, k = len(rec) = 1.
    truth = "map(['a', 'b'], [1, 1])"
    assert scalar(con, f"SELECT ndcg(['a'], {truth}, 5)") == pytest.approx(
        1 / (1 + 1 / math.log2(3)), abs=1e-15)
    assert scalar(con, f"SELECT ndcg(['a'], {truth})") == 1.0
    # The ideal is sorted by duckrank, whatever order the map holds.
    assert scalar(con, "SELECT ndcg(['b', 'a'], map(['a', 'b'], [1, 3]), 1)") == 1.0


@pytest.mark.parametrize(
    ("rec", "truth", "expected"),
    [
        # Any key type reaches the one MAP(VARCHAR, DOUBLE) overload; ids match by text form.
        ("[1, 2]", "map([2::BIGINT], [1])", 1 / math.log2(3)),
        ("[1::HUGEINT, 2]", "map([2::HUGEINT], [1])", 1 / math.log2(3)),
        ("['1', '2']", "map([2], [1])", 1 / math.log2(3)),
        ("['01', '2']", "map([1], [1])", 0.0),  # '01' is not the text of 1: no relevant hit
        ("['00000000-0000-0000-0000-000000000001'::UUID]",
         "map(['00000000-0000-0000-0000-000000000001'::UUID], [1])", 1.0),
    ],
)
def test_item_types(con, rec, truth, expected):
    assert scalar(con, f"SELECT dcg({rec}, {truth})") == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("ndcg(['a'], map(['a', 'b'], [1, -1]))", "ndcg: the grade of item b in truth must be a "
                                                  "finite number >= 0, got -1.0"),
        ("dcg(['a'], map(['a', 'x'], [1, 'nan'::DOUBLE]))", "dcg: the grade of item x .* got nan"),
        ("err(['a'], map(['a', 'y'], [1, NULL]))", "err: the grade of item y .* got NULL"),
        ("half_life_utility(['a'], map(['a'], ['inf'::DOUBLE]))", "grade of item a .* got inf"),
        ("ndcg(['a'], map(['a'], [1]), gain := 'lin')",
         "ndcg: gain must be one of 'exponential', 'linear', got lin"),
        ("ndcg(['a'], ['a'], discount := 'log')",
         "ndcg: discount must be one of 'log2', 'jarvelin', got log"),
        ("dcg(['a'], ['a'], discount := 'jarvelin', base := 1)", "dcg: base must be a number > 1"),
        ("ndcg(['a'], ['a'], base := 10)", "ndcg: base applies to discount := 'jarvelin' only"),
        ("ndcg(['a'], map(['a'], [1]), base := 'ten', discount := 'jarvelin')",
         "base must be a number > 1, got ten"),
        ("err(['a'], map(['a'], [5]))", "err: truth has grade 5.0 above max_grade 4; raise "
                                        "max_grade"),
        ("err(['a'], ['a'], max_grade := 0)", "err: max_grade must be a number > 0, got 0"),
        ("half_life_utility(['a'], ['a'], half_life := 1)",
         "half_life_utility: half_life must be a number > 1, got 1"),
        ("ndcg(['a'], map(['a'], [1]), 0)", "ndcg: k must be a positive integer"),
        ("ndcg_grades([{'g': 1}, {'g': -2}], [1, 2])", "ndcg_grades: grade 2 of rec must be a "
                                                       "finite number >= 0, got -2.0"),
        ("ndcg_grades([{'g': 1}], [1, 2, NULL])", "ndcg_grades: grade 3 of truth .* got NULL"),
    ],
)
def test_errors_name_function_argument_and_value(con, sql, message):
    with pytest.raises(duckdb.Error, match=message.replace("(", r"\(").replace(")", r"\)")):
        scalar(con, f"SELECT {sql}")


def test_duckdb_rejects_duplicate_map_keys(con):
    with pytest.raises(duckdb.Error, match="unique"):
        scalar(con, "SELECT ndcg(['a'], map(['a', 'a'], [1, 2]))")


def test_cli_names():
    assert by_name("expected_reciprocal_rank").name == "err"
    assert by_name("hlu").name == "half_life_utility"
    assert by_name("dcg").name == "dcg"


# --- peer tools on random graded cases -----------------------------------------------------------

def _random_cases(seed: int, count: int = 40, max_grade: int = 4, integer_grades: bool = True,
                  k_within_rec: bool = False) -> list[dict]:
    """Distinct recommended items (peers cannot take duplicates) with distinct scores, truth of
    1..8 judged items (some outside rec, some graded 0) with at least one positive grade."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        items = [f"d{i}" for i in range(rng.randint(4, 15))]
        rec = rng.sample(items, rng.randint(1, len(items) - 2))
        judged = rng.sample(items, rng.randint(1, min(8, len(items))))
        grades = [rng.randint(0, max_grade) if integer_grades
                  else round(rng.uniform(0, max_grade), 3) for _ in judged]
        grades[0] = grades[0] or 1
        k = rng.randint(1, len(rec)) if k_within_rec else rng.randint(1, len(rec) + 3)
        cases.append({"rec": rec, "items": judged, "grades": grades, "k": k})
    return cases


def _duckrank_values(con, cases: list[dict], call: str) -> list[float]:
    """``call`` (e.g. "ndcg(rec, truth, k, gain := 'linear')") on every case, in order."""
    con.execute("CREATE OR REPLACE TEMP TABLE cases (id INT, rec VARCHAR[], items VARCHAR[], "
                "grades DOUBLE[], k INT)")
    con.executemany("INSERT INTO cases VALUES (?, ?, ?, ?, ?)",
                    [[i, c["rec"], c["items"], c["grades"], c["k"]] for i, c in enumerate(cases)])
    rows = con.execute(
        f"SELECT {call} FROM (SELECT id, rec, map(items, grades) AS truth, k FROM cases) "
        "ORDER BY id"
    ).fetchall()
    return [row[0] for row in rows]


def _qrels_and_run(case: dict) -> tuple[dict, dict]:
    qrels = {"1": {item: int(g) for item, g in zip(case["items"], case["grades"], strict=True)}}
    run = {"1": {item: float(len(case["rec"]) - i) for i, item in enumerate(case["rec"])}}
    return qrels, run


@pytest.mark.parametrize(
    ("ranx_metric", "call"),
    [
        ("ndcg", "ndcg(rec, truth, k, gain := 'linear')"),  # ranx's ndcg: Järvelin's rel gain
        ("ndcg_burges", "ndcg(rec, truth, k)"),  # ranx's ndcg_burges: Burges' 2^rel - 1
        ("dcg", "dcg(rec, truth, k, gain := 'linear')"),
        ("dcg_burges", "dcg(rec, truth, k)"),
    ],
)
def test_agrees_with_ranx(con, ranx_metric, call):
    ranx = pytest.importorskip("ranx")
    cases = _random_cases(seed=3)
    ours = _duckrank_values(con, cases, call)
    for case, value in zip(cases, ours, strict=True):
        qrels, run = _qrels_and_run(case)
        expected = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), f"{ranx_metric}@{case['k']}")
        assert value == pytest.approx(expected, abs=1e-12), case


def test_agrees_with_trec_eval_ndcg_cut(con):
    # trec_eval's ndcg_cut_k: linear gain (the judgment value), log2(i + 1), ideal from qrels
    # sorted by grade and cut at k.
    pytrec_eval = pytest.importorskip("pytrec_eval")
    cases = _random_cases(seed=5)
    ours = _duckrank_values(con, cases, "ndcg(rec, truth, k, gain := 'linear')")
    for case, value in zip(cases, ours, strict=True):
        qrels, run = _qrels_and_run(case)
        measure = f"ndcg_cut.{case['k']}"
        result = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
        assert value == pytest.approx(result["1"][f"ndcg_cut_{case['k']}"], abs=1e-12), case


def test_agrees_with_ir_measures_err_and_ndcg(con):
    # ir-measures' ERR@k and nDCG(dcg='exp-log2')@k run TREC's gdeval.pl: max grade 4,
    # R = (2^g - 1)/16, gain 2^g - 1; it prints 5 decimals. nDCG@k runs trec_eval (linear gain).
    ir_measures = pytest.importorskip("ir_measures")
    cases = _random_cases(seed=7, count=25)
    ours_err = _duckrank_values(con, cases, "err(rec, truth, k)")
    ours_exp = _duckrank_values(con, cases, "ndcg(rec, truth, k)")
    ours_linear = _duckrank_values(con, cases, "ndcg(rec, truth, k, gain := 'linear')")
    for i, case in enumerate(cases):
        qrels, run = _qrels_and_run(case)
        k = case["k"]
        measures = [ir_measures.ERR @ k, ir_measures.nDCG(dcg="exp-log2") @ k,
                    ir_measures.nDCG @ k]
        qrels_list = [ir_measures.Qrel("1", d, g) for d, g in qrels["1"].items()]
        run_list = [ir_measures.ScoredDoc("1", d, s) for d, s in run["1"].items()]
        got = {str(m.measure): m.value
               for m in ir_measures.iter_calc(measures, qrels_list, run_list)}
        assert ours_err[i] == pytest.approx(got[str(measures[0])], abs=5.1e-6), case
        assert ours_exp[i] == pytest.approx(got[str(measures[1])], abs=5.1e-6), case
        assert ours_linear[i] == pytest.approx(got[str(measures[2])], abs=1e-12), case


@pytest.mark.parametrize(("gain", "transform"), [("linear", lambda g: g),
                                                 ("exponential", lambda g: 2.0 ** g - 1)])
def test_agrees_with_scikit_learn(con, gain, transform):
    # scikit-learn's ndcg_score takes y_true as the gain itself (linear) and log2(i + 1); the
    # exponential gain is ndcg_score on 2^g - 1. Its ideal ranks the candidates it is given, so
    # the candidates are rec plus the judged items outside it (scored below rec) and k <= len(rec).
    metrics = pytest.importorskip("sklearn.metrics")
    cases = _random_cases(seed=11, integer_grades=False, k_within_rec=True)
    ours = _duckrank_values(con, cases, f"ndcg(rec, truth, k, gain := '{gain}')")
    for case, value in zip(cases, ours, strict=True):
        grade = dict(zip(case["items"], case["grades"], strict=True))
        candidates = case["rec"] + [d for d in case["items"] if d not in case["rec"]]
        y_true = np.array([[transform(grade.get(d, 0.0)) for d in candidates]])
        y_score = np.array([[float(len(candidates) - i) for i in range(len(candidates))]])
        expected = metrics.ndcg_score(y_true, y_score, k=case["k"])
        assert value == pytest.approx(expected, abs=1e-12), case


# --- numpy kernels agree with the SQL macros -----------------------------------------------------

GRADED_RECORDS = [m for m in graded.METRICS if m.inputs == "grades"]

OPTION_SETS = {
    "ndcg": [{}, {"gain": "linear"}, {"discount": "jarvelin"},
             {"gain": "linear", "discount": "jarvelin", "base": 3.5}],
    "dcg": [{}, {"gain": "linear", "discount": "jarvelin", "base": 10}],
    "err": [{}, {"max_grade": 5}],
    "half_life_utility": [{}, {"half_life": 2}],
}


def _kernel_table(con) -> None:
    """Random rows with what the peers avoid: duplicate and NULL recommendations, grades 0,
    rows whose truth has no positive grade, empty rec, NULL rec, truth and k."""
    rng = random.Random(13)
    rows = []
    for i in range(120):
        items = list(range(1, rng.randint(2, 12)))
        rec = [rng.choice(items + [None]) for _ in range(rng.randint(0, 10))]
        judged = rng.sample(items, rng.randint(0, len(items)))
        grades = [rng.choice([0, 0.5, 1, 2, 3, 4]) for _ in judged]
        k = rng.choice(["all", "1", "2", "3", "5", "20"])
        rows.append([i, rec, judged, grades, k])
    rows[0][1], rows[1][2], rows[2][4] = None, None, None  # NULL rec, truth, k
    rows[3][1], rows[3][4] = [], "2"
    con.execute("CREATE OR REPLACE TEMP TABLE kernel_rows (id INT, rec BIGINT[], items INT[], "
                "grades DOUBLE[], k VARCHAR)")
    con.executemany("INSERT INTO kernel_rows VALUES (?, ?, ?, ?, ?)", rows)
    con.execute("""CREATE OR REPLACE TEMP VIEW kernel_cases AS
        SELECT id, rec, CASE WHEN items IS NULL THEN NULL
                             ELSE map(items, grades)::MAP(VARCHAR, DOUBLE) END AS truth,
               items AS truth_list, k
        FROM kernel_rows""")


def _kernel_cutoffs(data) -> np.ndarray:
    """The k column as the kernels take it: len(rec) for 'all', NaN for NULL."""
    return np.array([np.nan if k is None else len(rec or []) if k == "all" else float(k)
                     for rec, k in zip(data["rec"].to_pylist(), data["k"].to_pylist(),
                                       strict=True)])


def _sql_options(options: dict) -> str:
    return "".join(f", {name} := {value!r}" for name, value in options.items())


@pytest.mark.parametrize("metric", GRADED_RECORDS, ids=lambda m: f"{m.name}[{m.truth_type}]")
def test_numpy_kernels_equal_sql(con, metric):
    _kernel_table(con)
    truth = "truth" if metric.truth_type else "truth_list"
    table = con.sql(f"SELECT rec, {truth} AS truth, k FROM kernel_cases ORDER BY id")
    data = table.to_arrow_table()
    k = _kernel_cutoffs(data)
    for options in OPTION_SETS[metric.name]:
        sql_values = [row[0] for row in con.execute(
            f"SELECT {metric.name}(rec, {truth}, k{_sql_options(options)}) FROM kernel_cases "
            "ORDER BY id").fetchall()]
        kernel = metric.kernel(match_grades(data["rec"], data["truth"], k), **options)
        expected = [None if math.isnan(v) else v for v in kernel]
        assert sql_values == pytest.approx(expected, abs=1e-13), options


def test_binary_ndcg_kernel_takes_the_discount_options(con):
    _kernel_table(con)
    data = con.sql("SELECT rec, truth_list AS truth, k FROM kernel_cases ORDER BY id")
    data = data.to_arrow_table()
    k = _kernel_cutoffs(data)
    for options in OPTION_SETS["ndcg"]:
        sql_values = [row[0] for row in con.execute(
            f"SELECT ndcg(rec, truth_list, k{_sql_options(options)}) FROM kernel_cases "
            "ORDER BY id").fetchall()]
        kernel = binary.NDCG.kernel(match_hits(data["rec"], data["truth"], k), **options)
        assert sql_values == pytest.approx(
            [None if math.isnan(v) else v for v in kernel], abs=1e-13), options


def test_ndcg_grades_kernel_equals_sql(con):
    rng = random.Random(17)
    rows = []
    for i in range(60):
        rec = [{"g": rng.choice([0, 1, 2.5, 4])} for _ in range(rng.randint(0, 8))]
        truth = [rng.choice([0, 1, 2, 3, 5]) for _ in range(rng.randint(0, 6))]
        rows.append([i, rec, truth, rng.choice(["all", "1", "3", "10"])])
    rows[0][1], rows[1][2], rows[2][3] = None, None, None  # NULL rec, truth, k
    con.execute("CREATE OR REPLACE TEMP TABLE grade_lists "
                "(id INT, rec STRUCT(g DOUBLE)[], truth INT[], k VARCHAR)")
    con.executemany("INSERT INTO grade_lists VALUES (?, ?, ?, ?)", rows)
    data = con.sql("SELECT rec, truth, k FROM grade_lists ORDER BY id").to_arrow_table()
    k = _kernel_cutoffs(data)
    for options in OPTION_SETS["ndcg"]:
        sql_values = [row[0] for row in con.execute(
            f"SELECT ndcg_grades(rec, truth, k{_sql_options(options)}) FROM grade_lists "
            "ORDER BY id").fetchall()]
        kernel = graded.NDCG_GRADES.kernel(match_grade_lists(data["rec"], data["truth"], k),
                                           **options)
        assert sql_values == pytest.approx(
            [None if math.isnan(v) else v for v in kernel], abs=1e-13), options


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda g: graded._ndcg(g, gain="lin"), "ndcg: gain must be one of"),
        (lambda g: graded._ndcg(g, base=3), "ndcg: base applies to discount := 'jarvelin'"),
        (lambda g: graded._err(g, max_grade=0), "err: max_grade must be a number > 0, got 0"),
        (lambda g: graded._err(g, max_grade=2), "err: truth has grade 3.0 above max_grade 2"),
        (lambda g: graded._half_life_utility(g, half_life=1), "half_life must be a number > 1"),
    ],
)
def test_kernels_check_options_like_sql(con, call, message):
    data = con.sql("SELECT [1, 2] AS rec, map([1], [3.0])::MAP(VARCHAR, DOUBLE) AS truth")
    data = data.to_arrow_table()
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        call(match_grades(data["rec"], data["truth"]))


@pytest.mark.parametrize(
    ("truth", "message"),
    [
        ("map([1, 2], [1.0, -1.0])", "ndcg: the grade of item 2 in truth must be a finite "
                                     "number >= 0, got -1.0"),
        ("map([1, 2], [1.0, NULL])", "ndcg: the grade of item 2 .* got NULL"),
    ],
)
def test_match_grades_rejects_bad_grades(con, truth, message):
    data = con.sql(f"SELECT [1, 2] AS rec, {truth}::MAP(VARCHAR, DOUBLE) AS truth")
    data = data.to_arrow_table()
    with pytest.raises(ValueError, match=message):
        match_grades(data["rec"], data["truth"], function="ndcg")
