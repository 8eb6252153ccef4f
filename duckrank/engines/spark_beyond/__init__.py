"""The beyond-accuracy metrics on Spark DataFrames (``duckrank.spark.beyond_accuracy``): the
same definitions as the DuckDB macros of ``duckrank.metrics.beyond_accuracy`` and
``duckrank.metrics.debiased`` (their records are the reference, their options' domains
included: each option is read and checked with its record's option; the tests compare the two
engines on the same data), as Spark's own DataFrame operations: each user's top k exploded once
and joined with per-item statistics of the side tables, never a catalogue per row. One module
per family, as the records' (``coverage``, ``novelty``, ``diversity``, ``similarity``,
``fairness``, ``debiased``), with what they share in ``inputs``.

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

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame

from duckrank.engines.spark_beyond import (
    coverage,
    debiased,
    diversity,
    fairness,
    novelty,
    similarity,
)
from duckrank.engines.spark_beyond.inputs import Inputs

METRICS: dict[str, Callable[[Inputs], DataFrame]] = {
    **coverage.METRICS, **novelty.METRICS, **diversity.METRICS, **fairness.METRICS,
    **similarity.METRICS, **debiased.METRICS,
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
    inputs = Inputs(metric, recs, k, dict(options))
    return inputs.done(METRICS[metric](inputs))
