"""The beyond-accuracy records (coverage, popularity and novelty, diversity, list similarity,
serendipity, popularity bias and item-group fairness), one module per family in
``duckrank.metrics.beyond`` (its docstring gives the shared conventions); this module gathers
them in ``METRICS`` and keeps the names other modules and the tests import from here."""

from __future__ import annotations

from duckrank.metrics.beyond import coverage, diversity, fairness, novelty, similarity
from duckrank.metrics.beyond.common import (
    _ITEM,
    _K,
    _REC,
    _RECS,
    _USER,
    HELPERS,
    BeyondMetric,
    Lists,
    Parameter,
    _column,
    _k,
    _one_row_per_item,
    named_table_sql,
    optional,
    quoted_identifier_sql,
)
from duckrank.metrics.beyond.coverage import (
    catalog_coverage_kernel,
    exposure_entropy_kernel,
    exposure_gini_kernel,
)
from duckrank.metrics.beyond.diversity import (
    ild_category_kernel,
    ild_embedding_kernel,
    inter_user_diversity_kernel,
)
from duckrank.metrics.beyond.novelty import (
    arp_kernel,
    long_tail_share_kernel,
    self_information_kernel,
    serendipity_kernel,
)
from duckrank.metrics.beyond.similarity import jaccard_kernel, overlap_kernel, rbo_kernel

__all__ = [
    "HELPERS", "METRICS", "BeyondMetric", "Lists", "Parameter", "_ITEM", "_K", "_REC", "_RECS",
    "_USER", "_column", "_k", "_one_row_per_item", "named_table_sql", "optional",
    "quoted_identifier_sql",
    "arp_kernel", "catalog_coverage_kernel", "exposure_entropy_kernel", "exposure_gini_kernel",
    "ild_category_kernel", "ild_embedding_kernel", "inter_user_diversity_kernel",
    "jaccard_kernel", "long_tail_share_kernel", "overlap_kernel", "rbo_kernel",
    "self_information_kernel", "serendipity_kernel",
]

# The order of the reference and of `duckrank beyond`'s listing.
METRICS: tuple[BeyondMetric, ...] = (
    *coverage.METRICS, *novelty.METRICS[:3], *diversity.METRICS, *similarity.METRICS,
    *novelty.METRICS[3:], *fairness.METRICS,
)
