"""The metric records and their math: one ``record.Metric`` per metric (formula, conventions,
SQL and numpy kernel) in ``binary``, ``graded``, ``preference``, ``correlation`` and
``trec_eval``; ``METRICS``.

Every binary metric over hit positions also takes a MAP truth (item -> grade), relevant meaning
grade >= min_grade: that overload is derived here from its record
(``binary.graded_truth_overload``), never written twice. ndcg has its own graded record."""

from duckrank.metrics import (
    binary,
    classification,
    correlation,
    cwl,
    diversity,
    graded,
    judged_only,
    peers,
    preference,
    prefs,
    trec_eval,
)
from duckrank.metrics.record import Metric

_RECORDS: tuple[Metric, ...] = (
    *binary.METRICS, *trec_eval.BINARY, *graded.METRICS, *trec_eval.JUDGED,
    *preference.METRICS, *correlation.METRICS, *peers.METRICS, *diversity.METRICS,
    *cwl.METRICS, *judged_only.METRICS, *classification.METRICS, *prefs.METRICS,
)
_HAS_MAP_TRUTH = {m.name for m in _RECORDS if m.truth_type.upper().startswith("MAP")}

METRICS: tuple[Metric, ...] = (
    *_RECORDS,
    *(binary.graded_truth_overload(m) for m in _RECORDS
      if m.kind.map_overload and m.name not in _HAS_MAP_TRUTH),
)


def by_name(name: str) -> Metric:
    """Find a metric by its SQL name or one of its CLI aliases (case-insensitive)."""
    wanted = name.lower()
    for metric in METRICS:
        if wanted in metric.cli_names:
            return metric
    known = ", ".join(sorted({n for m in METRICS for n in m.cli_names}))
    raise KeyError(f"unknown metric {name!r}; known metrics: {known}")
