"""Issue 25, 1.4 and section 2: graded metrics stay finite for every finite grade they accept,
and every list metric takes an untyped empty list (``[]``).

Expected values come from an independent computation in mpmath at 50 digits (the formulas of
docs/graded.md written out here, with no scaling), or from the same call with a typed empty list;
each test says which. Both matching steps (native and ``native=False``) and the numpy kernels are
checked.
"""

import math

import mpmath
import pyarrow as pa
import pytest
from conftest import scalar

from duckrank.matching.arrays import match_grade_lists, match_grades
from duckrank.metrics import METRICS, by_name

mpmath.mp.dps = 50


def _dcg(grades, gain="exponential"):
    """Σ gain(g_i) / log2(i + 1) over ranks i = 1, 2, ..., in mpmath."""
    total = mpmath.mpf(0)
    for i, g in enumerate(grades, start=1):
        g = mpmath.mpf(g)
        total += (mpmath.power(2, g) - 1 if gain == "exponential" else g) / mpmath.log(i + 1, 2)
    return total


def _ndcg(top, truth, gain="exponential"):
    return float(_dcg(top, gain) / _dcg(sorted(truth, reverse=True), gain))


def _err(top, max_grade):
    """Chapelle et al.'s ERR, Σ R_r / r Π_{i<r} (1 - R_i), R = (2^g - 1) / 2^max_grade."""
    value, going_on = mpmath.mpf(0), mpmath.mpf(1)
    for r, g in enumerate(top, start=1):
        stop = (mpmath.power(2, g) - 1) / mpmath.power(2, max_grade)
        value += going_on * stop / r
        going_on *= 1 - stop
    return float(value)


def _half_life(top, truth, half_life=5):
    def utility(grades):
        return sum(mpmath.mpf(g) * mpmath.power(2, -mpmath.mpf(i) / (half_life - 1))
                   for i, g in enumerate(grades))
    return float(utility(top) / utility(sorted(truth, reverse=True)))


@pytest.fixture(params=["native", "sql"])
def step(request, fast, sql_only):
    return fast if request.param == "native" else sql_only


# (SQL call, expected from mpmath). rec [1, 2] with truth {1: a, 2: b} has top grades [a, b].
CASES = [
    # 1024 and more: 2^g - 1 overflowed a DOUBLE, inf / inf was NaN.
    ("ndcg([1, 2], MAP {1: 1.0, 2: 1024.0})", _ndcg([1, 1024], [1, 1024])),
    ("ndcg([1, 2], MAP {1: 1030.0, 2: 1029.5})", _ndcg([1030, 1029.5], [1030, 1029.5])),
    # Järvelin's discount with base 3 leaves ranks 1 and 2 undiscounted: DCG = IDCG, by hand.
    ("ndcg([2, 1], MAP {1: 5000.0, 2: 4999.0}, 2, discount := 'jarvelin', base := 3)", 1.0),
    ("ndcg([2, 1], MAP {1: 5000.0, 2: 4999.0})", _ndcg([4999, 5000], [4999, 5000])),
    ("ndcg([1, 2], MAP {1: 1e300, 2: 3.0})", _ndcg([1e300, 3], [1e300, 3])),
    ("ndcg_grades([{'g': 1.0}, {'g': 1024.0}], [1024.0, 1.0])", _ndcg([1, 1024], [1, 1024])),
    ("err([1, 2], MAP {1: 1.0, 2: 1024.0}, max_grade := 1024)", _err([1, 1024], 1024)),
    ("err([1, 2], MAP {1: 1100.0, 2: 1.0}, max_grade := 1100)", _err([1100, 1], 1100)),
    # Every grade tiny: 2^g - 1 rounded to 0, 0 / 0 was NaN.
    ("ndcg([1, 2], MAP {1: 1e-17, 2: 2e-17})", _ndcg([1e-17, 2e-17], [1e-17, 2e-17])),
    ("ndcg([1, 2], MAP {1: 1e-300, 2: 0.0005})", _ndcg([1e-300, 0.0005], [1e-300, 0.0005])),
    ("dcg([1, 2], MAP {1: 1e-17, 2: 3e-16})", float(_dcg([1e-17, 3e-16]))),
    # Linear grades near 1e308: their sum overflowed.
    ("half_life_utility([3, 1, 2], MAP {1: 1e308, 2: 1e308, 3: 9e307})",
     _half_life([9e307, 1e308, 1e308], [1e308, 1e308, 9e307])),
    ("ndcg([3, 1, 2], MAP {1: 1e308, 2: 1e308, 3: 9e307}, gain := 'linear')",
     _ndcg([9e307, 1e308, 1e308], [1e308, 1e308, 9e307], "linear")),
    # Guards of rows that were right before (subnormal and mixed grades): still right.
    ("half_life_utility([2, 1], MAP {1: 1e-310, 2: 5e-311})",
     _half_life([5e-311, 1e-310], [1e-310, 5e-311])),
]


@pytest.mark.parametrize(("call", "expected"), CASES)
def test_graded_metrics_stay_finite(step, call, expected):
    value = scalar(step, f"SELECT {call}")
    assert value == pytest.approx(expected, rel=1e-13), call


def test_one_large_grade_does_not_make_avg_nan(step):
    """avg() over rows of ordinary grades and one of 2000 (expected: mpmath, per row)."""
    rows = [([1.0, 2.0]), ([3.0, 1.0]), ([2000.0, 1.0])]
    expected = sum(_ndcg([b, a], [a, b]) for a, b in rows) / len(rows)
    values = ", ".join(f"(MAP {{1: {a}, 2: {b}}})" for a, b in rows)
    value = scalar(step, f"SELECT avg(ndcg([2, 1], truth)) FROM (VALUES {values}) t(truth)")
    assert value == pytest.approx(expected, rel=1e-13)


def test_ordinary_grades_keep_their_bits(step):
    """The scaled form serves only rows outside the ordinary range: 2^g - 1 over integer grades
    gives the hand-computed value exactly (3 / 1 + 1 / log2(3), over 3 + 1 / log2(3))."""
    assert scalar(step, "SELECT ndcg([1, 2], MAP {1: 2.0, 2: 1.0})") == 1.0
    assert scalar(step, "SELECT dcg([2, 1], MAP {1: 2.0, 2: 1.0})") == 1 + 3 / math.log2(3)


def test_dcg_too_large_for_a_double_names_the_grade_and_the_option(step):
    """DCG is no ratio: 2^1030 is beyond a DOUBLE, so the value is refused, not Infinity."""
    with pytest.raises(Exception, match=r"dcg: .*largest grade is 1030\.0.*gain := 'linear'"):
        scalar(step, "SELECT dcg([1, 2], MAP {1: 1030.0, 2: 1.0})")


@pytest.mark.parametrize("name", ["ndcg", "dcg", "err", "half_life_utility"])
def test_kernels_agree_with_sql_on_extreme_grades(step, name):
    """The numpy kernels (Spark, Arrow input) against the macros on the same extreme rows."""
    truths = [{1: 1.0, 2: 1024.0}, {1: 1e-17, 2: 2e-17}, {1: 1e300, 2: 3.0}, {1: 2.0, 2: 1.0},
              {1: 1e-310, 2: 5e-311}]
    options = {"err": {"max_grade": 1e300}}.get(name, {})
    if name == "dcg":
        truths = truths[1:2] + truths[3:]
    metric = next(m for m in METRICS if m.name == name and m.truth_type)
    rec = pa.array([[1, 2]] * len(truths), pa.list_(pa.int64()))
    truth = pa.array([list(t.items()) for t in truths], pa.map_(pa.int64(), pa.float64()))
    kernel = metric.kernel(match_grades(rec, truth, 2), **options)
    extra = "".join(f", {key} := {value}" for key, value in options.items())
    for row, t in enumerate(truths):
        entries = ", ".join(f"{key}: {value!r}" for key, value in t.items())
        sql = scalar(step, f"SELECT {name}([1, 2], MAP {{{entries}}}, 2{extra})")
        assert kernel[row] == pytest.approx(sql, rel=1e-13), (name, t)


def test_ndcg_grades_kernel_on_large_grades():
    """Hivemall's graded form through numpy (expected: mpmath)."""
    rec = pa.array([[{"g": 1.0}, {"g": 1024.0}]])
    truth = pa.array([[1024.0, 1.0]])
    value = by_name("ndcg_grades").kernel(match_grade_lists(rec, truth, 2))[0]
    assert value == pytest.approx(_ndcg([1, 1024], [1, 1024]), rel=1e-13)


# --- section 2: an untyped empty list --------------------------------------------------------

LIST_METRICS = sorted({m.name for m in METRICS if m.inputs in ("hits", "grades") and m.cutoff
                       and not m.truth_type})


@pytest.mark.parametrize("name", LIST_METRICS)
def test_untyped_empty_lists_read_as_typed_ones(step, name):
    """``[]`` is "NULL"[] to DuckDB, which the collation probe could not cast to
    (``cast_to_type cannot be used to cast to NULL``). Expected: the same call with an empty
    INTEGER[] list, whose value docs/reference.md gives for each metric."""
    for rec, truth in [("[1, 2, 3]", "[]"), ("[]", "[1]"), ("[]", "[]")]:
        typed_rec = "[]::INTEGER[]" if rec == "[]" else rec
        typed_truth = "[]::INTEGER[]" if truth == "[]" else truth
        expected = scalar(step, f"SELECT {name}({typed_rec}, {typed_truth}, 2)")
        assert scalar(step, f"SELECT {name}({rec}, {truth}, 2)") == expected, (rec, truth)
