"""The beyond-accuracy metrics on Spark DataFrames (``duckrank.spark.beyond_accuracy``): the
same definitions as the DuckDB macros of ``duckrank.metrics.beyond_accuracy`` and
``duckrank.metrics.debiased`` (their records are the reference; the tests compare the two
engines on the same data), as Spark's own DataFrame operations: each user's top k exploded once
and joined with per-item statistics of the side tables, never a catalogue per row.

    >>> from duckrank.spark import beyond_accuracy
    >>> beyond_accuracy(recs, "arp", 10, train=train).agg(F.avg("arp"))

``recs`` has a user column, a LIST column of items (best first) and, for ``serendipity`` and
the ``ips_*`` metrics, a LIST column of the user's relevant items; side tables are DataFrames
with the macros' columns (``train``: user, item; ``categories``: item, category;
``embeddings``: item, embedding; ``propensities``: item, propensity). The result has the shape of
the DuckDB macro: one row for a catalogue metric, (user, value) per user of ``recs`` for a
per-user one, (user, value) per user of both for a list similarity (``other`` joined on the user).
``inter_user_diversity`` draws the same pairs of users as DuckDB for the same seed, from
duckrank's seeded hash (``duckrank.seeded_hash.of_integers``, its numpy form).

Not here: a ``catalog`` table for ``exposure_gini`` and ``serendipity`` (give ``catalog_size``),
and so ``catalog_coverage``'s ``in_catalog=True`` (an error that says so).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType

from duckrank import seeded_hash
from duckrank.metrics import debiased
from duckrank.metrics.beyond.common import DEFAULT_PERSISTENCE, DISCOUNTS
from duckrank.metrics.beyond_accuracy import jaccard_kernel, overlap_kernel, rbo_kernel
from duckrank.metrics.record import check_options


def _check_k(name: str, k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int | float) or k < 1 or k != int(k):
        raise ValueError(f"{name}: k must be a positive integer, got {k!r}")
    return int(k)


class _Inputs:
    """The arguments of one call, with the column names and checks every metric shares."""

    def __init__(self, name: str, recs: DataFrame, k: object, options: dict[str, Any]) -> None:
        self.name, self.recs, self.k = name, recs, _check_k(name, k)
        self.options = options
        self.user = options.pop("user_col", "user")
        self.rec = options.pop("rec_col", "rec")
        self.truth = options.pop("truth_col", "truth")
        self.item = options.pop("item_col", "item")

    def table(self, option: str) -> DataFrame:
        table = self.options.pop(option, None)
        if table is None:
            raise ValueError(f"{self.name}: give {option} (a DataFrame)")
        return table

    def number(self, option: str, default: float, low: float, high: float,
               closed: bool = True) -> float:
        value = self.options.pop(option, default)
        inside = (low <= value <= high) if closed else (low < value < high)
        if isinstance(value, bool) or not isinstance(value, int | float) or not inside:
            interval = f"[{low}, {high}]" if closed else f"({low}, {high})"
            raise ValueError(f"{self.name}: {option} must be a number in {interval}, got "
                             f"{value!r}")
        return float(value)

    def catalog_size(self) -> int:
        size = self.options.pop("catalog_size", None)
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"{self.name}: give catalog_size, a positive integer (a catalog "
                             f"table is not supported on Spark), got {size!r}")
        return size

    def users(self) -> DataFrame:
        return self.recs.select(F.col(self.user).alias("user")).distinct()

    def top(self) -> DataFrame:
        """(user, pos, item): each user's top k, one row per non-NULL item, pos from 1."""
        return (self.recs.select(F.col(self.user).alias("user"),
                                 F.posexplode(F.slice(F.col(self.rec), 1, self.k)))
                .select("user", (F.col("pos") + 1).alias("pos"), F.col("col").alias("item"))
                .where(F.col("item").isNotNull()))

    def train_items(self) -> DataFrame:
        return self.table("train").select(F.col(self.user).alias("u"),
                                          F.col(self.item).alias("item"))

    def per_user(self, values: DataFrame) -> DataFrame:
        """One row per user of recs: ``values`` (user, name) left-joined (NULL where absent)."""
        return self.users().join(values, "user", "left").select("user", self.name)

    def done(self, result: DataFrame) -> DataFrame:
        if self.options:
            raise ValueError(f"{self.name}: unknown option(s) {', '.join(sorted(self.options))}")
        return result


def _exposure(a: _Inputs) -> DataFrame:
    """(item, n): the sum of the discounts of the top-k positions holding the item (their
    count without a discount)."""
    weight = _weight(a, "none")
    return a.top().withColumn("w", weight).groupBy("item").agg(F.sum("w").alias("n"))


def _catalog_coverage(a: _Inputs) -> DataFrame:
    if _flag(a, "in_catalog"):
        raise ValueError(f"{a.name}: in_catalog=True is not in Spark (it reads a catalog table, "
                         "which Spark does not take): call the DuckDB macro")
    distinct = F.count("*").cast("double")
    if not _flag(a, "normalize", True):
        return _exposure(a).agg(distinct.alias(a.name))
    size = a.catalog_size()
    return _exposure(a).agg((distinct / F.lit(float(size))).alias(a.name))


def _exposure_entropy(a: _Inputs) -> DataFrame:
    scale = math.log(2) if _choice(a, "unit", ("bits", "nats")) == "nats" else 1.0
    per_item = _flag(a, "per_item")
    x = _exposure(a).withColumn("t", F.sum("n").over(Window.partitionBy()))
    entropy = F.sum(F.col("n") * (F.log2("t") - F.log2("n"))) / F.first("t") * scale
    return x.agg((entropy / F.count("*") if per_item else entropy).alias(a.name))


def _exposure_gini(a: _Inputs) -> DataFrame:
    size = a.catalog_size()
    over = (size - 1 if _choice(a, "denominator", ("n", "n_minus_1")) == "n_minus_1"
            else size)
    complement = _flag(a, "complement")
    x = _exposure(a)
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


def _flag(a: _Inputs, option: str, default: bool = False) -> bool:
    value = a.options.pop(option, default)
    if not isinstance(value, bool):
        raise ValueError(f"{a.name}: {option} must be true or false, got {value!r}")
    return value


def _choice(a: _Inputs, option: str, values: tuple[str, ...]) -> str:
    """An option taking one of ``values``, the first being its default."""
    value = a.options.pop(option, values[0])
    if value not in values:
        raise ValueError(f"{a.name}: {option} must be {' or '.join(map(repr, values))}, got "
                         f"{value!r}")
    return value


def _top_counts(a: _Inputs) -> tuple[Column, Column]:
    """Per row of recs: the non-NULL items of its top k, and the distinct ones (NULL for a NULL
    list)."""
    items = F.filter(F.slice(F.col(a.rec), 1, a.k), lambda x: x.isNotNull())
    return F.size(items), F.size(F.array_distinct(items))


def _user_coverage(a: _Inputs) -> DataFrame:
    full = _flag(a, "full_lists")
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
    share = (covered / F.when(F.count("*") > 0, F.count("*")) if _flag(a, "normalize", True)
             else covered.cast("double"))
    return users.join(listed, "user", "left").agg(
        share.alias(a.name),
        covered.alias("covered_users"), F.count("*").alias("users"))


def _sufficient_reco(a: _Inputs) -> DataFrame:
    deep = _flag(a, "deep")
    n, _ = _top_counts(a)
    value = n / a.k if deep else (n >= a.k).cast("double")
    return a.recs.select(F.col(a.user).alias("user"),
                         F.when(F.col(a.rec).isNotNull(), value).alias(a.name))


def _unrepeated_reco(a: _Inputs) -> DataFrame:
    deep = _flag(a, "deep")
    n, d = _top_counts(a)
    value = d / n if deep else (d == n).cast("double")
    return a.recs.select(F.col(a.user).alias("user"),
                         F.when(F.col(a.rec).isNotNull() & (n > 0), value).alias(a.name))


def _popularity_groups(a: _Inputs, train: DataFrame) -> DataFrame:
    """(item, grp): 'head' or 'tail' for every item of train (the fairness records' ``head``
    and ``head_share``: Elliot's 'interactions' or the 'items' rule of long_tail_share)."""
    head = a.options.pop("head", "interactions")
    if head not in ("interactions", "items"):
        raise ValueError(f"{a.name}: head must be 'interactions' or 'items', got {head!r}")
    if a.options.get("head_share") is None:
        a.options.pop("head_share", None)
    share = a.number("head_share", 0.8 if head == "interactions" else 0.2, 0, 1)
    items = train.where(F.col("item").isNotNull())
    if head == "items":
        counts = items.groupBy("item").agg(F.count("*").alias("n"))
        ranked = (counts.withColumn("above", F.rank().over(Window.orderBy(F.desc("n"))) - 1)
                  .withColumn("m", F.count("*").over(Window.partitionBy())))
        return ranked.select("item", F.when(F.col("above") < share * F.col("m"), "head")
                             .otherwise("tail").alias("grp"))
    counts = items.distinct().groupBy("item").agg(F.count("*").alias("n"))
    order = Window.orderBy(F.desc("n"), "item").rowsBetween(Window.unboundedPreceding, -1)
    ranked = (counts.withColumn("before", F.sum("n").over(order))
              .withColumn("total", F.sum("n").over(Window.partitionBy())))
    in_head = F.col("before").isNull() | (share * F.col("total") - F.col("before") > 0)
    return ranked.select("item", F.when(in_head, "head").otherwise("tail").alias("grp"))


def _tail(per_position: bool) -> Callable[[_Inputs], DataFrame]:
    def compute(a: _Inputs) -> DataFrame:
        groups = _popularity_groups(a, a.train_items())
        tail = F.countDistinct(F.when(F.col("grp") == "tail", F.col("item")))
        value = tail / F.count("item") if per_position else tail
        rows = a.top().join(groups, "item", "left").groupBy("user")
        return a.per_user(rows.agg(value.cast("double").alias(a.name)))

    return compute


def _item_groups(a: _Inputs) -> DataFrame:
    table = a.table("item_groups").select(
        F.col(a.item).alias("item"), F.col(a.options.pop("group_col", "group")).alias("grp"))
    return _one_row_per_item(a, "item_groups", table).where(
        F.col("item").isNotNull() & F.col("grp").isNotNull())


def _parity(kind: str, popularity: bool) -> Callable[[_Inputs], DataFrame]:
    """reo, rsp (over item_groups) and pop_reo, pop_rsp (over the head and the tail): the
    groups' P_g = num_g / den_g summed over the users (DataFrame joins), then std / mean of the
    few P_g on the driver."""

    def compute(a: _Inputs) -> DataFrame:
        train = a.train_items().where(F.col("item").isNotNull()).distinct()
        groups = _popularity_groups(a, train) if popularity else _item_groups(a)
        top = a.top().select("user", "item").distinct()
        if kind == "reo":
            users = a.recs.select(F.col(a.user).alias("user"), F.array_distinct(F.filter(
                F.col(a.truth), lambda x: x.isNotNull())).alias("truth")).where(
                F.size("truth") > 0)
            hits = top.join(users, "user").where(F.array_contains("truth", F.col("item")))
            num = hits.join(groups, "item").groupBy("grp").count()
            relevant = users.select("user", F.explode("truth").alias("item"))
            unseen = relevant.join(train.withColumnRenamed("u", "user"), ["user", "item"],
                                   "left_anti")
            den = unseen.join(groups, "item").groupBy("grp").count()
        else:
            users = a.recs.select(F.col(a.user).alias("user")).where(
                F.col("user").isNotNull()).distinct()
            num = top.join(groups, "item").groupBy("grp").count()
            seen = (train.withColumnRenamed("u", "user").join(users, "user")
                    .join(groups, "item").groupBy("grp").agg(F.count("*").alias("seen")))
            den = (groups.groupBy("grp").agg(F.count("*").alias("size")).join(seen, "grp", "left")
                   .select("grp", (F.lit(users.count()) * F.col("size")
                                   - F.coalesce(F.col("seen"), F.lit(0))).alias("count")))
        nums = {row["grp"]: row["count"] for row in num.collect()}
        dens = {row["grp"]: row["count"] for row in den.collect()}
        names = {row["grp"] for row in groups.select("grp").distinct().collect()}
        if any(not dens.get(g) for g in names):
            value = None
        else:
            p = np.array([nums.get(g, 0) / dens[g] for g in sorted(names, key=str)])
            value = float(np.std(p) / np.mean(p)) if np.mean(p) else None
        return a.recs.sparkSession.createDataFrame(
            [(value, len(names))], f"{a.name} double, groups long")

    return compute


def _bias_disparity(a: _Inputs) -> DataFrame:
    """Per (user group, item group): bs, br and bd, as the macro (Elliot's BiasDisparity)."""
    train = a.train_items().where(F.col("item").isNotNull()).distinct()
    items = _item_groups(a)
    users = a.table("user_groups").select(
        F.col(a.user).alias("u"), F.col(a.options.pop("user_group_col", "group")).alias("ugrp")
    ).distinct().where(F.col("u").isNotNull())
    for row in users.groupBy("u").count().where("count > 1").limit(1).collect():
        raise ValueError(f"{a.name}: user_groups holds user {row['u']} more than once")
    users = users.where(F.col("ugrp").isNotNull())
    share = items.groupBy("grp").count().select(
        "grp", (F.col("count") / F.sum("count").over(Window.partitionBy())).alias("p"))

    def bias(rows: DataFrame, name: str) -> DataFrame:
        counts = (rows.join(users, "u").join(items, "item").groupBy("ugrp", "grp")
                  .agg(F.count("*").alias("n")))
        pairs = users.select("ugrp").distinct().crossJoin(share)
        n = F.coalesce(F.col("n"), F.lit(0))
        total = F.sum(n).over(Window.partitionBy("ugrp"))
        return pairs.join(counts, ["ugrp", "grp"], "left").select(
            "ugrp", "grp", (n / F.when(total > 0, total) / F.col("p")).alias(name))

    recommended = a.top().select(F.col("user").alias("u"), "item")
    both = bias(train, "bs").join(bias(recommended, "br"), ["ugrp", "grp"])
    return both.select(F.col("ugrp").alias("user_group"), F.col("grp").alias("item_group"),
                       "bs", "br", ((F.col("br") - F.col("bs")) / F.when(F.col("bs") != 0,
                                                                        F.col("bs"))).alias("bd"))


def _sampled_exposure(a: _Inputs) -> tuple[DataFrame, DataFrame, Column]:
    """Diaz et al. (2020), the user's rows as sampled rankings: users (user, samples, truth:
    its distinct relevant items), exposure (user, item, x: the sum over the samples of
    persistence^(rank - 1); x / samples is the expected exposure) and the target e* of each
    relevant item (a column over users)."""
    p = a.number("persistence", 0.5, 0, 1, closed=False)
    rows = a.recs.select(F.col(a.user).alias("user"), F.slice(F.col(a.rec), 1, a.k).alias("top"),
                         F.col(a.truth).alias("truth"))
    users = rows.groupBy("user").agg(
        F.count("*").alias("samples"),
        F.array_distinct(F.filter(F.first("truth", ignorenulls=True), lambda x: x.isNotNull()))
        .alias("truth"))
    exposure = (rows.select("user", F.posexplode("top")).where(F.col("col").isNotNull())
                .groupBy("user", F.col("col").alias("item"))
                .agg(F.sum(F.pow(F.lit(p), F.col("pos"))).alias("x")))
    m = F.size("truth")
    # NULL without a relevant item (m = 0 divides by 0, an error under Spark's ANSI mode).
    return users, exposure, F.when(m > 0, (1 - F.pow(F.lit(p), m)) / (m * (1 - p)))


def _expected_exposure(a: _Inputs) -> DataFrame:
    """EE-L, EE-D and EE-R per user over the items."""
    users, exposure, target = _sampled_exposure(a)
    e = F.col("x") / F.col("samples")
    m = F.size("truth")
    per = users.join(exposure, "user", "left").groupBy("user", "truth").agg(
        F.coalesce(F.sum(e * e), F.lit(0.0)).alias("d"),
        F.coalesce(F.sum(F.when(F.array_contains("truth", F.col("item")), e)), F.lit(0.0))
        .alias("hit"))
    defined = F.coalesce(m, F.lit(0)) > 0
    loss = F.col("d") - 2 * F.col("hit") * target + m * target * target
    return per.select("user", F.when(defined, loss).alias(a.name),
                      F.when(defined, F.col("d")).alias("disparity"),
                      F.when(defined, F.col("hit") * target).alias("relevance"))


def _group_expected_exposure(a: _Inputs) -> DataFrame:
    """EE-L, EE-D and EE-R per user over the item groups: a group's exposure and target are
    the sums of its items'."""
    users, exposure, target = _sampled_exposure(a)
    groups = _item_groups(a)
    summed = exposure.join(groups, "item").groupBy("user", "grp").agg(F.sum("x").alias("x"))
    relevant = (users.select("user", F.explode("truth").alias("item")).join(groups, "item")
                .groupBy("user", "grp").agg(F.count("*").alias("n")))
    both = summed.join(relevant, ["user", "grp"], "full").select(
        "user", F.coalesce(F.col("x"), F.lit(0.0)).alias("x"),
        F.coalesce(F.col("n"), F.lit(0)).alias("n"))
    e, t = F.col("x") / F.col("samples"), F.col("n") * target
    per = users.join(both, "user", "left").groupBy("user", "truth").agg(
        F.sum((e - t) * (e - t)).alias("l"), F.sum(e * e).alias("d"), F.sum(e * t).alias("r"))
    defined = F.coalesce(F.size("truth"), F.lit(0)) > 0
    return per.select("user", *(F.when(defined, F.coalesce(F.col(c), F.lit(0.0))).alias(name)
                                for c, name in (("l", a.name), ("d", "disparity"),
                                                ("r", "relevance"))))


def _mad_rating(of_users: bool) -> Callable[[_Inputs], DataFrame]:
    """user_mad_rating and item_mad_rating (Elliot's UserMADrating, ItemMADrating): per group
    the mean of the users' mean top-k score (or of the items' relevant score per slot), then the
    mean absolute difference between the groups' means on the driver."""

    def compute(a: _Inputs) -> DataFrame:
        scores = a.options.pop("scores_col", "score")
        rows = a.recs.select(F.col(a.user).alias("user"), F.col(a.rec).alias("l"),
                             F.col(scores).alias("x"), F.col(a.truth).alias("truth")).where(
            F.size(F.filter("truth", lambda i: i.isNotNull())) > 0).where(F.col("l").isNotNull())
        for row in rows.where(F.coalesce(F.size("x"), F.lit(-1)) != F.size("l")).limit(1) \
                .collect():
            raise ValueError(f"{a.name}: scores_col must hold one score per item of rec_col, "
                             f"user {row['user']} has {len(row['l'])} items and "
                             f"{len(row['x'] or [])} scores")
        scored = rows.select("user", "truth", F.explode(F.arrays_zip(
            F.slice("l", 1, a.k).alias("item"), F.slice("x", 1, a.k).alias("s"))).alias("p")) \
            .select("user", "truth", F.col("p.item").alias("item"), F.col("p.s").alias("s")) \
            .where(F.col("item").isNotNull())
        if of_users:
            groups = _user_groups(a)
            values = scored.groupBy("user").agg(F.avg("s").alias("v"))
            key = "user"
        else:
            groups = _item_groups(a)
            relevant = F.when(F.array_contains("truth", F.col("item")), F.col("s")).otherwise(0.0)
            values = scored.groupBy("item").agg((F.sum(relevant) / F.count("*")).alias("v"))
            key = "item"
        return _mad_between(a, groups, values, key)

    return compute


def _user_groups(a: _Inputs) -> DataFrame:
    groups = a.table("user_groups").select(
        F.col(a.user).alias("user"), F.col(a.options.pop("user_group_col", "group")).alias("grp")
    ).distinct()
    for row in groups.groupBy("user").count().where("count > 1").limit(1).collect():
        raise ValueError(f"{a.name}: user_groups holds user {row['user']} more than once")
    return groups.where(F.col("user").isNotNull() & F.col("grp").isNotNull())


def _mad_between(a: _Inputs, groups: DataFrame, values: DataFrame, key: str) -> DataFrame:
    """One row: the mean over pairs of groups of |mean_a - mean_b| of ``values`` (key, v)."""
    means = {r["grp"]: r["a"] for r in groups.join(values, key, "left").groupBy("grp")
             .agg(F.avg("v").alias("a")).collect()}
    ordered = [means[g] for g in sorted(means, key=str)]
    value = (None if len(ordered) < 2 or any(m is None for m in ordered) else float(
        np.mean([abs(x - y) for j, y in enumerate(ordered) for x in ordered[:j]])))
    return a.recs.sparkSession.createDataFrame([(value,)], f"{a.name} double")


def _mad_ranking(of_users: bool) -> Callable[[_Inputs], DataFrame]:
    """user_mad_ranking and item_mad_ranking: Elliot's discounted gains from a MAP truth."""

    def compute(a: _Inputs) -> DataFrame:
        threshold = float(a.options.pop("threshold", 1))

        def gain(grade: Column) -> Column:
            return F.when(grade >= threshold, F.pow(F.lit(2.0), grade - threshold + 1) - 1)

        rows = a.recs.select(F.col(a.user).alias("user"), F.slice(F.col(a.rec), 1, a.k)
                             .alias("top"), F.col(a.truth).alias("truth")).where(
            F.size(F.filter(F.map_values("truth"), lambda g: g >= threshold)) > 0)
        slots = rows.select("user", "truth", F.posexplode("top")).where(
            F.col("col").isNotNull()).select(
            "user", "pos", F.col("col").alias("item"),
            F.coalesce(gain(F.col("truth")[F.col("col")]), F.lit(0.0)).alias("g"))
        if not of_users:
            values = slots.groupBy("item").agg((F.sum("g") / F.count("*")).alias("v"))
            return _mad_between(a, _item_groups(a), values, "item")
        dcg = slots.groupBy("user").agg(F.sum(F.col("g") / F.log2(F.col("pos") + 2)).alias("d"))
        ideal = F.slice(F.array_sort(F.filter(F.transform(F.map_values("truth"), gain),
                                              lambda g: g.isNotNull()), lambda x, y: F.when(
            x > y, -1).when(x < y, 1).otherwise(0)), 1, a.k)
        idcg = F.aggregate(F.transform(ideal, lambda g, r: g / F.log2(r + 2)), F.lit(0.0),
                           lambda acc, x: acc + x)
        values = rows.select("user", idcg.alias("i")).join(dcg, "user", "left").select(
            "user", F.when(F.col("d") > 0, F.col("d") / F.col("i")).otherwise(0.0).alias("v"))
        return _mad_between(a, _user_groups(a), values, "user")

    return compute


def _one_row_per_item(a: _Inputs, option: str, table: DataFrame) -> DataFrame:
    """``table`` (with an ``item`` column), refusing an item given twice: the join would count
    it twice, a wrong number without a sign (the macros refuse it too)."""
    twice = table.where(F.col("item").isNotNull()).groupBy("item").count()
    for row in twice.where("count > 1").limit(1).collect():
        raise ValueError(f"{a.name}: {option} holds item {row['item']} more than once")
    return table


def _item_mean(a: _Inputs, stats: DataFrame, value: Column) -> DataFrame:
    """Per user: the mean of ``value`` over its top k, ``stats`` (item, ...) left-joined."""
    return a.per_user(a.top().join(stats, "item", "left").groupBy("user")
                      .agg(F.avg(value).alias(a.name)))


def _weight(a: _Inputs, default: str) -> Column:
    """The discount of rank ``pos`` (the records' ``discount`` and ``persistence`` options)."""
    discount = a.options.pop("discount", default)
    if discount not in DISCOUNTS:
        raise ValueError(f"{a.name}: discount must be 'none', 'log' or 'rbp', got {discount!r}")
    persistence = a.options.pop("persistence", DEFAULT_PERSISTENCE)
    if discount == "rbp":
        a.options["persistence"] = persistence
        persistence = a.number("persistence", DEFAULT_PERSISTENCE, 0, 1, closed=False)
        return F.pow(F.lit(persistence), F.col("pos") - 1)
    return F.lit(1.0) / F.log2(F.col("pos") + 1) if discount == "log" else F.lit(1.0)


def _weighted_mean(a: _Inputs, stats: DataFrame, value: Column, weight: Column) -> DataFrame:
    """Per user: sum of w(r) value over its top k / sum of w(r), ``stats`` (item, ...)
    left-joined."""
    rows = a.top().join(stats, "item", "left").withColumn("w", weight)
    return a.per_user(rows.groupBy("user").agg(
        (F.sum(F.col("w") * value) / F.sum("w")).alias(a.name)))


def _arp(a: _Inputs) -> DataFrame:
    normalize = a.options.pop("normalize", False)
    weight = _weight(a, "none")
    train = a.train_items().where(F.col("item").isNotNull())
    counts = train.groupBy("item").agg(F.count("*").cast("double").alias("n"))
    scale = float(train.count()) if normalize else 1.0
    return _weighted_mean(a, counts, F.coalesce(F.col("n"), F.lit(0.0)) / scale, weight)


def _self_information(a: _Inputs) -> DataFrame:
    normalize = a.options.pop("normalize", False)
    by_interactions = _choice(a, "popularity", ("users", "interactions")) == "interactions"
    weight = _weight(a, "none")
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
    return _weighted_mean(a, counts, value, weight)


def _expected_novelty(kind: str, graded: bool = False) -> Callable[[_Inputs], DataFrame]:
    """epc and efd: sum of w(r) rel(i) nov(i) / sum of w(r) per user with a relevant item, nov
    from the distinct training users of each item; rel binary (truth a LIST) or, ``graded``,
    Elliot's 2^(grade - threshold + 1) - 1 (truth a MAP item -> grade)."""

    def compute(a: _Inputs) -> DataFrame:
        threshold = float(a.options.pop("threshold", 1)) if graded else 0.0
        weight = _weight(a, "log")
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
                .withColumn("w", weight))
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


def _long_tail_share(a: _Inputs) -> DataFrame:
    share = a.number("head_share", 0.2, 0, 1)
    ratio = a.options.pop("tail_ratio", None)
    counts = (a.train_items().where(F.col("item").isNotNull()).groupBy("item")
              .agg(F.count("*").alias("n")))
    if ratio is not None:
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not ratio > 0:
            raise ValueError(f"{a.name}: tail_ratio must be a number above 0 (or None), got "
                             f"{ratio!r}")
        # RecBole's tail: a count threshold above 1, else the least popular share (ties by
        # item), at least one item.
        ranked = (counts.withColumn("r", F.row_number().over(Window.orderBy("n", "item")))
                  .withColumn("m", F.count("*").over(Window.partitionBy())))
        tail = ranked.where(F.col("n") <= ratio if ratio > 1 else
                            F.col("r") <= F.greatest(F.floor(F.col("m") * float(ratio)),
                                                     F.lit(1)))
        return _item_mean(a, tail.select("item", F.lit(1.0).alias("h")),
                          F.when(F.col("h").isNull(), 0.0).otherwise(1.0))
    head = (counts.withColumn("r", F.rank().over(Window.orderBy(F.desc("n"))))
            .withColumn("m", F.count("*").over(Window.partitionBy()))
            .where(F.col("r") - 1 < share * F.col("m")).select("item", F.lit(1.0).alias("h")))
    return _item_mean(a, head, F.when(F.col("h").isNull(), 1.0).otherwise(0.0))


def _ild_category(a: _Inputs) -> DataFrame:
    categories = _one_row_per_item(a, "categories", a.table("categories").select(
        F.col(a.item).alias("item"), F.col(a.options.pop("category_col", "category"))
        .alias("cat")))
    per = (a.top().join(categories, "item", "left").where(F.col("cat").isNotNull())
           .groupBy("user", "cat").agg(F.count("*").cast("double").alias("n")))
    m = F.sum("n")
    value = (m * m - F.sum(F.col("n") * F.col("n"))) / (m * (m - 1))
    return a.per_user(per.groupBy("user").agg(F.when(m > 1, value).alias(a.name)))


def _categorical_diversity(a: _Inputs) -> DataFrame:
    categories = _one_row_per_item(a, "categories", a.table("categories").select(
        F.col(a.item).alias("item"), F.col(a.options.pop("category_col", "category"))
        .alias("cat")))
    per = (a.top().join(categories, "item", "left").groupBy("user")
           .agg((F.countDistinct("cat") / F.lit(float(a.k))).alias(a.name)))
    return a.per_user(per)


def _rank_biased_entropy(a: _Inputs) -> DataFrame:
    """log2 T - (sum over the user's categories of v log2 v + (C - n) s log2 s) / T, v = e + s,
    T = sum e + s C: the entropy over all C categories of the table, written with the
    categories absent from the list together."""
    weight = _weight(a, "rbp")
    s = a.options.pop("smoothing", 0.0)
    if isinstance(s, bool) or not isinstance(s, int | float) or s < 0:
        raise ValueError(f"{a.name}: smoothing must be a number >= 0, got {s!r}")
    pairs = (a.table("categories").select(
        F.col(a.item).alias("item"), F.col(a.options.pop("category_col", "category"))
        .alias("cat")).where(F.col("item").isNotNull() & F.col("cat").isNotNull()).distinct())
    shares = pairs.withColumn("share", 1.0 / F.count("*").over(Window.partitionBy("item")))
    n_categories = float(pairs.select("cat").distinct().count())
    e = (a.top().withColumn("w", weight).join(shares, "item").groupBy("user", "cat")
         .agg(F.sum(F.col("w") * F.col("share")).alias("e")))
    total = F.sum("e") + s * n_categories
    absent = (n_categories - F.count("*")) * s * math.log2(s) if s > 0 else F.lit(0.0)
    value = F.log2(total) - (F.sum((F.col("e") + s) * F.log2(F.col("e") + s)) + absent) / total
    return a.per_user(e.groupBy("user").agg(value.alias(a.name)))


def _ild_embedding(a: _Inputs) -> DataFrame:
    """The record's computed form: 1 - (|sum u_i|^2 - m) / (m (m - 1)) over the unit vectors
    u_i of the user's items, the sum of each user's vectors taken element by element over its
    collected list (one shuffle by user, no row per dimension)."""
    vectors = _one_row_per_item(a, "embeddings", a.table("embeddings").select(
        F.col(a.item).alias("item"), F.col(a.options.pop("vector_col", "embedding"))
        .cast("array<double>").alias("v")))
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


def _inter_user_diversity(a: _Inputs) -> DataFrame:
    pairs = a.options.pop("pairs", 100_000)
    seed = a.options.pop("seed", 0)
    if isinstance(pairs, bool) or not isinstance(pairs, int | float) or pairs < 1 \
            or pairs != int(pairs):
        raise ValueError(f"{a.name}: pairs must be a positive integer, got {pairs!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not -2**63 <= seed < 2**63:
        raise ValueError(f"{a.name}: seed must be an integer of 64 bits, got {seed!r}")
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


def _serendipity(a: _Inputs) -> DataFrame:
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


def _propensities(a: _Inputs, gamma: float) -> DataFrame:
    """(item, p): the table given, checked, or Yang et al.'s estimate from train."""
    given, train = a.options.pop("propensities", None), a.options.pop("train", None)
    if (given is None) == (train is None):
        raise ValueError(f"{a.name}: give propensities (a table of item and propensity) or "
                         "train (a table of training interactions), exactly one")
    if given is not None:
        table = given.select(F.col(a.item).alias("item"),
                             F.col(a.options.pop("propensity_col", "propensity"))
                             .cast("double").alias("p")).where(F.col("item").isNotNull())
        bad = table.where(F.col("p").isNull() | (F.col("p") <= 0) | (F.col("p") > 1)).limit(1)
        for row in bad.collect():
            raise ValueError(f"{a.name}: the propensity of item {row['item']} must be in "
                             f"(0, 1], got {row['p']}")
        return _one_row_per_item(a, "propensities", table)
    counts = (train.select(F.col(a.item).alias("item")).where(F.col("item").isNotNull())
              .groupBy("item").agg(F.count("*").cast("double").alias("n")))
    return counts.select("item", F.pow(F.col("n") / F.max("n").over(Window.partitionBy()),
                                       (gamma + 1) / 2).alias("p"))


def _ips(metric: str) -> Callable[[_Inputs], DataFrame]:
    def compute(a: _Inputs) -> DataFrame:
        # The macros' option model (debiased.OPTIONS), so both engines say the same.
        values = {o.name: a.options.pop(o.name, o.default) for o in debiased.OPTIONS}
        check_options(a.name, debiased.OPTIONS, values)
        gamma, estimator = float(values["gamma"]), values["estimator"]
        clip = float(values["min_propensity"])
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


def _pair(a: _Inputs) -> DataFrame:
    """overlap_at, jaccard_at, rbo: the record's kernel on each joined pair of lists."""
    other = a.table("other")
    kernel = {"overlap_at": overlap_kernel, "jaccard_at": jaccard_kernel}.get(a.name)
    if kernel is None:
        p = a.number("p", 0.9, 0, 1, closed=False)
        variant = a.options.pop("variant", "min")
        if variant not in ("min", "ext", "prefix"):
            raise ValueError(f"rbo: variant must be 'min', 'ext' or 'prefix', got {variant!r}")

        def kernel(rec: Any, oth: Any, k: int) -> float | None:
            return rbo_kernel(rec, oth, k, p, variant)

    k = a.k
    udf = F.udf(lambda rec, oth: kernel(rec, oth, k), DoubleType())
    joined = a.recs.select(F.col(a.user).alias("user"), F.col(a.rec).alias("a")).join(
        other.select(F.col(a.user).alias("user"), F.col(a.rec).alias("b")), "user")
    return joined.select("user", udf("a", "b").alias(a.name))


METRICS: dict[str, Callable[[_Inputs], DataFrame]] = {
    "catalog_coverage": _catalog_coverage,
    "exposure_entropy": _exposure_entropy,
    "exposure_gini": _exposure_gini,
    "user_coverage": _user_coverage,
    "sufficient_reco": _sufficient_reco,
    "unrepeated_reco": _unrepeated_reco,
    "arp": _arp,
    "epc": _expected_novelty("epc"),
    "efd": _expected_novelty("efd"),
    "extended_epc": _expected_novelty("epc", graded=True),
    "extended_efd": _expected_novelty("efd", graded=True),
    "self_information": _self_information,
    "long_tail_share": _long_tail_share,
    "ild_embedding": _ild_embedding,
    "ild_category": _ild_category,
    "categorical_diversity": _categorical_diversity,
    "rank_biased_entropy": _rank_biased_entropy,
    "inter_user_diversity": _inter_user_diversity,
    "serendipity": _serendipity,
    "aclt": _tail(per_position=False),
    "aplt": _tail(per_position=True),
    "pop_reo": _parity("reo", popularity=True),
    "pop_rsp": _parity("rsp", popularity=True),
    "reo": _parity("reo", popularity=False),
    "rsp": _parity("rsp", popularity=False),
    "bias_disparity": _bias_disparity,
    "expected_exposure": _expected_exposure,
    "group_expected_exposure": _group_expected_exposure,
    "user_mad_rating": _mad_rating(of_users=True),
    "item_mad_rating": _mad_rating(of_users=False),
    "user_mad_ranking": _mad_ranking(of_users=True),
    "item_mad_ranking": _mad_ranking(of_users=False),
    "overlap_at": _pair,
    "jaccard_at": _pair,
    "rbo": _pair,
    "ips_recall": _ips("recall"),
    "ips_precision": _ips("precision"),
    "ips_ndcg": _ips("ndcg"),
}


def beyond_accuracy(recs: DataFrame, metric: str, k: int, **options: Any) -> DataFrame:
    """The beyond-accuracy ``metric`` of ``recs`` at cut-off ``k`` as a Spark DataFrame shaped
    like the DuckDB macro's result. ``options`` are the macro's (``normalize=True``,
    ``head_share=0.1``, ``gamma=1``, ``estimator='ips'``, ``p=0.8``, ...), the side tables as
    DataFrames (``train=``, ``categories=``, ``embeddings=``, ``propensities=``, ``other=``,
    ``test=``, ``item_groups=``, ``user_groups=``),
    ``catalog_size=``, ``vector_col=``, ``pairs=``, ``seed=``,
    and the column names (``user_col``, ``rec_col``, ``truth_col``, ``item_col``)."""
    if metric not in METRICS:
        raise ValueError(f"unknown beyond-accuracy metric on Spark {metric!r}; known: "
                         f"{', '.join(METRICS)}")
    inputs = _Inputs(metric, recs, k, dict(options))
    return inputs.done(METRICS[metric](inputs))
