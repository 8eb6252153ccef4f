"""Coverage on Spark: of the catalogue (``catalog_coverage``, ``exposure_entropy``,
``exposure_gini``) and of the users (``user_coverage``, ``sufficient_reco``,
``unrepeated_reco``), as ``duckrank.metrics.beyond.coverage`` defines them."""

from __future__ import annotations

import math
from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from duckrank.engines.spark_beyond.inputs import Inputs, exposure


def _catalog_coverage(a: Inputs) -> DataFrame:
    if a.value("in_catalog"):
        raise ValueError(f"{a.name}: in_catalog=True is not in Spark (it reads a catalog table, "
                         "which Spark does not take): call the DuckDB macro")
    distinct = F.count("*").cast("double")
    if not a.value("normalize"):
        return exposure(a, weighted=False).agg(distinct.alias(a.name))
    size = a.catalog_size()
    return exposure(a, weighted=False).agg((distinct / F.lit(float(size))).alias(a.name))


def _exposure_entropy(a: Inputs) -> DataFrame:
    scale = math.log(2) if a.value("unit") == "nats" else 1.0
    per_item = a.value("per_item")
    x = exposure(a).withColumn("t", F.sum("n").over(Window.partitionBy()))
    entropy = F.sum(F.col("n") * (F.log2("t") - F.log2("n"))) / F.first("t") * scale
    return x.agg((entropy / F.count("*") if per_item else entropy).alias(a.name))


def _exposure_gini(a: Inputs) -> DataFrame:
    size = a.catalog_size()
    over = size - 1 if a.value("denominator") == "n_minus_1" else size
    complement = a.value("complement")
    x = exposure(a)
    distinct = x.count()
    if distinct > size:
        raise ValueError(f"{a.name}: {distinct} distinct items were recommended, more than the "
                         f"catalogue size {size}")
    ranked = x.withColumn("r", F.row_number().over(Window.orderBy("n")))
    weight = 2 * (F.lit(size - distinct) + F.col("r")) - size - 1
    # N - 1 = 0 (one item): NULL, as the macro (a division by 0 is an error under ANSI mode).
    gini = (F.sum(weight * F.col("n")) / (F.lit(float(over)) * F.sum("n")) if over
            else F.lit(None).cast("double"))
    return ranked.agg((1 - gini if complement else gini).alias(a.name))


def _top_counts(a: Inputs) -> tuple[Column, Column]:
    """Per row of recs: the non-NULL items of its top k, and the distinct ones (NULL for a NULL
    list)."""
    items = F.filter(F.slice(F.col(a.rec), 1, a.k), lambda x: x.isNotNull())
    return F.size(items), F.size(F.array_distinct(items))


def _user_coverage(a: Inputs) -> DataFrame:
    full = a.value("full_lists")
    n, _ = _top_counts(a)
    listed = (a.recs.where(F.col(a.user).isNotNull())
              .select(F.col(a.user).alias("user"),
                      F.coalesce(F.when(F.col(a.rec).isNotNull(), n >= (a.k if full else 1)),
                                 F.lit(False)).alias("c"))
              .groupBy("user").agg(F.max("c").alias("covered")))
    test = a.options.pop("test", None)
    users = (listed.select("user") if test is None else
             test.select(F.col(a.user).alias("user")).where(F.col("user").isNotNull()).distinct())
    covered = F.count(F.when(F.col("covered"), 1))
    share = (covered / F.when(F.count("*") > 0, F.count("*")) if a.value("normalize")
             else covered.cast("double"))
    return users.join(listed, "user", "left").agg(
        share.alias(a.name),
        covered.alias("covered_users"), F.count("*").alias("users"))


def _sufficient_reco(a: Inputs) -> DataFrame:
    deep = a.value("deep")
    n, _ = _top_counts(a)
    value = n / a.k if deep else (n >= a.k).cast("double")
    return a.recs.select(F.col(a.user).alias("user"),
                         F.when(F.col(a.rec).isNotNull(), value).alias(a.name))


def _unrepeated_reco(a: Inputs) -> DataFrame:
    deep = a.value("deep")
    n, d = _top_counts(a)
    value = d / n if deep else (d == n).cast("double")
    return a.recs.select(F.col(a.user).alias("user"),
                         F.when(F.col(a.rec).isNotNull() & (n > 0), value).alias(a.name))


METRICS: dict[str, Callable[[Inputs], DataFrame]] = {
    "catalog_coverage": _catalog_coverage,
    "exposure_entropy": _exposure_entropy,
    "exposure_gini": _exposure_gini,
    "user_coverage": _user_coverage,
    "sufficient_reco": _sufficient_reco,
    "unrepeated_reco": _unrepeated_reco,
}
