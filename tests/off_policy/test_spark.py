"""duckrank.engines.spark_off_policy on a real local Spark: obp's estimates on its synthetic
data (pinned by make_obp_pins.py), DuckDB's standard errors and diagnostics for the same log
and segments, and a bad propensity raised with its message."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pip install duckrank[spark]")

from duckrank.engines.spark_off_policy import aggregate  # noqa: E402
from duckrank.engines.spark_off_policy import off_policy as spark_off_policy  # noqa: E402
from duckrank.reports.off_policy import off_policy  # noqa: E402

from .conftest import obp_log, pins  # noqa: E402
from .test_slate import _slate_log  # noqa: E402


def test_spark_gives_obps_estimates_and_duckdbs_errors(spark_session) -> None:
    data = pins()
    log = obp_log("binary", data)
    log = log.append_column("segment", pa.array(np.arange(len(log)) % 3))
    frame = spark_session.createDataFrame(log.to_pandas())
    lambdas = {"ips": [np.inf, 2.0], "dr_os": 10.0, "sg_dr": 0.3}
    every = spark_off_policy(frame, lambdas=lambdas).collect()[0].asDict()
    # Expected: obp 0.5.7's estimate_policy_value (make_obp_pins.py).
    for label, key in (("dm", "dm/None"), ("ips", "ips/inf"), ("ips(lambda_=2.0)", "ips/2.0"),
                       ("snips", "snips/None"), ("dr", "dr/inf"), ("sndr", "sndr/None"),
                       ("switch_dr", "switch_dr/inf"), ("dr_os(lambda_=10.0)", "dr_os/10.0"),
                       ("sg_ips", "sg_ips/0.0"), ("sg_dr(lambda_=0.3)", "sg_dr/0.3")):
        assert every[label] == pytest.approx(float(data[f"binary/obp/{key}"]), rel=1e-12), label
    # Per segment: the standard errors and diagnostics of duckrank.off_policy (DuckDB).
    segments = spark_off_policy(frame, ["snips", "dr"], by="segment").collect()
    duck = off_policy(log, ["snips", "dr"], by="segment", interval=False)
    for row in segments:
        for name in ("snips", "dr"):
            expected = duck[(duck.segment == row.segment) & (duck.estimator == name)].iloc[0]
            assert row[name] == pytest.approx(expected.estimate, rel=1e-12)
            assert row[f"{name}_stderr"] == pytest.approx(expected.stderr, rel=1e-9)
            assert row.ope_ess == pytest.approx(expected.ess, rel=1e-12)
            assert row.ope_mean_weight == pytest.approx(expected.mean_weight, rel=1e-12)
    bad = frame.withColumn("pscore", frame.pscore * 0)
    # Which aggregate meets the bad row first is up to Spark.
    with pytest.raises(Exception, match=r"(ips|ope_\w+): pscore must be in \(0, 1\], got 0"):
        spark_off_policy(bad, "ips").collect()


def test_spark_slate_aggregates_give_obps_values(spark_session) -> None:
    """Expected: obp 0.5.7's SlateStandardIPS and SlateCascadeDoublyRobust (make_obp_pins.py);
    the previous position's probabilities taken with lag() as docs/off-policy.md shows."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    data = pins()
    log = spark_session.createDataFrame(_slate_log().to_pandas())
    slate = Window.partitionBy("slate_id").orderBy("position")
    cascade = log.select(
        "slate_id", "reward", "q_hat", "v_hat",
        F.col("pscore_cascade").alias("pscore"), F.col("eval_cascade").alias("action_prob"),
        F.lag("pscore_cascade", 1, 1.0).over(slate).alias("prev_pscore"),
        F.lag("eval_cascade", 1, 1.0).over(slate).alias("prev_action_prob"))
    standard = log.select("slate_id", "reward", "pscore",
                          F.col("eval_pscore").alias("action_prob"))
    assert cascade.agg(aggregate("slate_cascade_dr")).collect()[0][0] == pytest.approx(
        float(data["slate/obp/slate_cascade_dr"]), rel=1e-12)
    assert standard.agg(aggregate("slate_standard_ips")).collect()[0][0] == pytest.approx(
        float(data["slate/obp/slate_standard_ips"]), rel=1e-12)
    with pytest.raises(ValueError, match="slate_standard_ips has no lambda_"):
        aggregate("slate_standard_ips", 1.0)
