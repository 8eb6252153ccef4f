"""Popularity bias and item-group fairness on Spark (``aclt``, ``aplt``, ``pop_reo``,
``pop_rsp``, ``reo``, ``rsp``, ``bias_disparity``, the MAD of ratings and rankings) and
expected exposure (``expected_exposure``, ``group_expected_exposure``), as
``duckrank.metrics.beyond.fairness`` and ``duckrank.metrics.beyond.exposure`` define them: the
per-group sums as DataFrame joins, the few groups' ratios on the driver."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from duckrank.engines.spark_beyond.inputs import Inputs, item_groups
from duckrank.metrics.beyond.fairness import DEFAULT_SHARE


def _popularity_groups(a: Inputs, train: DataFrame) -> DataFrame:
    """(item, grp): 'head' or 'tail' for every item of train (the fairness records' ``head``
    and ``head_share``: Elliot's 'interactions' or the 'items' rule of long_tail_share)."""
    head = a.value("head")
    share = a.value("head_share")
    share = DEFAULT_SHARE[head] if share is None else share
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


def _tail(per_position: bool) -> Callable[[Inputs], DataFrame]:
    def compute(a: Inputs) -> DataFrame:
        groups = _popularity_groups(a, a.train_items())
        tail = F.countDistinct(F.when(F.col("grp") == "tail", F.col("item")))
        value = tail / F.count("item") if per_position else tail
        rows = a.top().join(groups, "item", "left").groupBy("user")
        return a.per_user(rows.agg(value.cast("double").alias(a.name)))

    return compute



def _parity(kind: str, popularity: bool) -> Callable[[Inputs], DataFrame]:
    """reo, rsp (over item_groups) and pop_reo, pop_rsp (over the head and the tail): the
    groups' P_g = num_g / den_g summed over the users (DataFrame joins), then std / mean of the
    few P_g on the driver."""

    def compute(a: Inputs) -> DataFrame:
        train = a.train_items().where(F.col("item").isNotNull()).distinct()
        groups = _popularity_groups(a, train) if popularity else item_groups(a)
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


def _bias_disparity(a: Inputs) -> DataFrame:
    """Per (user group, item group): bs, br and bd, as the macro (Elliot's BiasDisparity)."""
    train = a.train_items().where(F.col("item").isNotNull()).distinct()
    items = item_groups(a)
    users = a.table("user_groups").select(
        F.col(a.user).alias("u"), F.col(a.column("user_group_col")).alias("ugrp")
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


def _sampled_exposure(a: Inputs) -> tuple[DataFrame, DataFrame, Column]:
    """Diaz et al. (2020), the user's rows as sampled rankings: users (user, samples, truth:
    its distinct relevant items), exposure (user, item, x: the sum over the samples of
    persistence^(rank - 1); x / samples is the expected exposure) and the target e* of each
    relevant item (a column over users)."""
    p = float(a.value("persistence"))
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


def _expected_exposure(a: Inputs) -> DataFrame:
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


def _group_expected_exposure(a: Inputs) -> DataFrame:
    """EE-L, EE-D and EE-R per user over the item groups: a group's exposure and target are
    the sums of its items'."""
    users, exposure, target = _sampled_exposure(a)
    groups = item_groups(a)
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


def _mad_rating(of_users: bool) -> Callable[[Inputs], DataFrame]:
    """user_mad_rating and item_mad_rating (Elliot's UserMADrating, ItemMADrating): per group
    the mean of the users' mean top-k score (or of the items' relevant score per slot), then the
    mean absolute difference between the groups' means on the driver."""

    def compute(a: Inputs) -> DataFrame:
        scores = a.column("scores_col")
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
            groups = item_groups(a)
            relevant = F.when(F.array_contains("truth", F.col("item")), F.col("s")).otherwise(0.0)
            values = scored.groupBy("item").agg((F.sum(relevant) / F.count("*")).alias("v"))
            key = "item"
        return _mad_between(a, groups, values, key)

    return compute


def _user_groups(a: Inputs) -> DataFrame:
    groups = a.table("user_groups").select(
        F.col(a.user).alias("user"), F.col(a.column("user_group_col")).alias("grp")
    ).distinct()
    for row in groups.groupBy("user").count().where("count > 1").limit(1).collect():
        raise ValueError(f"{a.name}: user_groups holds user {row['user']} more than once")
    return groups.where(F.col("user").isNotNull() & F.col("grp").isNotNull())


def _mad_between(a: Inputs, groups: DataFrame, values: DataFrame, key: str) -> DataFrame:
    """One row: the mean over pairs of groups of |mean_a - mean_b| of ``values`` (key, v)."""
    means = {r["grp"]: r["a"] for r in groups.join(values, key, "left").groupBy("grp")
             .agg(F.avg("v").alias("a")).collect()}
    ordered = [means[g] for g in sorted(means, key=str)]
    value = (None if len(ordered) < 2 or any(m is None for m in ordered) else float(
        np.mean([abs(x - y) for j, y in enumerate(ordered) for x in ordered[:j]])))
    return a.recs.sparkSession.createDataFrame([(value,)], f"{a.name} double")


def _mad_ranking(of_users: bool) -> Callable[[Inputs], DataFrame]:
    """user_mad_ranking and item_mad_ranking: Elliot's discounted gains from a MAP truth."""

    def compute(a: Inputs) -> DataFrame:
        threshold = float(a.value("threshold"))

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
            return _mad_between(a, item_groups(a), values, "item")
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


METRICS: dict[str, Callable[[Inputs], DataFrame]] = {
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
}
