"""The pointwise aggregates (duckrank.metrics.pointwise, issue 28): rmse, mse, mae, r2, log_loss.

Expected values: scikit-learn 1.9 (in duckrank's venv; mean_squared_error,
root_mean_squared_error, mean_absolute_error, r2_score, log_loss with labels=[0, 1]) per group of
generated rows with NULLs, one-row groups and constant ratings; hand calculations for the edge
cases, written beside them. The numpy kernels of the records are checked against the same.
"""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest

import duckrank
from duckrank.metrics import pointwise

metrics = pytest.importorskip("sklearn.metrics")


def _rows() -> list[tuple]:
    """(group, prediction, rating, probability, label) rows: groups of 1 to 20 rows, NULL
    predictions, constant ratings (SS_tot = 0), probabilities of exactly 0 and 1."""
    rng = random.Random(28)
    rows = []
    for group in range(30):
        size = rng.choice([1, 2, 5, 20])
        constant = group % 7 == 0  # SS_tot = 0 for r2
        for _ in range(size):
            rating = 3.0 if constant else float(rng.randint(1, 5))
            prediction = None if rng.random() < 0.1 else round(rng.uniform(0.5, 5.5), 3)
            probability = rng.choice([0.0, 1.0, round(rng.random(), 4)])
            label = rng.random() < 0.5
            rows.append((group, prediction, rating, probability, label))
    return rows


ROWS = _rows()


@pytest.fixture(scope="module")
def con():
    connection = duckrank.connect()
    connection.execute("create temp table p(g INT, prediction DOUBLE, rating DOUBLE, "
                       "probability DOUBLE, label BOOLEAN)")
    connection.executemany("insert into p values (?, ?, ?, ?, ?)", ROWS)
    return connection


def _groups(index: tuple[int, int]) -> dict[int, tuple[list, list]]:
    groups: dict[int, tuple[list, list]] = {}
    for row in ROWS:
        if row[index[0]] is not None and row[index[1]] is not None:
            predictions, truths = groups.setdefault(row[0], ([], []))
            predictions.append(row[index[0]])
            truths.append(row[index[1]])
    return groups


CASES = [
    ("rmse", "rmse(prediction, rating)", (1, 2), metrics.root_mean_squared_error),
    ("mse", "mse(prediction, rating)", (1, 2), metrics.mean_squared_error),
    ("mae", "mae(prediction, rating)", (1, 2), metrics.mean_absolute_error),
    ("r2", "r2(prediction, rating)", (1, 2), metrics.r2_score),
    ("log_loss", "log_loss(probability, label)", (3, 4),
     lambda truth, predicted: metrics.log_loss(truth, predicted, labels=[0, 1])),
]


@pytest.mark.parametrize(("name", "call", "columns", "reference"), CASES)
def test_against_scikit_learn_per_group(con, name, call, columns, reference):
    ours = dict(con.sql(f"select g, {call} from p group by g").fetchall())
    record = next(m for m in pointwise.METRICS if m.name == name)
    groups = _groups(columns)
    assert set(ours) == set(range(30))
    for group, value in ours.items():
        if group not in groups:  # every prediction NULL: no counted row
            assert value is None
            continue
        predicted, truth = groups[group]
        if name == "log_loss":
            truth = [float(t) for t in truth]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # r2 of one sample warns, gives nan; see below
            expected = reference(truth, predicted)
        if name == "r2" and len(truth) < 2:
            # scikit-learn: "R^2 score is not well-defined with less than two samples" (nan);
            # here SS_tot = 0, so 1 if the prediction is exact else 0 (its force_finite rule).
            expected = 1.0 if predicted[0] == truth[0] else 0.0
        assert value == pytest.approx(expected, rel=1e-13, abs=1e-13), (name, group)
        kernel = record.kernel(np.array(predicted, float), np.array(truth, float))
        assert kernel == pytest.approx(expected, rel=1e-13, abs=1e-13), (name, group)


def test_whole_table_and_recbole_eps(con):
    predicted = [r[3] for r in ROWS]
    truth = [float(r[4]) for r in ROWS]
    value = con.sql("select log_loss(probability, label) from p").fetchall()[0][0]
    assert value == pytest.approx(metrics.log_loss(truth, predicted), rel=1e-13)
    # RecBole's LogLoss clips at 1e-15 (recbole/evaluator/metrics.py): by hand with numpy.
    p = np.clip(np.array(predicted), 1e-15, 1 - 1e-15)
    t = np.array(truth)
    recbole = float(np.sum(-t * np.log(p) - (1 - t) * np.log(1 - p)) / len(p))
    value = con.sql("select log_loss(probability, label, eps := 1e-15) from p").fetchall()[0][0]
    assert value == pytest.approx(recbole, rel=1e-13)


def test_edges_by_hand(con):
    # no row: NULL; NULLs skipped: |1 - 2| and |4 - 2| -> mae 1.5, mse 2.5
    assert con.sql("select rmse(1.0, 2.0) where false").fetchall() == [(None,)]
    values = con.sql("select mae(p, r), mse(p, r) from (values (1.0, 2.0), (NULL, 3.0), "
                     "(4.0, 2.0), (5.0, NULL)) t(p, r)").fetchall()[0]
    assert values == (1.5, 2.5)
    # constant ratings, exact predictions: r2 = 1; constant ratings, inexact: 0
    assert con.sql("select r2(p, r) from (values (2, 2), (2, 2)) t(p, r)").fetchall() == [(1.0,)]
    assert con.sql("select r2(p, r) from (values (1, 2), (2, 2)) t(p, r)").fetchall() == [(0.0,)]


@pytest.mark.parametrize(("sql", "message"), [
    ("select rmse(p, r) from (values (1.0, 'nan'::DOUBLE)) t(p, r)",
     "rmse: rating must be finite: its sum is nan"),
    ("select mae(p, r) from (values ('inf'::DOUBLE, 1.0)) t(p, r)",
     "mae: prediction must be finite: its sum is inf"),
    ("select log_loss(p, l) from (values (0.5, 2)) t(p, l)",
     "log_loss: label must be 0 or 1, got 2"),
    ("select log_loss(p, l) from (values (1.5, 1)) t(p, l)",
     "log_loss: prediction must be a probability in \\[0, 1\\], got 1.5"),
    ("select log_loss(p, l, eps := 0.7) from (values (0.5, 1)) t(p, l)",
     "log_loss: eps must be a finite number >= 0 and < 0.5, got 0.7"),
    ("select log_loss(p, l, eps := NULL) from (values (0.5, 1)) t(p, l)",
     "log_loss: eps must be a finite number >= 0 and < 0.5, got NULL"),
])
def test_bad_input_is_an_error_naming_it(con, sql, message):
    with pytest.raises(Exception, match=message):
        con.sql(sql).fetchall()


def test_log_loss_kernel_checks_eps_as_the_sql_does():
    """The kernel refuses eps with the macro's text (the value as Python shows it), and, as
    the SQL gives NULL before it checks eps, not on a group without a counted row."""
    with pytest.raises(ValueError, match=r"^log_loss: eps must be a finite number >= 0 and "
                                         r"< 0.5, got 0.7$"):
        pointwise.LOG_LOSS.kernel(np.array([0.5]), np.array([1.0]), eps=0.7)
    assert math.isnan(pointwise.LOG_LOSS.kernel(np.array([]), np.array([]), eps=0.7))


def test_log_loss_of_certain_predictions_is_finite(con):
    # p = 1 for a 0 label: -ln(eps) = 52 ln 2 (sklearn's clip), never inf
    value = con.sql("select log_loss(1.0, 0)").fetchall()[0][0]
    assert value == pytest.approx(-math.log(pointwise.EPS), rel=1e-13)


def test_the_doc_states_every_aggregate():
    """docs/classification.md is written by hand from the records: each aggregate's call,
    formula and undefined cases must be there as the record says them."""
    from pathlib import Path

    from duckrank.render.pointwise import RECORDS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "classification.md").read_text()
    for record in RECORDS:
        assert f"`{record.signature}`" in doc, record.name
        assert record.formula in doc, record.name
        assert record.undefined in doc, record.name
