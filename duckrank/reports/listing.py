"""The metric listing (``duckrank metrics``; ``metric_listing()`` in Python): one row per metric
record with its aliases, input kind, truth type, options and summary, from
``duckrank.metrics.METRICS``. A notebook shows it as a table (``_repr_html_``,
``_repr_markdown_``)."""

from __future__ import annotations

from dataclasses import dataclass

from duckrank.metrics import METRICS
from duckrank.render.quoting import markdown_text
from duckrank.reports.html import table

COLUMNS = ("metric", "aliases", "input", "truth", "options", "summary")


@dataclass(frozen=True)
class MetricListing:
    """The rows of ``COLUMNS``, one per metric record, in the records' order."""

    rows: tuple[tuple[str, ...], ...]
    columns: tuple[str, ...] = COLUMNS

    def to_markdown(self) -> str:
        """A Markdown (GitHub) table; every text shown as written (``markdown_text``)."""
        def row(values: tuple[str, ...]) -> str:
            return "| " + " | ".join(markdown_text(v) for v in values) + " |"

        return "\n".join([row(self.columns), "|" + " --- |" * len(self.columns),
                          *map(row, self.rows)]) + "\n"

    def to_html(self) -> str:
        """One HTML ``<table>`` (every text escaped)."""
        return table(self.columns, self.rows, table_attributes=' class="metrics"')

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        return self.to_html()


def metric_listing() -> MetricListing:
    """Every metric of ``duckrank.metrics.METRICS`` with its aliases, input kind, truth type
    (LIST unless a record says otherwise), options (``name=default (choice|choice)``) and
    summary."""
    rows = []
    for metric in METRICS:
        options = ", ".join(
            f"{o.name}={o.default}" + (f" ({'|'.join(o.choices)})" if o.choices else "")
            for o in metric.options
        )
        rows.append((metric.name, ", ".join(metric.aliases), metric.inputs,
                     metric.truth_type or "LIST", options, metric.summary))
    return MetricListing(tuple(rows))
