"""Rank fusion on Spark (``duckrank.engines.spark_fusion``) gives the DuckDB macros' rows (whose
numbers test_methods_vs_ranx.py and test_supervised.py check against ranx): methods of every
kind under every normalisation, on seeded random runs with ties and missing items (and a query
some systems have no list for)."""

from __future__ import annotations

import math

import pytest

from .conftest import random_runs

pytest.importorskip("pyspark")

from duckrank.engines import spark_fusion  # noqa: E402
from duckrank.fusion import method  # noqa: E402
from duckrank.reports.fusion.inputs import sql_value  # noqa: E402

SYSTEMS = ("s0", "s1", "s2")
# Learnt values as train_fusion returns them, shorter than the longest list (12) where the
# method reads them by position, so that positions past them are met.
PARAMETERS = {
    "gmnz": {"gamma": 0.7}, "logn_isr": {"sigma": 0.25}, "rrf": {"k": 5}, "rbc": {"phi": 0.8},
    "posfuse": {"probs": {s: [0.9 - 0.1 * i - 0.05 * n for i in range(8)]
                          for n, s in enumerate(SYSTEMS)}},
    "probfuse": {"probs": {s: [0.6 - 0.1 * n, 0.3, 0.1 + 0.05 * n] for n, s in enumerate(SYSTEMS)}},
    "segfuse": {"probs": {s: [0.5 / (i + 1 + n) for i in range(10)]
                          for n, s in enumerate(SYSTEMS)}},
    "slidefuse": {"probs": {s: [0.8 - 0.07 * i * (n + 1) for i in range(7)]
                            for n, s in enumerate(SYSTEMS)}, "w": 2},
    "bayesfuse": {"log_odds": {s: [2.0 - 0.4 * i - 0.3 * n for i in range(9)]
                               for n, s in enumerate(SYSTEMS)}},
    "mapfuse": {"map_scores": {"s0": 0.31, "s1": 0.27, "s2": 0.45}},
}
# One of each kind (Spark jobs are slow; every method's formula is the same record as DuckDB's):
# score combinations, a median, an aggregate with a parameter, positions, Borda's points for the
# items a system did not return, weights, weighted pairwise votes, every supervised method (each
# reads its learnt values in its own way); every normalisation (Borda's, which adds the
# candidates a system did not return, under Borda points, whose absent share reads the lists).
CASES = [("med", "zmuv"), ("gmnz", "sum"), ("rrf", "rank"), ("bordafuse", "none"),
         ("wsum", "min-max-inverted"), ("w_bordafuse", "borda"),
         ("w_condorcet", "min-max"), ("posfuse", "min-max"), ("probfuse", "rank"),
         ("segfuse", "zmuv"), ("slidefuse", "max"), ("bayesfuse", "none"),
         ("mapfuse", "min-max-inverted")]


def test_spark_fuses_as_duckdb(spark_session, fusion_con) -> None:
    table = random_runs(23, len(SYSTEMS))
    frame = spark_session.createDataFrame(table.to_pandas())
    fusion_con.register("spark_input", table)
    for name, norm in CASES:
        fusion = method(name)
        params = dict(PARAMETERS.get(fusion.name, {}))
        if fusion.weighted:
            params["weights"] = {"s0": 0.2, "s1": 0.5, "s2": 0.3}
        arguments = "".join(f", {k} := {sql_value(v)}" for k, v in params.items())
        expected = fusion_con.execute(
            f"SELECT query, item, score, rank FROM {fusion.sql_name}('spark_input'{arguments}, "
            f"norm := '{norm}') ORDER BY query, rank").fetchall()
        got = [tuple(r) for r in spark_fusion.fuse(frame, fusion.name, norm, params)
               .orderBy("query", "rank").collect()]
        assert [(q, i, r) for q, i, _, r in got] == [(q, i, r) for q, i, _, r in expected], (
            fusion.name, norm)
        for (_, _, score, _), (_, _, want, _) in zip(got, expected, strict=True):
            assert math.isclose(score, want, rel_tol=1e-12, abs_tol=1e-12), (fusion.name, norm)
    with pytest.raises(ValueError, match="spark fuse: probs must have one entry for every"):
        spark_fusion.fuse(frame, "posfuse", "min-max", {"probs": {"s0": [0.5]}})
    with pytest.raises(ValueError, match="spark fuse: runs has .* not a finite number"):
        spark_fusion.fuse(frame.withColumn("score", frame.score * float("nan")), "sum")
    # Scores whose standard deviation overflows (1e308 and -1e308: the squared deviations are
    # infinite): an error as in the macros, not NaN or 0 (ranx gives 0.0 for both items).
    huge = spark_session.createDataFrame(
        [("s0", 1, "x", 1e308), ("s0", 1, "y", -1e308)], ["system", "query", "item", "score"])
    with pytest.raises(Exception, match="overflow the zmuv normalisation"):
        spark_fusion.fuse(huge, "sum", "zmuv").collect()


def test_records_sql_in_spark_dialect() -> None:
    """DuckDB's list syntax and literals as Spark reads them (no Spark job: the text only)."""
    assert spark_fusion.spark_sql("coalesce(trained[position], 0.5)") == (
        "coalesce(try_element_at(trained, CAST(position AS INT)), 0.5D)")
    assert spark_fusion.spark_sql("list_sum(trained[a + 1:b + 1])") == (
        "aggregate(slice(trained, CAST(a + 1 AS INT), CAST((b + 1) - (a + 1) + 1 AS INT)), "
        "CAST(NULL AS DOUBLE), (acc, x) -> coalesce(acc, 0) + x)")
    assert spark_fusion.spark_sql("len(list_filter([5, 15], lambda e: e <= p // 2))") == (
        "size(filter(array(5, 15), e -> e <= p  div  2))")
    assert spark_fusion.spark_sql("isfinite(s_max - s_min)") == (
        "1.7976931348623157E308 >= abs(s_max - s_min)")
