"""Rank fusion on Spark (issue 29; docs/fusion.md): every method and normalisation of the DuckDB
macros, as Spark SQL expressions rendered from the same records (``duckrank.fusion``): each
normalisation's ``sql`` and each method's ``value``, ``absent`` and ``combine``, over the same
columns (the list statistics and positions as window functions, the per-system weights or
learnt values joined from a small table), put into Spark's dialect by ``spark_sql``.

    fused = fuse(frame, "rrf", params={"k": 60})   # frame: system, query, item, score

Same definitions as the macros: the same list order (score descending, ties by item text
descending), equal fused scores ranked by item text descending, sums over systems added in the
order of the systems' names (an ordered array fold, so the result does not depend on Spark's
partitioning), NULL or non-finite scores and NULL ids refused. The Borda normalisation adds the
candidates each system did not return, as the macros do; Condorcet counts the pairwise votes by
joins. The supervised methods take what ``duckrank.reports.fusion.training.train_fusion``
learnt in DuckDB (training reads qrels; fusing is the part that scales with the runs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from duckrank.fusion import FusionMethod, Normalisation, Parameter, method, normalisation
from duckrank.render.fusion import _reads_the_list as reads_the_list


def _item_text():
    """The item as text (a Column needs a running Spark, so it is made when used)."""
    return F.col("item").cast("string")


# A sum over the systems of a (query, item) in the order of the systems' names.
_ORDERED_SUM = (r"aggregate(transform(array_sort(collect_list(struct(system, \1 AS v))), "
                r"x -> x.v), CAST(0 AS DOUBLE), (acc, x) -> acc + x)")


def _closing(text: str, start: int) -> int:
    """The index of the bracket closing the one at ``start``."""
    pairs, depth = {"(": ")", "[": "]"}, []
    for i in range(start, len(text)):
        if text[i] in pairs:
            depth.append(pairs[text[i]])
        elif depth and text[i] == depth[-1]:
            depth.pop()
            if not depth:
                return i
    raise ValueError(f"unbalanced brackets in {text!r}")


def _top_level_colon(text: str) -> int:
    """The index of a slice's ``:`` outside nested brackets, or -1."""
    depth = 0
    for i, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == ":" and depth == 0:
            return i
    return -1


def _brackets(text: str) -> str:
    """DuckDB's list syntax as Spark's: ``x[i]`` -> ``try_element_at(x, i)`` (NULL past the end,
    as DuckDB gives), ``x[a:b]`` -> ``slice(x, a, b - a + 1)`` (both 1-based, inclusive; Spark
    takes INT indices, positions and counts are BIGINT), a
    literal ``[1, 2]`` -> ``array(1, 2)``, ``list_sum(l)`` -> a left-to-right fold (NULL for an
    empty list, as DuckDB's)."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("list_sum(", i):
            end = _closing(text, i + len("list_sum"))
            inner = _brackets(text[i + len("list_sum("):end])
            out.append(f"aggregate({inner}, CAST(NULL AS DOUBLE), "
                       "(acc, x) -> coalesce(acc, 0) + x)")
            i = end + 1
        elif text[i] == "[":
            end = _closing(text, i)
            inner = _brackets(text[i + 1:end])
            name = re.search(r"(\w+)\s*$", "".join(out))
            if name is None:  # a literal list
                out.append(f"array({inner})")
            else:
                head = "".join(out)[:name.start()]
                colon = _top_level_colon(inner)
                if colon < 0:
                    out = [head, f"try_element_at({name.group(1)}, CAST({inner} AS INT))"]
                else:
                    a, b = inner[:colon], inner[colon + 1:]
                    out = [head, f"slice({name.group(1)}, CAST({a} AS INT), "
                                  f"CAST(({b}) - ({a}) + 1 AS INT))"]
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def spark_sql(sql: str) -> str:
    """A record's DuckDB SQL expression in Spark SQL: list indexing, slicing, literals and sums
    (``_brackets``), lambdas (``lambda e: ...`` -> ``e -> ...``), ``list_filter`` -> ``filter``,
    ``len`` -> ``size``, ``isfinite(x)`` -> ``1.79...E308 >= abs(x)``, ``//`` -> ``div``, and
    decimal literals made DOUBLE (Spark reads
    ``0.001`` as a DECIMAL, whose division rounds to a few digits; DuckDB's is a DOUBLE)."""
    sql = re.sub(r"\blambda (\w+):", r"\1 ->", sql)
    sql = re.sub(r"\blist_filter\(", "filter(", sql)
    sql = re.sub(r"\blen\(", "size(", sql)
    # isfinite(x): Spark has no such function; NaN and the infinities fail the comparison.
    sql = re.sub(r"\bisfinite\(", "1.7976931348623157E308 >= abs(", sql)
    sql = sql.replace("//", " div ")
    sql = re.sub(r"(?<![\w.])(\d+\.\d+)(?![\w.])", r"\1D", sql)
    return _brackets(sql)


def _ordered(sql: str) -> str:
    """``sql`` with each ``sum(x)`` an ordered fold over the systems."""
    return re.sub(r"\bsum\(([^()]*)\)", _ORDERED_SUM, sql)


def spark_combine(fusion: FusionMethod) -> str:
    """The method's ``combine`` as Spark SQL: ``sum(x)`` an ordered fold, ``ln`` Spark's ``ln``
    (the same name), ``count(*)`` as is."""
    return _ordered(spark_sql(fusion.combine))


def _checked_rows(frame: DataFrame) -> DataFrame:
    """The rows, once checked, partitioned by query: a NULL id, a score that is not a finite
    number, an item listed twice by one system for one query are errors (one Spark job finds
    the first of them)."""
    rows = frame.select(F.col("system").cast("string").alias("system"), "query", "item",
                        F.col("score").cast("double").alias("score"))
    bad = (F.col("system").isNull() | F.col("query").isNull() | F.col("item").isNull()
           | F.col("score").isNull() | F.isnan("score") | (F.abs("score") == float("inf")))
    found = (rows.groupBy("system", "query", "item")
             .agg(F.count(F.lit(1)).alias("n"), F.max(F.when(bad, 1).otherwise(0)).alias("bad"),
                  F.first(F.when(bad, F.col("score")), ignorenulls=True).alias("score"))
             .filter("bad = 1 OR n > 1").limit(1).collect())
    if found and found[0].bad:
        row = found[0]
        raise ValueError(f"spark fuse: runs has a NULL system, query or item, or a score that is "
                         f"not a finite number (system {row.system}, query {row.query}, item "
                         f"{row.item}, score {row.score})")
    if found:
        row = found[0]
        raise ValueError(f"spark fuse: runs lists item {row.item} more than once for system "
                         f"{row.system}, query {row.query}")
    # Partitioned by query once: each list's window (system, query), the aggregate per (query,
    # item) and the final rank per query then need no shuffle of their own (three before; 10,000
    # queries x 3 runs x 100 items: 0.72x the wall time, paired).
    return rows.repartition("query")


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


def _column(fusion: FusionMethod, parameter: Parameter) -> str:
    """The column the records read a per-system parameter as (``record.COLUMNS``)."""
    return "trained" if parameter.name == fusion.trained else "weight"


def _finite(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and (
        abs(float(value)) != float("inf") and value == value)


def _entry(fusion: FusionMethod, parameter: Parameter, system: str, value: Any) -> Any:
    """One system's value of a per-system parameter, checked: a finite number, or a list of
    them."""
    if parameter.kind == "per_position":
        values = value.tolist() if hasattr(value, "tolist") else value
        if isinstance(values, list | tuple) and all(_finite(v) for v in values):
            return [float(v) for v in values]
    elif _finite(value):
        return float(value)
    raise ValueError(f"spark fuse: {fusion.name}'s {parameter.name} must be "
                     f"{parameter.domain()}, got {value!r} for system {system!r}")


def _per_system_table(rows: DataFrame, fusion: FusionMethod, parameter: Parameter,
                      given: Any) -> DataFrame:
    """(system, weight or trained): one row per system, every system of runs named."""
    if not isinstance(given, Mapping):
        raise ValueError(f"spark fuse: {parameter.name} must be a mapping system -> value")
    systems = {r.system for r in rows.select("system").distinct().collect()}
    missing, extra = sorted(systems - set(map(str, given))), sorted(set(map(str, given)) - systems)
    if missing or extra:
        raise ValueError(f"spark fuse: {parameter.name} must have one entry for every system of "
                         f"runs (missing: {missing}, unknown: {extra})")
    kind = "array<double>" if parameter.kind == "per_position" else "double"
    return rows.sparkSession.createDataFrame(
        [(str(s), _entry(fusion, parameter, str(s), v)) for s, v in given.items()],
        f"system string, {_column(fusion, parameter)} {kind}")


def _candidates(rows: DataFrame) -> DataFrame:
    return rows.groupBy("query").agg(F.countDistinct("item").alias("candidates"))


def _with_absent_candidates(lists: DataFrame, rows: DataFrame) -> DataFrame:
    """The Borda normalisation's input: each system's list, plus every candidate of the query it
    did not return (score and position NULL, ``s_count`` its list's length, 0 without a list),
    each row with the query's number of candidates."""
    sizes = rows.groupBy("system", "query").agg(F.count(F.lit(1)).alias("s_count"))
    absent = (rows.select("system").distinct()
              .crossJoin(rows.select("query", "item").distinct())
              .join(rows.select("system", "query", "item"), ["system", "query", "item"],
                    "left_anti")
              .join(sizes, ["system", "query"], "left")
              .select("system", "query", "item", F.lit(None).cast("double").alias("score"),
                      F.coalesce("s_count", F.lit(0)).alias("s_count"),
                      F.lit(None).cast("int").alias("position")))
    present = lists.select("system", "query", "item", "score", "s_count", "position")
    return present.unionByName(absent).join(_candidates(rows), "query")


def _lists(rows: DataFrame, norm: Normalisation) -> DataFrame:
    """Each system's normalised list: the statistics, ``position`` and ``value`` (the
    ``COLUMNS`` of ``duckrank.fusion.record``), positions taken again after a normalisation that
    reorders."""
    per_list = Window.partitionBy("system", "query")
    lists = (rows
             .withColumn("s_min", F.min("score").over(per_list))
             .withColumn("s_max", F.max("score").over(per_list))
             .withColumn("s_sum", F.sum("score").over(per_list))
             .withColumn("s_mean", F.avg("score").over(per_list))
             .withColumn("s_sd", F.stddev_pop("score").over(per_list))
             .withColumn("s_count", F.count(F.lit(1)).over(per_list))
             .withColumn("position", F.row_number().over(
                 per_list.orderBy(F.col("score").desc(), _item_text().desc()))))
    if norm.adds_candidates:
        lists = _with_absent_candidates(lists, rows)
    value = spark_sql(norm.sql)
    if norm.defined:
        # As the macros: a list whose statistics overflow is an error, not NaN or a silent 0.
        message = (f"fuse: the scores of a list of query ' || query || ' overflow the "
                   f"{norm.name} normalisation (a sum or a spread of them is not finite): "
                   "scale them down")
        value = (f"CASE WHEN NOT ({spark_sql(norm.defined)}) THEN raise_error('{message}') "
                 f"ELSE {value} END")
    lists = lists.withColumn("value", F.expr(value))
    if norm.reorders:
        lists = lists.withColumn("position", F.row_number().over(per_list.orderBy(
            F.col("value").desc(), F.col("score").desc_nulls_last(), _item_text().desc())))
    if norm.adds_candidates:  # every system now lists every candidate
        lists = lists.withColumn("s_count", F.count(F.lit(1)).over(per_list))
    return lists


def fuse(frame: DataFrame, method_name: str, norm: str | None = "min-max",
         params: Mapping[str, Any] | None = None) -> DataFrame:
    """Fuse the systems of ``frame`` (columns system, query, item, score) with a method of ranx
    0.3.21 (``duckrank.fusion``'s records; a supervised one with the parameters
    ``train_fusion`` learnt): a DataFrame of query, item, score and rank (1 = best), as the
    DuckDB macro ``fuse_<method>`` returns."""
    fusion = method(method_name)
    norm_record = normalisation(norm)
    values = _parameters(fusion, dict(params or {}))
    rows = _checked_rows(frame)
    lists = _lists(rows, norm_record)
    for parameter in fusion.parameters:
        if parameter.per_system:  # a column of every row of the system, as the macros read it
            table = _per_system_table(rows, fusion, parameter, values.pop(parameter.name))
            lists = lists.join(F.broadcast(table), "system")
        else:  # Spark indexes arrays by INT: a whole-number parameter (w) stays one
            value = values[parameter.name]
            lists = lists.withColumn(parameter.name, F.lit(
                int(value) if parameter.kind == "integer" else float(value)))
    if fusion.form == "pairwise":
        fused = _pairwise(lists, fusion)
    else:
        fused = _combined(lists, rows, fusion, values)
    ranked = Window.partitionBy("query").orderBy(F.col("score").desc(), _item_text().desc())
    return fused.withColumn("rank", F.row_number().over(ranked))


def _combined(lists: DataFrame, rows: DataFrame, fusion: FusionMethod,
              numbers: Mapping[str, Any]) -> DataFrame:
    """The method's value per row and its aggregate per (query, item); what absent systems give
    added as the macros add it (``duckrank.render.fusion._combined``): a constant times the
    number of absent systems, or each query's total over the systems minus the present rows'
    share."""
    needs = "candidates" in fusion.value or "candidates" in (fusion.absent or "")
    if needs and "candidates" not in lists.columns:
        lists = lists.join(_candidates(rows), "query")
    combine = spark_combine(fusion)
    for name, value in numbers.items():  # a number parameter of the aggregate (gamma, sigma)
        combine = re.sub(rf"\b{name}\b", f"CAST({float(value)!r} AS DOUBLE)", combine)
    value = spark_sql(fusion.value)
    if fusion.absent is None:
        return lists.withColumn("value", F.expr(value)).groupBy("query", "item").agg(
            F.expr(combine).alias("score"))
    absent = spark_sql(fusion.absent)
    if not reads_the_list(fusion.absent):
        systems = rows.select("system").distinct().count()
        return lists.withColumn("value", F.expr(value)).groupBy("query", "item").agg(
            F.expr(f"{combine} + ({systems} - count(*)) * ({absent})").alias("score"))
    lists = lists.withColumn("value", F.expr(f"({value}) - ({absent})"))
    fused = lists.groupBy("query", "item").agg(F.expr(combine).alias("score"))
    return fused.join(_absent_totals(lists, rows, absent), "query").select(
        "query", "item", (F.col("score") + F.col("absent_total")).alias("score"))


def _absent_totals(lists: DataFrame, rows: DataFrame, absent: str) -> DataFrame:
    """Per query, what every system gives a candidate it did not return, summed over the
    systems in their names' order (a system without a list for the query: n = 0)."""
    sizes = lists.groupBy("system", "query").agg(F.count(F.lit(1)).alias("s_count"))
    systems = lists.select("system", *(c for c in ("weight", "trained")
                                       if c in lists.columns)).distinct()
    every = (systems.crossJoin(_candidates(rows))
             .join(sizes, ["system", "query"], "left")
             .withColumn("s_count", F.coalesce("s_count", F.lit(0)))
             .withColumn("absent", F.expr(absent)))
    return every.groupBy("query").agg(
        F.expr(_ordered("sum(absent)")).alias("absent_total"))


def _pairwise(lists: DataFrame, fusion: FusionMethod) -> DataFrame:
    """Condorcet (``duckrank.render.fusion._pairwise``): per query, the votes for x above y
    summed over systems (a system's weight, or 1) in the systems' order; then each candidate's
    score, 1 + the candidates it beats + half those it ties with. A system ranks the items it
    returned above those it did not, and does not vote between two it did not return."""
    vote = F.col("a.weight") if fusion.weighted else F.lit(1.0)
    a, b = lists.alias("a"), lists.alias("b")
    items = lists.select("query", "item").distinct()
    within = a.join(b, (F.col("a.system") == F.col("b.system"))
                    & (F.col("a.query") == F.col("b.query"))
                    & (F.col("a.position") < F.col("b.position"))).select(
        F.col("a.query").alias("query"), F.col("a.system").alias("system"),
        F.col("a.item").alias("x"), F.col("b.item").alias("y"), vote.alias("vote"))
    above_absent = (a.join(items.alias("c"), F.col("a.query") == F.col("c.query"))
                    .select(F.col("a.query").alias("query"), F.col("a.system").alias("system"),
                            F.col("a.item").alias("x"), F.col("c.item").alias("y"),
                            vote.alias("vote"))
                    .join(lists.select("system", "query", F.col("item").alias("y")),
                          ["system", "query", "y"], "left_anti"))
    tally = within.unionByName(above_absent).groupBy("query", "x", "y").agg(
        F.expr(_ordered("sum(vote)")).alias("votes"))
    f, g = tally.alias("f"), tally.alias("g")
    pairs = (items.alias("c1")
             .join(items.alias("c2"), (F.col("c2.query") == F.col("c1.query"))
                   & (F.col("c2.item") != F.col("c1.item")), "left")
             .join(f, (F.col("f.query") == F.col("c1.query")) & (F.col("f.x") == F.col("c1.item"))
                   & (F.col("f.y") == F.col("c2.item")), "left")
             .join(g, (F.col("g.query") == F.col("c1.query")) & (F.col("g.x") == F.col("c2.item"))
                   & (F.col("g.y") == F.col("c1.item")), "left"))
    won, lost = F.coalesce("f.votes", F.lit(0.0)), F.coalesce("g.votes", F.lit(0.0))
    point = (F.when(F.col("c2.item").isNull(), None).when(won > lost, 1.0)
             .when(won == lost, 0.5).otherwise(0.0))
    return pairs.groupBy(F.col("c1.query").alias("query"), F.col("c1.item").alias("item")).agg(
        (1 + F.coalesce(F.sum(point), F.lit(0.0))).cast("double").alias("score"))
