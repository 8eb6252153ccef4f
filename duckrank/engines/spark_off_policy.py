"""The off-policy estimators and diagnostics on Spark DataFrames (issue 31): the SQL aggregates
of ``duckrank.off_policy``'s records (the DuckDB macros' text, which keeps to what both engines
read, with Spark's ``raise_error`` for DuckDB's ``error``), grouped by segment columns.

    >>> from duckrank.engines.spark_off_policy import off_policy
    >>> off_policy(log, ["ips", "dr"], by="segment", lambdas={"ips": 10.0}).show()

``log`` has one row per logged round with the columns of docs/off-policy.md (``reward``,
``pscore``, ``action_prob``, and ``q_hat``, ``v_hat`` for the estimators with a reward model;
other names through ``columns``). The result has one row per segment: ``rounds``, for each
request ``<estimator>`` (with its lambda_ in the name when it is not obp's default, e.g.
``ips(lambda_=10.0)``) and ``<estimator>_stderr``, and the diagnostics ``ope_ess``,
``ope_support``, ``ope_max_weight``, ``ope_mean_weight``. The bootstrap interval is
``duckrank.off_policy``'s (DuckDB) only. A bad value is an error naming the function, the
argument and the value, as in DuckDB. ``aggregate(name, lambda_)`` is any one record's
aggregate (the slate estimators included) as a Column, over columns named as its arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from duckrank.off_policy import DIAGNOSTICS, RECORDS
from duckrank.off_policy.record import DOMAINS, Estimator
from duckrank.off_policy.requests import resolve
from duckrank.off_policy.sql_text import spark_sql

ROLES = tuple(DOMAINS)  # reward, pscore, action_prob, q_hat, v_hat


def aggregate(name: str, lambda_: float | None = None) -> Column:
    """The aggregate of the record ``name`` (any estimator, diagnostic or slate estimator of
    docs/off-policy.md) as a Spark Column over columns named as its arguments, e.g.
    ``log.groupBy("segment").agg(aggregate("slate_cascade_dr"), aggregate("ips", 10.0))``;
    ``lambda_``: the estimator's hyperparameter (default obp's)."""
    record = next((r for r in RECORDS if r.name == name.lower()), None)
    if record is None:
        raise ValueError(f"off_policy: unknown function {name!r}; known: "
                         f"{', '.join(r.name for r in RECORDS)}")
    if isinstance(record, Estimator):
        (record, value), = resolve([record.name], None if lambda_ is None else
                                   {record.name: lambda_}, set(record.inputs))
        return F.expr(spark_sql(record.aggregate_sql(value))).alias(name)
    if lambda_ is not None:
        raise ValueError(f"off_policy: {name} has no lambda_, got {lambda_!r}")
    return F.expr(spark_sql(record.sql)).alias(name)


def _label(record: Estimator, lam: float | None) -> str:
    default = record.hyperparameter is None or lam == record.hyperparameter.default
    return record.name if default else f"{record.name}(lambda_={lam!r})"


def off_policy(
    log: DataFrame,
    estimators: Sequence[str] | str | None = None,
    *,
    by: str | Sequence[str] | None = None,
    lambdas: Mapping[str, float | Sequence[float]] | None = None,
    columns: Mapping[str, str] | None = None,
) -> DataFrame:
    """One row per segment of ``log``: the estimates, their standard errors (sd of the round
    values / sqrt(rounds)) and the diagnostics (see the module's docstring)."""
    keys = [by] if isinstance(by, str) else list(by or [])
    names = {role: (columns or {}).get(role, role) for role in ROLES}
    present = {role for role, column in names.items() if column in log.columns}
    for needed in ("pscore", "action_prob"):
        if needed not in present:
            raise ValueError(f"off_policy: the log has no {needed} column {names[needed]!r}")
    requests = resolve(estimators, lambdas, present)
    rounds = log.select(*[F.col(k) for k in keys],
                        *[F.col(names[role]).alias(role) for role in sorted(present)])
    if any(record.self_normalised for record, _ in requests):
        weight = "CAST(action_prob AS DOUBLE) / CAST(pscore AS DOUBLE)"
        means = rounds.groupBy(*keys).agg(F.expr(f"avg({weight})").alias("mean_weight"))
        if keys:
            renamed = means.select(*[F.col(k).alias(f"_key{i}") for i, k in enumerate(keys)],
                                   "mean_weight")
            condition = [rounds[k].eqNullSafe(renamed[f"_key{i}"]) for i, k in enumerate(keys)]
            rounds = rounds.join(renamed, condition).drop(
                *[f"_key{i}" for i in range(len(keys))])
        else:
            rounds = rounds.crossJoin(means)
    outputs = [F.count(F.lit(1)).alias("rounds")]
    for record, lam in requests:
        label = _label(record, lam)
        outputs.append(F.expr(spark_sql(record.aggregate_sql(lam))).alias(label))
        round_value = F.expr(spark_sql(record.round_sql("mean_weight", lam)))
        outputs.append((F.stddev_samp(round_value) / F.sqrt(F.count(F.lit(1))))
                       .alias(f"{label}_stderr"))
    outputs += [F.expr(spark_sql(d.sql)).alias(d.name) for d in DIAGNOSTICS]
    grouped = rounds.groupBy(*keys).agg(*outputs)
    return grouped.orderBy(*keys) if keys else grouped
