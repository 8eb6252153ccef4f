"""The similarity of two systems' lists on Spark (``overlap_at``, ``jaccard_at``, ``rbo``): the
record's kernel on each pair of lists, ``other`` joined on the user."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType

from duckrank.engines.spark_beyond.inputs import Inputs
from duckrank.metrics.beyond_accuracy import jaccard_kernel, overlap_kernel, rbo_kernel


def _pair(a: Inputs) -> DataFrame:
    """overlap_at, jaccard_at, rbo: the record's kernel on each joined pair of lists."""
    other = a.table("other")
    kernel = {"overlap_at": overlap_kernel, "jaccard_at": jaccard_kernel}.get(a.name)
    if kernel is None:
        p, variant = float(a.value("p")), a.value("variant")

        def kernel(rec: Any, oth: Any, k: int) -> float | None:
            return rbo_kernel(rec, oth, k, p, variant)

    k = a.k
    udf = F.udf(lambda rec, oth: kernel(rec, oth, k), DoubleType())
    joined = a.recs.select(F.col(a.user).alias("user"), F.col(a.rec).alias("a")).join(
        other.select(F.col(a.user).alias("user"), F.col(a.rec).alias("b")), "user")
    return joined.select("user", udf("a", "b").alias(a.name))


METRICS: dict[str, Callable[[Inputs], DataFrame]] = {
    "overlap_at": _pair,
    "jaccard_at": _pair,
    "rbo": _pair,
}
