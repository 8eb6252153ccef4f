"""Diversity on Spark: inside a user's list (``ild_embedding``, ``ild_category``,
``categorical_diversity``, ``rank_biased_entropy``) and across users' lists
(``inter_user_diversity``, drawing the same pairs of users as DuckDB for the same seed, from
duckrank's seeded hash: ``duckrank.seeded_hash.of_integers``, its numpy form), as
``duckrank.metrics.beyond.diversity`` defines them."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from duckrank import seeded_hash
from duckrank.engines.spark_beyond.inputs import Inputs, one_row_per_item, weight


def _categories(a: Inputs) -> DataFrame:
    """(item, cat): the categories table, one row per item."""
    return one_row_per_item(a, "categories", a.table("categories").select(
        F.col(a.item).alias("item"), F.col(a.column("category_col")).alias("cat")))


def _ild_category(a: Inputs) -> DataFrame:
    per = (a.top().join(_categories(a), "item", "left").where(F.col("cat").isNotNull())
           .groupBy("user", "cat").agg(F.count("*").cast("double").alias("n")))
    m = F.sum("n")
    value = (m * m - F.sum(F.col("n") * F.col("n"))) / (m * (m - 1))
    return a.per_user(per.groupBy("user").agg(F.when(m > 1, value).alias(a.name)))


def _categorical_diversity(a: Inputs) -> DataFrame:
    per = (a.top().join(_categories(a), "item", "left").groupBy("user")
           .agg((F.countDistinct("cat") / F.lit(float(a.k))).alias(a.name)))
    return a.per_user(per)


def _rank_biased_entropy(a: Inputs) -> DataFrame:
    """log2 T - (sum over the user's categories of v log2 v + (C - n) s log2 s) / T, v = e + s,
    T = sum e + s C: the entropy over all C categories of the table, written with the
    categories absent from the list together."""
    w = weight(a)
    s = a.value("smoothing")
    pairs = (a.table("categories").select(
        F.col(a.item).alias("item"), F.col(a.column("category_col")).alias("cat"))
        .where(F.col("item").isNotNull() & F.col("cat").isNotNull()).distinct())
    shares = pairs.withColumn("share", 1.0 / F.count("*").over(Window.partitionBy("item")))
    n_categories = float(pairs.select("cat").distinct().count())
    e = (a.top().withColumn("w", w).join(shares, "item").groupBy("user", "cat")
         .agg(F.sum(F.col("w") * F.col("share")).alias("e")))
    total = F.sum("e") + s * n_categories
    absent = (n_categories - F.count("*")) * s * math.log2(s) if s > 0 else F.lit(0.0)
    value = F.log2(total) - (F.sum((F.col("e") + s) * F.log2(F.col("e") + s)) + absent) / total
    return a.per_user(e.groupBy("user").agg(value.alias(a.name)))


def _ild_embedding(a: Inputs) -> DataFrame:
    """The record's computed form: 1 - (|sum u_i|^2 - m) / (m (m - 1)) over the unit vectors
    u_i of the user's items, the sum of each user's vectors taken element by element over its
    collected list (one shuffle by user, no row per dimension)."""
    vectors = one_row_per_item(a, "embeddings", a.table("embeddings").select(
        F.col(a.item).alias("item"), F.col(a.column("vector_col")).cast("array<double>")
        .alias("v")))
    # DuckDB's list_dot_product refuses a NULL element; here the error names the item.
    for row in vectors.where(F.exists("v", lambda x: x.isNull())).limit(1).collect():
        raise ValueError(f"{a.name}: the embedding of item {row['item']} holds a NULL")
    norm = F.sqrt(F.aggregate("v", F.lit(0.0), lambda acc, x: acc + x * x))
    units = (vectors.withColumn("norm", norm).where(F.col("norm") > 0)
             .select("item", F.transform("v", lambda x: x / F.col("norm")).alias("u")))
    lists = (a.top().join(units, "item").groupBy("user")
             .agg(F.collect_list("u").alias("us")))
    # zip_with pads the shorter of two vectors with NULL, so vectors of different lengths
    # leave a NULL in the sum.
    total = F.aggregate("us", F.array_repeat(F.lit(0.0), F.size(F.col("us")[0])),
                        lambda acc, u: F.zip_with(acc, u, lambda x, y: x + y))
    m = F.size("us").cast("double")
    squares = F.aggregate(total, F.lit(0.0), lambda acc, x: acc + x * x)
    value = (F.when(F.exists(total, lambda x: x.isNull()), F.raise_error(F.concat(
        F.lit(f"{a.name}: the vectors of the items of user "), F.col("user").cast("string"),
        F.lit(" differ in length")))).when(m > 1, 1 - (squares - m) / (m * (m - 1))))
    return a.per_user(lists.select("user", value.cast("double").alias(a.name)))


def _user_pairs(j: np.ndarray, n: int, exact: bool, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Pair number j -> users (a, b) numbered 1..n, as the inter_user_diversity macro draws
    them: with ``exact``, j = t (t - 1) / 2 + b - 1 inverted in floating point as the macro
    does (so the same pair even where the square root rounds), else drawn from duckrank's
    seeded hash of (seed, j, 0) and (seed, j, 1), b moved past a so that a <> b."""
    if exact:
        t = np.floor((1 + np.sqrt((1 + 8 * j).astype(np.float64))) / 2).astype(np.int64)
        return t + 1, j - t * (t - 1) // 2 + 1
    a = 1 + (seeded_hash.of_integers(seed, j, 0) % np.uint64(n)).astype(np.int64)
    b = 1 + (seeded_hash.of_integers(seed, j, 1) % np.uint64(n - 1)).astype(np.int64)
    return a, np.where(b < a, b, b + 1)


def _inter_user_diversity(a: Inputs) -> DataFrame:
    pairs = a.value("pairs")
    seed = a.value("seed")
    top = F.slice(F.coalesce(F.col(a.rec), F.array()), 1, a.k)
    users = a.recs.select(
        F.row_number().over(Window.orderBy(F.col(a.user).asc_nulls_last())).alias("i"),
        F.array_distinct(F.filter(top, lambda x: x.isNotNull())).alias("top"))
    n = users.count()
    exact = n * (n - 1) // 2 <= pairs
    drawn = n * (n - 1) // 2 if exact else int(pairs)

    def draw(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            first, second = _user_pairs(batch.column("id").to_numpy(), n, exact, seed)
            yield pa.RecordBatch.from_arrays([pa.array(first), pa.array(second)], ["a", "b"])

    numbered = a.recs.sparkSession.range(drawn).mapInArrow(draw, "a long, b long")
    x = users.select(F.col("i").alias("a"), F.col("top").alias("x"))
    y = users.select(F.col("i").alias("b"), F.col("top").alias("y"))
    common = F.size(F.array_intersect("x", "y"))
    union = F.size("x") + F.size("y") - common
    d = F.when(union > 0, 1 - common / union)
    return (numbered.join(x, "a").join(y, "b")
            .agg(F.avg(d).alias(a.name), F.count(d).alias("pairs_used"),
                 F.lit(exact).alias("exact")))


METRICS: dict[str, Callable[[Inputs], DataFrame]] = {
    "ild_embedding": _ild_embedding,
    "ild_category": _ild_category,
    "categorical_diversity": _categorical_diversity,
    "rank_biased_entropy": _rank_biased_entropy,
    "inter_user_diversity": _inter_user_diversity,
}
