"""Rank fusion on Spark (``duckrank.engines.spark_fusion``) gives the DuckDB macros' rows (whose
numbers test_methods_vs_ranx.py checks against ranx): every unsupervised method Spark offers,
under several normalisations, on seeded random runs with ties and missing items; and the
methods it does not offer are refused by name."""

from __future__ import annotations

import math

import pytest

from .conftest import random_runs

pytest.importorskip("pyspark")

from duckrank.engines import spark_fusion  # noqa: E402
from duckrank.fusion import method  # noqa: E402
from duckrank.reports.fusion.inputs import sql_value  # noqa: E402

PARAMETERS = {"gmnz": {"gamma": 0.7}, "logn_isr": {"sigma": 0.25}, "rrf": {"k": 5},
              "rbc": {"phi": 0.8}}
# One of each kind (Spark jobs are slow; every method's formula is the same record as DuckDB's):
# a score combination, a median, an aggregate with a parameter, positions, Borda's points for the
# items a system did not return, weights; under each normalisation Spark offers.
CASES = [("sum", "min-max"), ("med", "zmuv"), ("gmnz", "sum"), ("rrf", "rank"),
         ("bordafuse", "none"), ("wsum", "min-max-inverted"), ("mnz", "max")]


def test_spark_fuses_as_duckdb(spark_session, fusion_con) -> None:
    table = random_runs(23, 3)
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
            assert math.isclose(score, want, rel_tol=1e-12, abs_tol=1e-12), fusion.name
    for name, norm in (("condorcet", "min-max"), ("posfuse", "min-max"), ("sum", "borda")):
        with pytest.raises(ValueError, match="spark fuse: "):
            spark_fusion.fuse(frame, name, norm, {"probs": {}} if name == "posfuse" else {})
