"""The comparison report's result (``Report``): its frames, and the systems x metrics table as
text, Markdown, LaTeX, HTML (a notebook shows ``_repr_html_``), CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from duckrank.render.quoting import latex_text, markdown_text, plain_text
from duckrank.reports.compare.options import CORRECTION_NAMES, Options, _plural
from duckrank.reports.html import Markup, escape
from duckrank.reports.html import table as html_table
from duckrank.reports.labels import reader_label

if TYPE_CHECKING:
    import pandas
    from matplotlib.figure import Figure

# Decimals in every table a command or method prints (text, Markdown, LaTeX, HTML): one default.
DIGITS = 4
LEGEND_WIDTH = 100  # the text table's legend is wrapped to this many characters
LETTERS = "abcdefghijklmnopqrstuvwxyz"
SUPERSCRIPTS = "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ"
TABLES = ("summary", "comparisons")
_NOTES_SHOWN = 5  # comparisons without a p-value named in the legend (all in the frame)
# to_latex(transpose=None) puts the metrics in rows from this many metrics on: a column each
# would run past a page's width.
TRANSPOSE_FROM = 7
BOLD_SENTENCE = "Bold: the highest mean of each metric (at the digits shown)."


def _fixed(value: float | None, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NULL"
    return f"{value:.{digits}f}"


def _plain(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


@dataclass(frozen=True)
class Report:
    """The result of ``compare``: one row per system and metric (``frame()``), one per comparison
    made (``frame('comparisons')``) and the per-query values they come from (``per_query``).

    ``str(report)`` / ``table()`` print the systems x metrics table: each system's letter, its
    mean (rounded to ``digits``), the letters of the systems it beats significantly as
    superscripts (the ranx style), and the bootstrap interval in brackets; a legend says which
    test, correction and interval. ``to_markdown``, ``to_latex`` (booktabs) print the same;
    ``to_csv`` and ``to_json`` keep every digit. Frames are pandas, or polars when a run or the
    qrels were polars.
    """

    systems: tuple[str, ...]
    metrics: tuple[str, ...]
    options: Options
    summary: pa.Table
    comparisons: pa.Table
    per_query_values: pa.Table
    polars: bool = False
    _cells: dict[tuple[str, str], dict[str, Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for row in self.summary.to_pylist():
            self._cells[row["system"], row["metric"]] = row

    # -- frames ------------------------------------------------------------------------------

    def _frame(self, table: pa.Table) -> Any:
        if self.polars:
            import polars

            return polars.from_arrow(table)
        return table.to_pandas()

    def _table(self, table: str) -> pa.Table:
        if table not in TABLES:
            raise ValueError(f"Report: table={table!r} must be one of {', '.join(TABLES)}")
        return self.summary if table == "summary" else self.comparisons

    def frame(self, table: str = "summary") -> pandas.DataFrame | Any:
        """``'summary'``: one row per (system, metric): ``system, letter, metric, n`` (queries
        in the mean), ``filled`` (of them, judged queries the system did not rank, scored as
        an empty list: 0 on ndcg, map, mrr, recall, precision),
        ``mean, ci_low, ci_high, beats`` (the letters of the systems it beats significantly).
        ``'comparisons'``: one row per comparison made: ``metric, system, other, n,
        mean_diff`` (system - other), ``statistic`` (t or Wilcoxon's; NULL for the
        randomization test), ``p_value, p_adjusted, significant``, against a baseline
        ``ci_low, ci_high`` (the paired bootstrap interval of the difference), and ``note``: why
        ``p_value`` is NULL (every difference equal under the t-test, fewer than 2 pairs, a value
        that is not finite), NULL when there is one."""
        return self._frame(self._table(table))

    @property
    def per_query(self) -> pandas.DataFrame | Any:
        """The values every number of the report comes from: ``system, query, metric, value``,
        one row per system, judged query and metric (a query the system did not rank is scored
        as an empty list: 0 on ndcg, map, mrr, recall, precision; NaN where the metric is
        undefined)."""
        return self._frame(self.per_query_values)

    # -- text --------------------------------------------------------------------------------

    def _marks(self, system: str, metric: str) -> str:
        return self._cells[system, metric]["beats"]

    def _cell(self, system: str, metric: str, digits: int, marks: str,
              interval: tuple[str, str] = (" [", "]"), bold: Any = None) -> str:
        """The mean (through ``bold`` when it is the metric's best), its marks, its interval."""
        row = self._cells[system, metric]
        text = _fixed(row["mean"], digits)
        if bold is not None and system in self.best(metric, digits):
            text = bold(text)
        text += marks
        if self.options.level is not None:
            text += (f"{interval[0]}{_fixed(row['ci_low'], digits)}, "
                     f"{_fixed(row['ci_high'], digits)}{interval[1]}")
        return text

    def best(self, metric: str, digits: int = DIGITS) -> frozenset[str]:
        """The systems with the highest mean of ``metric`` as shown at ``digits`` decimals (every
        system that ties there: a reader sees equal numbers); none when no mean is defined."""
        shown = {s: round(self._cells[s, metric]["mean"], digits) for s in self.systems
                 if _plain(self._cells[s, metric]["mean"]) is not None}
        top = max(shown.values(), default=None)
        return frozenset(s for s, value in shown.items() if value == top)

    def _superscript(self, letters: str) -> str:
        return "".join(SUPERSCRIPTS[LETTERS.index(c)] for c in letters)

    def _rows(self, digits: int, marks: Any = None, name: Any = str, bold: Any = None,
              interval: tuple[str, str] = (" [", "]")) -> list[list[str]]:
        """One row per system: its letter, ``name(system)`` (quoted for the output's language)
        and its cells (the best means through ``bold``)."""
        marks = marks or self._superscript
        return [
            [LETTERS[i], name(system),
             *(self._cell(system, m, digits, marks(self._marks(system, m)), interval, bold)
               for m in self.metrics)]
            for i, system in enumerate(self.systems)
        ]

    def legend(self, bold: bool = False) -> list[str]:
        """What the marks and intervals mean, one sentence a line, in a reader's words (a
        caption names no method or column of this object); ``bold``: the tables that bold the
        best means say so."""
        o = self.options
        test_name = o.in_report.title
        baselines = o.baselines
        against = ("pairwise" if not baselines
                   else f"against the baseline {baselines[0]}" if len(baselines) == 1
                   else f"against each of the baselines {', '.join(baselines)}")
        family = self.comparisons.num_rows // len(self.metrics)
        corrected = (f"{CORRECTION_NAMES[o.correction]}-corrected over "
                     f"{_plural(family, 'comparison')} per metric" if o.correction
                     else "not corrected for multiple comparisons")
        trials = f", {o.trials:,} trials, seed {o.seed}" if o.resampled else ""
        lines = [f"Superscripts: the letters of the systems it beats significantly ({test_name} "
                 f"{against}{trials}, {corrected}, alpha = {o.alpha})."]
        if o.level is not None:
            lines.append(f"[low, high]: {o.level * 100:g}% percentile bootstrap interval of the "
                         f"mean ({o.trials:,} resamples, seed {o.seed}).")
        notes = [row for row in self.comparisons.to_pylist() if row["note"] is not None]
        for row in notes[:_NOTES_SHOWN]:
            lines.append(f"No p-value for {row['metric']}, {row['system']} vs {row['other']}: "
                         f"{row['note']}.")
        if len(notes) > _NOTES_SHOWN:
            lines.append(f"{len(notes) - _NOTES_SHOWN} more comparisons have no p-value.")
        filled = sum(self.summary["filled"].to_pylist())
        if filled:
            lines.append(f"{filled:,} (system, query, metric) values are of judged queries a "
                         "system did not rank, scored as an empty list (0 on ndcg, map, mrr, "
                         "recall, precision).")
        if bold:
            lines.append(BOLD_SENTENCE)
        return lines

    def table(self, digits: int = DIGITS) -> str:
        """The systems x metrics table as aligned text, rounded to ``digits`` decimals."""
        header = ["#", "system", *map(plain_text, self.metrics)]
        rows = self._rows(digits, name=plain_text)
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
                 for r in [header, ["-" * w for w in widths], *rows]]
        legend = [textwrap.fill(plain_text(sentence), LEGEND_WIDTH, break_on_hyphens=False)
                  for sentence in self.legend()]
        return "\n".join([*lines, "", *legend]) + "\n"

    def __str__(self) -> str:
        return self.table()

    def to_markdown(self, digits: int = DIGITS) -> str:
        """A Markdown (GitHub) table, then the legend as a paragraph. Systems' and metrics'
        names are shown as written (``markdown_text``: no HTML, emphasis, links or math)."""
        def row(values: Sequence[str]) -> str:
            return "| " + " | ".join(values) + " |"

        lines = [row(["#", "system", *map(markdown_text, self.metrics)]),
                 "| --- | --- |" + " ---: |" * len(self.metrics),
                 *(row(r) for r in self._rows(digits, name=markdown_text,
                                               bold=lambda text: f"**{text}**"))]
        return "\n".join([*lines, "", markdown_text(" ".join(self.legend(bold=True)))]) + "\n"

    def _repr_markdown_(self) -> str:
        """Jupyter's Markdown display: ``to_markdown()``."""
        return self.to_markdown()

    def to_latex(self, digits: int = DIGITS, transpose: bool | None = None) -> str:
        """A LaTeX table with booktabs rules (``\\usepackage{booktabs}``): the best mean of each
        metric in bold, marks as ``\\textsuperscript``, metric labels as a reader knows them
        (``nDCG@10``, ``MAP@100``), the legend as the caption. ``transpose``: the metrics in
        rows and the systems in columns (None: when there are ``TRANSPOSE_FROM`` or more
        metrics)."""
        def marks(letters: str) -> str:
            return f"\\textsuperscript{{{letters}}}" if letters else ""

        def bold(text: str) -> str:
            return f"\\textbf{{{text}}}"

        rows = self._rows(digits, marks, latex_text, bold)
        labels = [latex_text(reader_label(m)) for m in self.metrics]
        if transpose is None:
            transpose = len(self.metrics) >= TRANSPOSE_FROM
        if transpose:
            header = ["Metric", *(f"{name} ({letter})" for letter, name, *_ in rows)]
            body = [[label, *(r[2 + i] for r in rows)] for i, label in enumerate(labels)]
            columns = "l" + "r" * len(self.systems)
        else:
            header, body = ["", "System", *labels], rows
            columns = "ll" + "r" * len(self.metrics)
        return "\n".join([
            r"\begin{table}[t]", r"\centering",
            r"\begin{tabular}{" + columns + "}",
            r"\toprule", " & ".join(header) + r" \\", r"\midrule",
            *(" & ".join(r) + r" \\" for r in body), r"\bottomrule", r"\end{tabular}",
            r"\caption{" + latex_text(" ".join(self.legend(bold=True))) + "}",
            r"\end{table}",
        ]) + "\n"

    def to_html(self, digits: int = DIGITS) -> str:
        """The systems x metrics table as one HTML ``<table>`` (what a notebook shows): the best
        mean of each metric in ``<strong>``, the marks as ``<sup>`` letters whose tooltip names
        the systems beaten, the interval in a grey ``<span>``, the legend as the caption. Every
        name is escaped; each cell carries ``data-system``, ``data-metric`` and ``data-mean``
        (every digit) so that a page's numbers can be checked against the report's."""
        def marks(letters: str) -> str:
            if not letters:
                return ""
            beaten = ", ".join(f"{c} ({self.systems[LETTERS.index(c)]})" for c in letters)
            return f'<sup title="{escape("beats " + beaten)}">{letters}</sup>'

        rows = self._rows(digits, marks, escape, lambda text: f"<strong>{text}</strong>",
                          (' <span class="ci">[', "]</span>"))
        # Every part of a row is escaped or built here: the letter, the escaped name, the cells.
        cells = [[Markup(value) for value in row] for row in rows]
        header = ["#", "system", *(Markup(f'<span title="{escape(m)}">'
                                          f"{escape(reader_label(m))}</span>")
                                   for m in self.metrics)]
        for row, system in zip(cells, self.systems, strict=True):
            for i, metric in enumerate(self.metrics):
                mean = self._cells[system, metric]["mean"]
                row[2 + i] = Markup(
                    f'<span class="mean" data-system="{escape(system)}" '
                    f'data-metric="{escape(metric)}" data-mean="{escape(repr(_plain(mean)))}">'
                    f"{row[2 + i]}</span>")
        caption = escape(" ".join(self.legend(bold=True)))
        return html_table(header, cells, caption=caption,
                          numeric=range(2, 2 + len(self.metrics)),
                          table_attributes=' class="comparison"')

    def _repr_html_(self) -> str:
        """Jupyter's HTML display: ``to_html()``."""
        return self.to_html()

    def to_csv(self, table: str = "summary") -> str:
        """``frame(table)`` as CSV, every digit kept (NULL is an empty field). The summary's
        rows also carry the comparisons' p-values: for each system X compared with it,
        ``p_value_vs_X`` and ``p_adjusted_vs_X`` (X its letter; empty where not compared), beside
        ``beats``, the marks."""
        chosen = self._table(table)
        names, rows = chosen.column_names, chosen.to_pylist()
        if table == "summary":
            names, rows = self._with_p_values(names, rows)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(["" if row.get(name) is None else row[name] for name in names]
                         for row in rows)
        return out.getvalue()

    def _with_p_values(self, names: list[str], rows: list[dict[str, Any]]
                       ) -> tuple[list[str], list[dict[str, Any]]]:
        """The summary's columns and rows with ``p_value_vs_X``, ``p_adjusted_vs_X`` for each
        letter X some system was compared with (a comparison is symmetric: both rows get it)."""
        p: dict[tuple[str, str, str], tuple[Any, Any]] = {}
        for c in self.comparisons.to_pylist():
            for one, other in ((c["system"], c["other"]), (c["other"], c["system"])):
                p[c["metric"], one, other] = (_plain(c["p_value"]), _plain(c["p_adjusted"]))
        compared = sorted({LETTERS[self.systems.index(other)] for _, _, other in p})
        added = [f"{kind}_vs_{letter}" for letter in compared
                 for kind in ("p_value", "p_adjusted")]
        for row in rows:
            for letter in compared:
                values = p.get((row["metric"], row["system"],
                                self.systems[LETTERS.index(letter)]), (None, None))
                row[f"p_value_vs_{letter}"], row[f"p_adjusted_vs_{letter}"] = values
        return [*names, *added], rows

    def to_dict(self) -> dict[str, Any]:
        """Everything but the per-query values, as plain Python (NaN is None)."""
        return {
            "systems": list(self.systems),
            "metrics": list(self.metrics),
            "options": {name: getattr(self.options, name) for name in Options.__annotations__},
            "summary": [{k: _plain(v) for k, v in row.items()}
                        for row in self.summary.to_pylist()],
            "comparisons": [{k: _plain(v) for k, v in row.items()}
                            for row in self.comparisons.to_pylist()],
        }

    def to_json(self) -> str:
        """``to_dict()`` as JSON, every digit kept."""
        return json.dumps(self.to_dict(), indent=2)

    def plot(self, path: str | Path | None = None, kind: str = "curves",
             metric: str | None = None, *, title: str | None = None) -> Figure | Any:
        """Draw the per-query values with ``duckrank.reports.plots.plot`` (needs matplotlib:
        ``pip install 'duckrank[plots]'``): ``'curves'`` (the mean of a metric family against
        k, per system), ``'distribution'`` (one metric's per-query values per system) or
        ``'difference'`` (per query, against the baseline: the first, when the report has
        several). With ``path`` (.png, .svg or .pdf) the picture is written and the numbers
        drawn returned (its ``PlotData``); without, the matplotlib ``Figure`` is returned (a
        notebook shows it inline)."""
        from duckrank.reports.plots import plot

        baselines = self.options.baselines
        return plot(self.per_query_values, path, kind, metric=metric,
                    baseline=baselines[0] if baselines else None, title=title)
