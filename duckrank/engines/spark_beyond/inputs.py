"""What the Spark forms of the beyond-accuracy metrics share: the arguments of one call
(``Inputs``: the column names, the side tables, each option read and checked with its record's
option) and the steps several families take (each user's top k, the exposure of an item, a rank
discount, a per-user mean, a side table with one row per item)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from duckrank.metrics.beyond.common import _K
from duckrank.render.beyond_accuracy import by_name


class Inputs:
    """The arguments of one call, with the column names and checks every metric shares."""

    def __init__(self, name: str, recs: DataFrame, k: object, options: dict[str, Any]) -> None:
        _K.option.check(name, k)
        self.name, self.recs, self.k = name, recs, int(k)
        self.record = by_name(name)
        self.options = options
        self.user = options.pop("user_col", "user")
        self.rec = options.pop("rec_col", "rec")
        self.truth = options.pop("truth_col", "truth")
        self.item = options.pop("item_col", "item")

    def value(self, option: str) -> Any:
        """The value given for ``option`` (else its default), checked against its domain: the
        record's option, which the macro checks too, with the same words."""
        model = self.record.option(option)
        value = self.options.pop(option, model.default)
        model.check(self.name, value)
        return value

    def table(self, option: str) -> DataFrame:
        table = self.options.pop(option, None)
        if table is None:
            raise ValueError(f"{self.name}: give {option} (a DataFrame)")
        return table

    def column(self, option: str) -> str:
        """The name a column option gives (its record's default when not given)."""
        return self.options.pop(option, self.record.option(option).default)

    def catalog_size(self) -> int:
        size = self.value("catalog_size")
        if size is None:
            raise ValueError(f"{self.name}: give catalog_size, a positive integer (a catalog "
                             "table is not supported on Spark)")
        return int(size)

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


def weight(a: Inputs) -> Column:
    """The discount of rank ``pos`` (the records' ``discount`` and ``persistence`` options;
    persistence is read and checked only by the 'rbp' discount, as in the macros)."""
    discount = a.value("discount")
    if discount == "rbp":
        return F.pow(F.lit(float(a.value("persistence"))), F.col("pos") - 1)
    a.options.pop("persistence", None)
    return F.lit(1.0) / F.log2(F.col("pos") + 1) if discount == "log" else F.lit(1.0)


def exposure(a: Inputs, weighted: bool = True) -> DataFrame:
    """(item, n): the sum of the discounts of the top-k positions holding the item (their
    count without a discount, or when not ``weighted``: a metric without the option)."""
    w = weight(a) if weighted else F.lit(1.0)
    return a.top().withColumn("w", w).groupBy("item").agg(F.sum("w").alias("n"))


def one_row_per_item(a: Inputs, option: str, table: DataFrame) -> DataFrame:
    """``table`` (with an ``item`` column), refusing an item given twice: the join would count
    it twice, a wrong number without a sign (the macros refuse it too)."""
    twice = table.where(F.col("item").isNotNull()).groupBy("item").count()
    for row in twice.where("count > 1").limit(1).collect():
        raise ValueError(f"{a.name}: {option} holds item {row['item']} more than once")
    return table


def item_groups(a: Inputs) -> DataFrame:
    table = a.table("item_groups").select(
        F.col(a.item).alias("item"), F.col(a.column("group_col")).alias("grp"))
    return one_row_per_item(a, "item_groups", table).where(
        F.col("item").isNotNull() & F.col("grp").isNotNull())


def item_mean(a: Inputs, stats: DataFrame, value: Column) -> DataFrame:
    """Per user: the mean of ``value`` over its top k, ``stats`` (item, ...) left-joined."""
    return a.per_user(a.top().join(stats, "item", "left").groupBy("user")
                      .agg(F.avg(value).alias(a.name)))


def weighted_mean(a: Inputs, stats: DataFrame, value: Column, w: Column) -> DataFrame:
    """Per user: sum of w(r) value over its top k / sum of w(r), ``stats`` (item, ...)
    left-joined."""
    rows = a.top().join(stats, "item", "left").withColumn("w", w)
    return a.per_user(rows.groupBy("user").agg(
        (F.sum(F.col("w") * value) / F.sum("w")).alias(a.name)))
