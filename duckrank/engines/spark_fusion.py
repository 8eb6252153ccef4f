"""Rank fusion on Spark (issue 29; docs/fusion.md): the methods that need no training, as Spark
SQL expressions rendered from the same records as the DuckDB macros (``duckrank.fusion``): each
normalisation's ``sql`` and each method's ``value``, ``absent`` and ``combine``, over the same
columns (the list statistics and positions as window functions, the per-system weights joined
from a small table).

    fused = fuse(frame, "rrf", params={"k": 60})   # frame: system, query, item, score

Same definitions as the macros: the same list order (score descending, ties by item text
descending), equal fused scores ranked by item text descending, sums over systems added in the
order of the systems' names (an ordered array fold, so the result does not depend on Spark's
partitioning), NULL or non-finite scores and NULL ids refused. Not on Spark (an error says so):
the Borda normalisation and Condorcet (both build every candidate of every system), and the
supervised methods (train and fuse in DuckDB).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from duckrank.fusion import FusionMethod, method, normalisation


def _item_text():
    """The item as text (a Column needs a running Spark, so it is made when used)."""
    return F.col("item").cast("string")


# A sum over the systems of a (query, item) in the order of the systems' names.
_ORDERED_SUM = (r"aggregate(transform(array_sort(collect_list(struct(system, \1 AS v))), "
                r"x -> x.v), CAST(0 AS DOUBLE), (acc, x) -> acc + x)")


def spark_combine(fusion: FusionMethod) -> str:
    """The method's ``combine`` as Spark SQL: ``sum(x)`` an ordered fold, ``ln`` Spark's ``ln``
    (the same name), ``count(*)`` as is."""
    return re.sub(r"\bsum\(([^()]*)\)", _ORDERED_SUM, fusion.combine)


def _check_method(fusion: FusionMethod, norm_name: str) -> None:
    if fusion.supervised:
        raise ValueError(f"spark fuse: {fusion.name} is supervised: train and fuse it in DuckDB "
                         "(duckrank.reports.fusion.training.train_fusion, duckrank.fuse)")
    if fusion.form == "pairwise":
        raise ValueError(f"spark fuse: {fusion.name} is not available on Spark (fuse it in "
                         "DuckDB: duckrank.fuse)")
    if norm_name == "borda":
        raise ValueError("spark fuse: the borda normalisation is not available on Spark (fuse "
                         "in DuckDB: duckrank.fuse)")


def _checked_rows(frame: DataFrame) -> DataFrame:
    rows = frame.select(F.col("system").cast("string").alias("system"), "query", "item",
                        F.col("score").cast("double").alias("score"))
    bad = rows.filter(F.col("system").isNull() | F.col("query").isNull() | F.col("item").isNull()
                      | F.col("score").isNull() | F.isnan("score")
                      | (F.abs("score") == float("inf"))).limit(1).collect()
    if bad:
        row = bad[0]
        raise ValueError(f"spark fuse: runs has a NULL system, query or item, or a score that is "
                         f"not a finite number (system {row.system}, query {row.query}, item "
                         f"{row.item}, score {row.score})")
    duplicate = rows.groupBy("system", "query", "item").count().filter("count > 1").limit(1)
    twice = duplicate.collect()
    if twice:
        row = twice[0]
        raise ValueError(f"spark fuse: runs lists item {row.item} more than once for system "
                         f"{row.system}, query {row.query}")
    return rows


def _parameters(fusion: FusionMethod, params: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(params) - {p.name for p in fusion.parameters})
    if unknown:
        raise ValueError(f"spark fuse: {fusion.name} has no parameter {unknown[0]!r}")
    values = {}
    for parameter in fusion.parameters:
        if parameter.name not in params and parameter.default is None:
            raise ValueError(f"spark fuse: {fusion.name} needs params={{{parameter.name!r}: ...}}")
        value = params.get(parameter.name, None)
        if value is None:
            value = float(parameter.default)
        if not parameter.per_system and not parameter.accepts(value):
            raise ValueError(f"spark fuse: {fusion.name}'s {parameter.name} must be "
                             f"{parameter.domain()}, got {value!r}")
        values[parameter.name] = value
    return values


def _with_weights(rows: DataFrame, weights: Mapping[str, float]) -> DataFrame:
    spark = rows.sparkSession
    systems = {r.system for r in rows.select("system").distinct().collect()}
    missing = sorted(systems - set(weights))
    extra = sorted(set(weights) - systems)
    if missing or extra:
        raise ValueError(f"spark fuse: weights must have one entry for every system of runs "
                         f"(missing: {missing}, unknown: {extra})")
    table = spark.createDataFrame([(str(s), float(w)) for s, w in weights.items()],
                                  "system string, weight double")
    return rows.join(F.broadcast(table), "system")


def fuse(frame: DataFrame, method_name: str, norm: str | None = "min-max",
         params: Mapping[str, Any] | None = None) -> DataFrame:
    """Fuse the systems of ``frame`` (columns system, query, item, score) with an unsupervised
    method of ranx 0.3.21 (``duckrank.fusion``'s records): a DataFrame of query, item, score and
    rank (1 = best), as the DuckDB macro ``fuse_<method>`` returns."""
    fusion = method(method_name)
    norm_record = normalisation(norm)
    _check_method(fusion, norm_record.name)
    values = _parameters(fusion, dict(params or {}))
    rows = _checked_rows(frame)
    if fusion.weighted:
        weights = values.pop("weights")
        if not isinstance(weights, Mapping):
            raise ValueError("spark fuse: weights must be a mapping system -> weight")
        rows = _with_weights(rows, weights)
    for name, value in values.items():
        rows = rows.withColumn(name, F.lit(float(value)))
    per_list = Window.partitionBy("system", "query")
    in_order = per_list.orderBy(F.col("score").desc(), _item_text().desc())
    lists = (rows
             .withColumn("s_min", F.min("score").over(per_list))
             .withColumn("s_max", F.max("score").over(per_list))
             .withColumn("s_sum", F.sum("score").over(per_list))
             .withColumn("s_mean", F.avg("score").over(per_list))
             .withColumn("s_sd", F.stddev_pop("score").over(per_list))
             .withColumn("s_count", F.count(F.lit(1)).over(per_list))
             .withColumn("position", F.row_number().over(in_order))
             .withColumn("value", F.expr(norm_record.sql)))
    if norm_record.reorders:
        lists = lists.withColumn("position", F.row_number().over(per_list.orderBy(
            F.col("value").desc(), F.col("score").desc(), _item_text().desc())))
    if "candidates" in fusion.value or "candidates" in (fusion.absent or ""):
        candidates = rows.groupBy("query").agg(F.countDistinct("item").alias("candidates"))
        lists = lists.join(candidates, "query")
    combine = spark_combine(fusion)
    for name, value in values.items():  # a number parameter of the aggregate (gamma, sigma)
        combine = re.sub(rf"\b{name}\b", f"CAST({float(value)!r} AS DOUBLE)", combine)
    if fusion.absent is not None:
        lists = lists.withColumn("value", F.expr(f"({fusion.value}) - ({fusion.absent})"))
        fused = lists.groupBy("query", "item").agg(F.expr(combine).alias("score"))
        fused = fused.join(_absent_totals(rows, fusion, candidates), "query").select(
            "query", "item", (F.col("score") + F.col("absent_total")).alias("score"))
    else:
        lists = lists.withColumn("value", F.expr(fusion.value))
        fused = lists.groupBy("query", "item").agg(F.expr(combine).alias("score"))
    ranked = Window.partitionBy("query").orderBy(F.col("score").desc(), _item_text().desc())
    return fused.withColumn("rank", F.row_number().over(ranked))


def _absent_totals(rows: DataFrame, fusion: FusionMethod, candidates: DataFrame) -> DataFrame:
    """Per query, what every system gives a candidate it did not return, summed over the
    systems in their names' order (a system without a list for the query: n = 0)."""
    sizes = rows.groupBy("system", "query").agg(F.count(F.lit(1)).alias("s_count"))
    systems = rows.select("system", *(["weight"] if fusion.weighted else [])).distinct()
    every = (systems.crossJoin(candidates)
             .join(sizes, ["system", "query"], "left")
             .withColumn("s_count", F.coalesce("s_count", F.lit(0)))
             .withColumn("absent", F.expr(fusion.absent)))
    return every.groupBy("query").agg(
        F.expr(re.sub(r"\bsum\(([^()]*)\)", _ORDERED_SUM, "sum(absent)")).alias("absent_total"))
