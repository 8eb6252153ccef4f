"""Inverse-propensity weighted accuracy on Spark (``ips_recall``, ``ips_precision``,
``ips_ndcg``), as ``duckrank.metrics.debiased`` defines them."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from duckrank.engines.spark_beyond.inputs import Inputs, one_row_per_item


def _propensities(a: Inputs, gamma: float) -> DataFrame:
    """(item, p): the table given, checked, or Yang et al.'s estimate from train."""
    given, train = a.options.pop("propensities", None), a.options.pop("train", None)
    if (given is None) == (train is None):
        raise ValueError(f"{a.name}: give propensities (a table of item and propensity) or "
                         "train (a table of training interactions), exactly one")
    if given is not None:
        table = given.select(F.col(a.item).alias("item"),
                             F.col(a.column("propensity_col")).cast("double").alias("p")
                             ).where(F.col("item").isNotNull())
        bad = table.where(F.col("p").isNull() | (F.col("p") <= 0) | (F.col("p") > 1)).limit(1)
        for row in bad.collect():
            raise ValueError(f"{a.name}: the propensity of item {row['item']} must be in "
                             f"(0, 1], got {row['p']}")
        return one_row_per_item(a, "propensities", table)
    counts = (train.select(F.col(a.item).alias("item")).where(F.col("item").isNotNull())
              .groupBy("item").agg(F.count("*").cast("double").alias("n")))
    return counts.select("item", F.pow(F.col("n") / F.max("n").over(Window.partitionBy()),
                                       (gamma + 1) / 2).alias("p"))


def _ips(metric: str) -> Callable[[Inputs], DataFrame]:
    def compute(a: Inputs) -> DataFrame:
        # The macros' options (debiased.OPTIONS, in its record), so both engines say the same.
        gamma, estimator = float(a.value("gamma")), a.value("estimator")
        clip = float(a.value("min_propensity"))
        p = _propensities(a, gamma)
        relevant = a.recs.select(
            F.col(a.user).alias("user"), F.slice(F.col(a.rec), 1, a.k).alias("top"),
            F.explode(F.array_distinct(F.filter(F.col(a.truth), lambda x: x.isNotNull())))
            .alias("item"))
        rows = relevant.join(p, "item", "left").select(
            "user", "item", F.array_position("top", F.col("item")).alias("pos"),
            F.greatest(F.coalesce(F.col("p"), F.lit(0.0)), F.lit(clip)).alias("q"))
        missing = rows.where(F.col("q") == 0).limit(1).collect()
        if missing:
            raise ValueError(f"{a.name}: item {missing[0]['item']} of the truth of user "
                             f"{missing[0]['user']} has no propensity; give min_propensity to "
                             "weigh such items")
        w = 1 / F.col("q")
        hit = F.col("pos") > 0
        n, sw = F.count("*").cast("double"), F.sum(w)
        hits_w = F.coalesce(F.sum(F.when(hit, w)), F.lit(0.0))
        if metric == "recall":
            value = hits_w / n
        elif metric == "precision":
            value = hits_w / a.k
        else:
            dcg_w = F.coalesce(F.sum(F.when(hit, w / F.log2(F.col("pos") + 1))), F.lit(0.0))
            ideal = F.aggregate(F.sequence(F.lit(1), F.least(F.lit(a.k), F.count("*"))),
                                F.lit(0.0), lambda acc, j: acc + 1 / F.log2(j + 1))
            value = dcg_w / ideal
        if estimator == "snips":
            value = value * n / sw
        return a.per_user(rows.groupBy("user").agg(value.alias(a.name)))

    return compute


METRICS: dict[str, Callable[[Inputs], DataFrame]] = {
    "ips_recall": _ips("recall"),
    "ips_precision": _ips("precision"),
    "ips_ndcg": _ips("ndcg"),
}
