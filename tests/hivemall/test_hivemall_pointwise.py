"""Hivemall's regression and classification measures in the hivemall schema (issue 28):
logloss, mae, mse, rmse, r2, f1score, fmeasure.

The reference is Apache Hivemall's code (apache/incubator-hivemall, hivemall/evaluation:
LogarithmicLossUDAF, MeanAbsoluteErrorUDAF, MeanSquaredErrorUDAF, RootMeanSquaredErrorUDAF,
R2UDAF, F1ScoreUDAF, FMeasureUDAF). Expected values are computed here by ``java_*``: the Java
arithmetic of those classes written out in Python floats (IEEE doubles, the same operations in
the same order: a running sum over the rows, then one division), so the values are Hivemall's
to the last bit where the order of the additions is the same; the tests allow 1e-15 relative for
DuckDB's order of additions. Edge cases (no rows, NULLs, constant actuals, zero divisors, option
errors) are Hivemall's documented or coded behaviour, written beside each case.
"""

from __future__ import annotations

import math
import random

import pytest

import duckrank


@pytest.fixture(scope="module")
def hcon():
    return duckrank.connect(hivemall=True)


def value(hcon, sql: str):
    return hcon.sql(sql).fetchall()[0][0]


def rows_sql(rows) -> str:
    return "(values " + ", ".join(
        "(" + ", ".join("NULL" if v is None else repr(v) for v in row) + ")" for row in rows
    ) + ")"


# --- Hivemall's arithmetic, written out --------------------------------------------------------

def _counted(rows):
    return [(p, a) for p, a in rows if p is not None and a is not None]


def java_mae(rows):
    rows = _counted(rows)
    if not rows:
        return 0.0  # terminate() on a null partial
    total = 0.0
    for p, a in rows:
        total += abs(p - a)
    return total / len(rows)


def java_mse(rows):
    rows = _counted(rows)
    if not rows:
        return 0.0
    total = 0.0
    for p, a in rows:
        total += (p - a) ** 2
    return total / len(rows)


def java_rmse(rows):
    rows = _counted(rows)
    return math.sqrt(java_mse(rows)) if rows else 0.0


def java_r2(rows):
    rows = _counted(rows)
    if not rows:
        return 0.0
    residual, actual_sum = 0.0, 0.0
    for p, a in rows:
        residual += (a - p) ** 2
        actual_sum += a
    mean = actual_sum / len(rows)
    total = 0.0
    for _, a in rows:
        total += (a - mean) ** 2
    return 1.0 if total == 0.0 else 1.0 - residual / total  # constant actuals: 1.0


def java_logloss(rows):
    rows = _counted(rows)
    if not rows:
        return 0.0
    total = 0.0
    for p, a in rows:
        p = min(1.0 - 1e-15, max(1e-15, p))
        total += a * math.log(p) + (1.0 - a) * math.log(1.0 - p)
    return -1.0 * total / len(rows)


REGRESSION = {"mae": java_mae, "mse": java_mse, "rmse": java_rmse, "r2": java_r2,
              "logloss": java_logloss}


def _generated(seed: int, probability: bool):
    rng = random.Random(seed)
    rows = []
    for _ in range(rng.choice([1, 3, 50])):
        predicted = None if rng.random() < 0.1 else round(rng.random() if probability
                                                          else rng.uniform(0, 5), 4)
        actual = float(rng.random() < 0.5) if probability else float(rng.randint(1, 5))
        rows.append((predicted, actual))
    return rows


@pytest.mark.parametrize("fn", sorted(REGRESSION))
@pytest.mark.parametrize("seed", range(6))
def test_regression_measures_are_hivemalls(hcon, fn, seed):
    rows = _generated(seed, fn == "logloss")
    ours = value(hcon, f"select hivemall.{fn}(p, a) from {rows_sql(rows)} t(p, a)")
    assert ours == pytest.approx(REGRESSION[fn](rows), rel=1e-15, abs=1e-15)


@pytest.mark.parametrize("fn", sorted(REGRESSION))
def test_no_row_gives_zero(hcon, fn):
    # Hivemall's terminate() returns 0.0 when no row was counted (NULL rows skipped)
    assert value(hcon, f"select hivemall.{fn}(p, a) from (values (NULL::DOUBLE, 1.0), "
                       "(2.0, NULL::DOUBLE)) t(p, a)") == 0.0


def test_edges_of_r2_and_logloss(hcon):
    # constant actuals: 1.0 whatever the residuals (R2UDAF's total_sum_of_squares == 0)
    assert value(hcon, "select hivemall.r2(p, a) from (values (1.0, 3.0), (5.0, 3.0)) t(p, a)") \
        == 1.0
    # predicted 0 and 1 clipped at 1e-15: -ln(1e-15) for a wrong certain prediction
    assert value(hcon, "select hivemall.logloss(1.0, 0.0)") == pytest.approx(
        -math.log(1.0 - (1.0 - 1e-15)), rel=1e-15)
    # NaN spreads (Java's arithmetic)
    assert math.isnan(value(hcon, "select hivemall.mae(p, a) from (values (1.0, 'nan'::DOUBLE), "
                                  "(1.0, 2.0)) t(p, a)"))


# --- f1score and fmeasure -------------------------------------------------------------------------

def java_counts(rows):
    tp = actual = predicted = 0
    for a, p in rows:
        tp += sum(1 for x in p if x in a)
        actual += len(a)
        predicted += len(p)
    return tp, actual, predicted


def java_f1score(rows):
    tp, actual, predicted = java_counts(rows)
    precision = 0.0 if predicted == 0 else tp / predicted
    recall = 0.0 if actual == 0 else tp / actual
    divisor = precision + recall
    return (2.0 * precision * recall) / divisor if divisor > 0 else -1.0


def java_fmeasure_micro(rows, beta=1.0):
    tp, actual, predicted = java_counts(rows)
    square = beta * beta
    divisor = square * (tp + (actual - tp)) + tp + (predicted - tp)
    return ((1.0 + square) * tp) / divisor if divisor > 0 else 0.0


def java_fmeasure_binary(labels, beta=1.0):
    """Integer labels: 1 positive, 0 and -1 negative; a negative label is an empty list."""
    rows = [([1] if a == 1 else [], [1] if p == 1 else []) for a, p in labels]
    tp, actual, predicted = java_counts(rows)
    precision = 0.0 if predicted == 0 else tp / predicted
    recall = 0.0 if actual == 0 else tp / actual
    square = beta * beta
    divisor = square * precision + recall
    return (1.0 + square) * precision * recall / divisor if divisor > 0 else 0.0


LIST_ROWS = [([1, 2, 3], [2, 3, 4, 5]), ([1], [1]), ([7, 7], [7, 8]), ([], [9])]


def _lists_sql(rows) -> str:
    return "(values " + ", ".join(f"({a}::INT[], {p}::INT[])" for a, p in rows) + ") t(a, p)"


def test_f1score_is_micro_averaged(hcon):
    # tp 2 + 1 + 1 + 0 = 4 (7 of [7, 8] found once), actual 3 + 1 + 2 + 0 = 6, predicted
    # 4 + 1 + 2 + 1 = 8
    assert java_counts(LIST_ROWS) == (4, 6, 8)
    assert value(hcon, f"select hivemall.f1score(a, p) from {_lists_sql(LIST_ROWS)}") == \
        java_f1score(LIST_ROWS)
    # no hit at all: precision + recall = 0 gives -1 (F1ScoreUDAF); no row: NULL
    assert value(hcon, "select hivemall.f1score([1], [2])") == -1.0
    assert value(hcon, "select hivemall.f1score([1], [2]) where false") is None


@pytest.mark.parametrize("beta", [1.0, 2.0, 0.5])
def test_fmeasure_on_lists_is_micro(hcon, beta):
    options = "" if beta == 1.0 else f", '-beta {beta}'"
    ours = value(hcon, f"select hivemall.fmeasure(a, p{options}) from {_lists_sql(LIST_ROWS)}")
    assert ours == pytest.approx(java_fmeasure_micro(LIST_ROWS, beta), rel=1e-15)


LABELS = [(1, 1), (0, 1), (1, 0), (-1, 0), (1, 1), (-1, -1), (0, 1)]


def test_fmeasure_on_labels(hcon):
    table = "(values " + ", ".join(f"({a}, {p})" for a, p in LABELS) + ") t(a, p)"
    # micro: each row one actual and one predicted label (-1 read as 0), tp when they are equal
    micro = java_fmeasure_micro([([0 if a == -1 else a], [0 if p == -1 else p])
                                 for a, p in LABELS])
    assert value(hcon, f"select hivemall.fmeasure(a, p) from {table}") == pytest.approx(
        micro, rel=1e-15)
    for beta in (1.0, 2.0):
        ours = value(hcon, f"select hivemall.fmeasure(a, p, '-beta {beta} -average binary') "
                           f"from {table}")
        assert ours == pytest.approx(java_fmeasure_binary(LABELS, beta), rel=1e-15)
    # booleans are labels 1 / 0
    booleans = value(hcon, f"select hivemall.fmeasure(a = 1, p = 1, '-average binary') "
                           f"from {table}")
    assert booleans == pytest.approx(java_fmeasure_binary(LABELS), rel=1e-15)


@pytest.mark.parametrize(("sql", "message"), [
    ("select hivemall.fmeasure(2, 1)", "fmeasure: Int label must be 1, 0 or -1: 2"),
    ("select hivemall.fmeasure([1], [1], '-average binary')",
     'fmeasure: "-average binary" is not supported when `predict` is array'),
    ("select hivemall.fmeasure(1, 1, '-average macro')", 'fmeasure: "-average macro" is not'),
    ("select hivemall.fmeasure(1, 1, '-average weighted')",
     "fmeasure: The third argument `String average` must be one of"),
    ("select hivemall.fmeasure(1, 1, '-beta 0')",
     "fmeasure: The third argument `double beta` must be greater than 0.0: 0"),
    ("select hivemall.fmeasure(1, 1, '-alpha 3')", "fmeasure: unrecognized options: -alpha 3"),
    ("select hivemall.f1score(NULL::INT[], [1])", "f1score: the argument `actual` is NULL"),
    ("select hivemall.fmeasure(1, NULL::INT)", "fmeasure: the argument `predicted` is NULL"),
    ("select hivemall.f1score([1, 2]::INT[], [1]::BIGINT[])",
     "f1score: predicted items are BIGINT but actual items are INTEGER"),
])
def test_errors_name_the_function_and_value(hcon, sql, message):
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace("[", r"\[")):
        hcon.sql(sql).fetchall()


def test_fmeasure_without_rows_is_zero(hcon):
    # FMeasureAggregationBuffer.get() with every count 0: the divisor is 0, so 0.0
    assert value(hcon, "select hivemall.fmeasure(1, 1) where false") == 0.0


def test_hivemall_names_shadow_mains_on_the_search_path(hcon):
    # connect(hivemall=True) puts hivemall first: unqualified rmse and r2 are Hivemall's (r2 1.0
    # for constant actuals; 0.0 without rows), main's stay reachable qualified (r2 0.0 for wrong
    # predictions of constant ratings, scikit-learn's force_finite; NULL without rows)
    table = "(values (1.0, 3.0), (5.0, 3.0)) t(p, a)"
    assert hcon.sql(f"select r2(p, a), main.r2(p, a) from {table}").fetchall() == [(1.0, 0.0)]
    assert hcon.sql(f"select rmse(p, a), main.rmse(p, a) from {table} where false").fetchall() \
        == [(0.0, None)]
