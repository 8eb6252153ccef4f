"""Every metric record duckrank ships, in the order the docs list them."""

from duckrank.definitions import Metric
from duckrank.metrics import binary, correlation, graded, preference

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
