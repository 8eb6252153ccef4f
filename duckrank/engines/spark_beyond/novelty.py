"""Popularity and novelty on Spark (``arp``, ``self_information``, ``epc``, ``efd`` and their
extended forms, ``long_tail_share``, ``serendipity``), as ``duckrank.metrics.beyond.novelty``
defines them."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from duckrank.engines.spark_beyond.inputs import Inputs, item_mean, weight, weighted_mean


def _arp(a: Inputs) -> DataFrame:
    normalize = a.value("normalize")
    w = weight(a)
    train = a.train_items().where(F.col("item").isNotNull())
    counts = train.groupBy("item").agg(F.count("*").cast("double").alias("n"))
    scale = float(train.count()) if normalize else 1.0
    return weighted_mean(a, counts, F.coalesce(F.col("n"), F.lit(0.0)) / scale, w)


def _self_information(a: Inputs) -> DataFrame:
    normalize = a.value("normalize")
    by_interactions = a.value("popularity") == "interactions"
    w = weight(a)
    if by_interactions:
        rows = a.train_items().where(F.col("item").isNotNull())
        total = float(rows.count())
        counts = rows.groupBy("item").agg(F.count("*").cast("double").alias("n"))
        # Microsoft Recommenders' rule: an item absent from train adds 0.
        value = F.coalesce(-F.log2(F.col("n") / total), F.lit(0.0))
    else:
        pairs = a.train_items().distinct()
        total = float(pairs.select("u").distinct().count())
        counts = (pairs.where(F.col("item").isNotNull()).groupBy("item")
                  .agg(F.count("u").cast("double").alias("n")))
        value = -F.log2(F.coalesce(F.col("n"), F.lit(1.0)) / total)
    if normalize:
        value = value / F.log2(F.lit(total)) if total > 1 else F.lit(None).cast("double")
    return weighted_mean(a, counts, value, w)


def _expected_novelty(kind: str, graded: bool = False) -> Callable[[Inputs], DataFrame]:
    """epc and efd: sum of w(r) rel(i) nov(i) / sum of w(r) per user with a relevant item, nov
    from the distinct training users of each item; rel binary (truth a LIST) or, ``graded``,
    Elliot's 2^(grade - threshold + 1) - 1 (truth a MAP item -> grade)."""

    def compute(a: Inputs) -> DataFrame:
        threshold = float(a.value("threshold")) if graded else 0.0
        w = weight(a)
        train = a.train_items()
        pairs = train.where(F.col("item").isNotNull()).distinct()
        counts = pairs.groupBy("item").agg(F.count("u").cast("double").alias("n"))
        if kind == "epc":
            total = float(train.select("u").distinct().count())
            novelty = 1 - F.coalesce(F.col("n"), F.lit(0.0)) / total if total else F.lit(None)
        else:
            row = counts.agg(F.sum("n").alias("s"), F.min("n").alias("m")).collect()[0]
            novelty = (-F.log2(F.coalesce(F.col("n"), F.lit(row["m"])) / row["s"])
                       if row["s"] else F.lit(None))
        truth = a.recs.select(F.col(a.user).alias("user"), F.col(a.truth).alias("truth"))
        rows = (a.top().join(counts, "item", "left").join(truth, "user")
                .withColumn("w", w))
        if graded:
            grade = F.col("truth")[F.col("item")]
            relevant = F.when(grade >= threshold, F.pow(F.lit(2.0), grade - threshold + 1) - 1
                              ).otherwise(0.0)
            defined = F.size(F.filter(F.map_values(F.first("truth")),
                                      lambda g: g >= threshold)) > 0
        else:
            relevant = F.array_contains(F.col("truth"), F.col("item")).cast("double")
            defined = F.size(F.filter(F.first("truth"), lambda x: x.isNotNull())) > 0
        value = F.when(defined, F.sum(F.col("w") * relevant * novelty) / F.sum("w"))
        return a.per_user(rows.groupBy("user").agg(value.cast("double").alias(a.name)))

    return compute


def _long_tail_share(a: Inputs) -> DataFrame:
    share = a.value("head_share")
    ratio = a.value("tail_ratio")
    counts = (a.train_items().where(F.col("item").isNotNull()).groupBy("item")
              .agg(F.count("*").alias("n")))
    if ratio is not None:
        # RecBole's tail: a count threshold above 1, else the least popular share (ties by
        # item), at least one item.
        ranked = (counts.withColumn("r", F.row_number().over(Window.orderBy("n", "item")))
                  .withColumn("m", F.count("*").over(Window.partitionBy())))
        tail = ranked.where(F.col("n") <= ratio if ratio > 1 else
                            F.col("r") <= F.greatest(F.floor(F.col("m") * float(ratio)),
                                                     F.lit(1)))
        return item_mean(a, tail.select("item", F.lit(1.0).alias("h")),
                         F.when(F.col("h").isNull(), 0.0).otherwise(1.0))
    head = (counts.withColumn("r", F.rank().over(Window.orderBy(F.desc("n"))))
            .withColumn("m", F.count("*").over(Window.partitionBy()))
            .where(F.col("r") - 1 < share * F.col("m")).select("item", F.lit(1.0).alias("h")))
    return item_mean(a, head, F.when(F.col("h").isNull(), 1.0).otherwise(0.0))


def _serendipity(a: Inputs) -> DataFrame:
    n = float(a.catalog_size())
    counts = (a.train_items().where(F.col("item").isNotNull()).groupBy("item")
              .agg(F.count("*").alias("c")))
    ranks = counts.select("item", F.dense_rank().over(Window.orderBy(F.desc("c")))
                          .alias("pop_rank"))
    truth = a.recs.select(F.col(a.user).alias("user"), F.col(a.truth).alias("truth"))
    expected = (n + 1 - F.col("pos")) / n - F.coalesce((n + 1 - F.col("pop_rank")) / n,
                                                       F.lit(0.0))
    relevant = F.when(F.col("truth").isNull(), None).otherwise(
        F.array_contains(F.col("truth"), F.col("item")).cast("double"))
    value = F.greatest(expected, F.lit(0.0)) * relevant
    rows = a.top().join(ranks, "item", "left").join(truth, "user")
    return a.per_user(rows.groupBy("user").agg(F.avg(value).alias(a.name)))


METRICS: dict[str, Callable[[Inputs], DataFrame]] = {
    "arp": _arp,
    "epc": _expected_novelty("epc"),
    "efd": _expected_novelty("efd"),
    "extended_epc": _expected_novelty("epc", graded=True),
    "extended_efd": _expected_novelty("efd", graded=True),
    "self_information": _self_information,
    "long_tail_share": _long_tail_share,
    "serendipity": _serendipity,
}
