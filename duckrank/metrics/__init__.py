"""The metric records and their math: one ``record.Metric`` per metric (formula, conventions,
SQL and numpy kernel) in ``binary``, ``graded``, ``preference``, ``correlation``; ``METRICS``."""

from duckrank.metrics import binary, correlation, graded, preference
from duckrank.metrics.record import Metric

METRICS: tuple[Metric, ...] = (
    *binary.METRICS, *graded.METRICS, *preference.METRICS, *correlation.METRICS
)


def by_name(name: str) -> Metric:
    """Find a metric by its SQL name or one of its CLI aliases (case-insensitive)."""
    wanted = name.lower()
    for metric in METRICS:
        if wanted in metric.cli_names:
            return metric
    known = ", ".join(sorted({n for m in METRICS for n in m.cli_names}))
    raise KeyError(f"unknown metric {name!r}; known metrics: {known}")
