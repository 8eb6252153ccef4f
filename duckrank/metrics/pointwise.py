"""Pointwise (rating and click prediction) metrics as SQL aggregates: ``rmse``, ``mse``, ``mae``,
``r2`` and ``log_loss``, one ``Aggregate`` record each (issue 28).

Unlike the ranking metrics (one value per row of (rec, truth), averaged by the caller), these are
aggregates over the rows of a group: ``select user, rmse(prediction, rating) from predictions
group by user`` gives one value per user, without GROUP BY one for the table. Their values are
scikit-learn's (``sklearn.metrics``, 1.9): RecBole, Elliot, Cornac, LensKit and Microsoft
Recommenders compute the same formulas (docs/conventions.md, "Pointwise").

Shared conventions, every record:

* a row whose prediction or rating (label) is NULL is skipped, as ``avg`` skips it;
* a group without a counted row gives NULL (scikit-learn raises on empty input);
* a NaN or infinite prediction or rating is an error naming the function, the argument and the
  kind of value (its sum: nan, inf or -inf; scikit-learn raises "Input contains NaN"); never a
  NaN spread into the result.

The record's ``sql`` is the body of a DuckDB aggregate macro (a macro whose body is an aggregate
is an aggregate); ``kernel`` is its numpy twin over whole arrays (NULLs as NaN masked out first),
used by the tests as a check of the SQL.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from duckrank.lazy import LazyModule
from duckrank.metrics.record import Bounds, Option

np = LazyModule("numpy")

SKLEARN = "scikit-learn 1.9 (Pedregosa et al., JMLR 12, 2011), sklearn/metrics/_regression.py"


@dataclass(frozen=True)
class Aggregate:
    """One metric that is an aggregate over the rows of a group (not a value per ranked list).

    ``parameters`` are the macro's parameters as written in ``CREATE MACRO`` (``prediction,
    rating``, options as ``name := default``); ``sql`` is the macro body (an aggregate
    expression). ``kernel`` takes numpy arrays (the same arguments, NULL rows removed) and the
    options, and returns the value (NaN where the SQL gives NULL)."""

    name: str
    parameters: str
    summary: str
    formula: str
    undefined: str
    sql: str
    kernel: Callable[..., float] | None
    peers: str
    source: str

    @property
    def signature(self) -> str:
        return f"{self.name}({self.parameters})"

    def macro(self) -> str:
        return f"CREATE OR REPLACE MACRO {self.name}({self.parameters}) AS {self.sql}"


def _finite_checks(function: str, arguments: tuple[str, ...], counted: str) -> str:
    """CASE branches raising an error when an argument holds a NaN or an infinity among the
    counted rows, naming the function and the argument. Found by the argument's sum, which is
    not finite exactly then (or when finite values too large to add overflow it, which the
    message says): one sum costs a tenth of the metric, where a FILTER per kind of bad value
    cost half of it (benchmarks/bench_classification.py)."""
    whens = []
    for argument in arguments:
        total = f"sum({argument}::DOUBLE) FILTER (WHERE {counted})"
        whens.append(
            f"WHEN NOT isfinite({total}) THEN error('{function}: {argument} must be finite: "
            f"its sum is ' || {total}::VARCHAR || ' (a NaN or an infinite value, or values too "
            "large to add)')"
        )
    return " ".join(whens)


def _counted(*arguments: str) -> str:
    return " AND ".join(f"{a} IS NOT NULL" for a in arguments)


def _pointwise_sql(function: str, value: str, arguments: tuple[str, ...] = ("prediction",
                                                                            "rating")) -> str:
    """An aggregate over the rows where every argument is not NULL: NULL without such a row,
    an error on a non-finite value, else ``value`` (an aggregate expression)."""
    counted = _counted(*arguments)
    return (
        f"CASE WHEN count(*) FILTER (WHERE {counted}) = 0 THEN NULL::DOUBLE "
        f"{_finite_checks(function, arguments, counted)} ELSE ({value})::DOUBLE END"
    )


_SQUARED = "avg(pow(prediction::DOUBLE - rating::DOUBLE, 2)) FILTER (WHERE {c})"


def _squared(c: str) -> str:
    return _SQUARED.format(c=c)


_BOTH = _counted("prediction", "rating")


def _mse(prediction: np.ndarray, rating: np.ndarray) -> float:
    return float(np.mean((prediction - rating) ** 2)) if len(rating) else np.nan


def _r2(prediction: np.ndarray, rating: np.ndarray) -> float:
    if not len(rating):
        return np.nan
    residual = float(np.sum((rating - prediction) ** 2))
    total = float(np.sum((rating - rating.mean()) ** 2))
    if total == 0:
        return 1.0 if residual == 0 else 0.0
    return 1.0 - residual / total


# sklearn's log_loss clips p to [eps, 1 - eps], eps the float64 machine epsilon (its default
# since 1.5, "auto": np.finfo(dtype).eps), the float epsilon Python knows without numpy.
EPS = sys.float_info.epsilon
LOG_LOSS_EPS = Option("eps", EPS, "predictions are clipped to [eps, 1 - eps]",
                      bounds=Bounds(0, 0.5, open_high=True))


def _log_loss(prediction: np.ndarray, label: np.ndarray, eps: float = EPS) -> float:
    if not len(label):
        return np.nan
    # Only a group with a counted row has eps checked, as in the SQL (its CASE gives an
    # empty group NULL first).
    LOG_LOSS_EPS.check("log_loss", eps)
    p = np.clip(prediction, eps, 1 - eps)
    return float(-np.mean(label * np.log(p) + (1 - label) * np.log(1 - p)))


MSE = Aggregate(
    name="mse",
    parameters="prediction, rating",
    summary="Mean squared error of predicted ratings (an aggregate: one value per group).",
    formula="sum over the counted rows of (prediction - rating)^2, divided by their number",
    undefined="NULL for a group without a row whose prediction and rating are both not NULL.",
    sql=_pointwise_sql("mse", _squared(_BOTH)),
    kernel=_mse,
    peers="scikit-learn's mean_squared_error; Cornac's MSE, Elliot's MSE (RecBole and Microsoft "
    "Recommenders have its root, rmse).",
    source=SKLEARN,
)

RMSE = Aggregate(
    name="rmse",
    parameters="prediction, rating",
    summary="Root mean squared error of predicted ratings (an aggregate: one value per group).",
    formula="sqrt(mse(prediction, rating))",
    undefined="NULL for a group without a row whose prediction and rating are both not NULL.",
    sql=_pointwise_sql("rmse", f"sqrt({_squared(_BOTH)})"),
    kernel=lambda prediction, rating: float(np.sqrt(_mse(prediction, rating))),
    peers="scikit-learn's root_mean_squared_error; RecBole's RMSE, Elliot's RMSE, Cornac's "
    "RMSE, LensKit's RMSE (per user with GROUP BY user, then avg: LensKit's user-averaged form), "
    "Microsoft Recommenders' rmse.",
    source=SKLEARN,
)

MAE = Aggregate(
    name="mae",
    parameters="prediction, rating",
    summary="Mean absolute error of predicted ratings (an aggregate: one value per group).",
    formula="sum over the counted rows of |prediction - rating|, divided by their number",
    undefined="NULL for a group without a row whose prediction and rating are both not NULL.",
    sql=_pointwise_sql("mae", f"avg(abs(prediction::DOUBLE - rating::DOUBLE)) FILTER "
                              f"(WHERE {_BOTH})"),
    kernel=lambda prediction, rating: (float(np.mean(np.abs(prediction - rating)))
                                       if len(rating) else np.nan),
    peers="scikit-learn's mean_absolute_error; RecBole's MAE, Elliot's MAE, Cornac's MAE, "
    "LensKit's MAE, Microsoft Recommenders' mae.",
    source=SKLEARN,
)

R2 = Aggregate(
    name="r2",
    parameters="prediction, rating",
    summary="Coefficient of determination of predicted ratings (an aggregate: one value per "
    "group).",
    formula="1 - SS_res / SS_tot, SS_res = sum (rating - prediction)^2, SS_tot = sum (rating - "
    "mean rating)^2 over the counted rows; when SS_tot = 0 (constant ratings, or one row): 1 if "
    "SS_res = 0 else 0 (scikit-learn's force_finite=True)",
    undefined="NULL for a group without a row whose prediction and rating are both not NULL.",
    sql=_pointwise_sql(
        "r2",
        f"list_transform([struct_pack(res := sum(pow(rating::DOUBLE - prediction::DOUBLE, 2)) "
        f"FILTER (WHERE {_BOTH}), tot := var_pop(rating::DOUBLE) FILTER (WHERE {_BOTH}) * "
        f"count(*) FILTER (WHERE {_BOTH}))], lambda s: CASE WHEN s.tot = 0 THEN CASE WHEN "
        f"s.res = 0 THEN 1.0 ELSE 0.0 END ELSE 1 - s.res / s.tot END)[1]",
    ),
    kernel=_r2,
    peers="scikit-learn's r2_score (force_finite=True); Microsoft Recommenders' rsquared (its "
    "r2_score); Hivemall's r2 differs (hivemall schema).",
    source=SKLEARN,
)

_EPS_INVALID, _EPS_ERROR = LOG_LOSS_EPS.error_sql("log_loss")

LOG_LOSS = Aggregate(
    name="log_loss",
    parameters=f"prediction, label, eps := {LOG_LOSS_EPS.sql_default()}",
    summary="Logistic (cross-entropy) loss of predicted probabilities against 0/1 labels (an "
    "aggregate: one value per group).",
    formula="-mean over the counted rows of (label ln p + (1 - label) ln(1 - p)), p the "
    "prediction clipped to [eps, 1 - eps]; eps defaults to 2^-52, float64's machine epsilon "
    "(scikit-learn's); eps := 1e-15 gives RecBole's LogLoss",
    undefined="NULL for a group without a row whose prediction and label are both not NULL. A "
    "label other than 0 and 1 (booleans are read as 0/1) or a prediction outside [0, 1] is an "
    "error naming the value. A group of one class is not refused (scikit-learn refuses it "
    "unless given labels=[0, 1]; that value is this one).",
    sql=_pointwise_sql(
        "log_loss",
        "CASE WHEN min(label::DOUBLE) FILTER (WHERE {c} AND label::DOUBLE NOT IN (0, 1)) IS NOT "
        "NULL THEN error('log_loss: label must be 0 or 1, got ' || (min(label::DOUBLE) FILTER "
        "(WHERE {c} AND label::DOUBLE NOT IN (0, 1)))::VARCHAR) "
        "WHEN min(prediction::DOUBLE) FILTER (WHERE {c} AND NOT (prediction::DOUBLE BETWEEN 0 "
        "AND 1)) IS NOT NULL THEN error('log_loss: prediction must be a probability in [0, 1], "
        "got ' || (min(prediction::DOUBLE) FILTER (WHERE {c} AND NOT (prediction::DOUBLE "
        "BETWEEN 0 AND 1)))::VARCHAR) "
        "WHEN {invalid} THEN {error} "
        "ELSE -avg(CASE WHEN label::DOUBLE = 1 THEN ln(least(greatest(prediction::DOUBLE, {e}), "
        "1 - {e})) ELSE ln(1 - least(greatest(prediction::DOUBLE, {e}), 1 - {e})) END) "
        "FILTER (WHERE {c}) END".format(c=_counted("prediction", "label"), e="eps::DOUBLE",
                                        invalid=_EPS_INVALID, error=_EPS_ERROR),
        ("prediction", "label"),
    ),
    kernel=_log_loss,
    peers="scikit-learn's log_loss (labels=[0, 1]); RecBole's LogLoss clips at 1e-15 "
    "(eps := 1e-15; a difference only for predictions within 1e-15 of 0 or 1).",
    source="scikit-learn 1.9, sklearn/metrics/_classification.py (log_loss)",
)

METRICS: tuple[Aggregate, ...] = (RMSE, MSE, MAE, R2, LOG_LOSS)
