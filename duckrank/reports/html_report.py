"""The comparison report as one self-contained HTML page (``duckrank report ... -o report.html``):
the systems x metrics table, the comparisons with their p-values, the metric@k curves as inline
SVG, per metric the per-query differences against the reference system sorted by size, and for
a chosen query the two systems' rankings side by side with the judged items marked (in the
spirit of diffir: https://github.com/capreolus-ir/diffir).

One file, nothing fetched: the style, the charts (SVG) and the script are inline, and the page
loads no font, image or library. Every text from data (system names, metric labels, query and
item ids) is escaped where it enters HTML, and the script writes data with ``textContent`` only.
The numbers come from the ``Report``: the table is ``Report.to_html``, the curves and
differences ``duckrank.reports.plots.plot_data`` over ``Report.per_query``; the page carries
the values it shows as ``data-`` attributes, so a test reads them back.

At 100,000 queries the page stays small: it lists the ``shown`` largest gains and losses per
(metric, system) and draws the sorted differences through at most about 400 bars; the rankings
are read (``duckrank.reports.rankings``) for the listed queries only.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from os import PathLike, fspath
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from duckrank.render.spelling import PYTHON, Spelling
from duckrank.reports import plots
from duckrank.reports.compare import DIGITS, LETTERS, Report
from duckrank.reports.html import STYLE, Markup, attributes, escape, script_json, table
from duckrank.reports.labels import reader_label
from duckrank.reports.rankings import DEPTH, Rankings
from duckrank.reports.svg import difference_chart, line_chart

# Queries listed per (metric, system): this many largest gains and as many largest losses.
SHOWN = 10
# The ranks shown side by side at most, whatever the metrics' cut-offs.
SHOWN_DEPTH = 20
# The sorted-differences chart is drawn through at most about this many bars.
_BARS = 400


@dataclass(frozen=True)
class PageData:
    """What the page draws, computed once from a report (reading 2,000,000 per-query values
    takes about a second): the per-query table read, and per metric the differences against
    the reference system; ``shown`` largest gains and losses are listed of each."""

    table: plots.PerQuery
    differences: dict[str, plots.PlotData]
    shown: int

    @property
    def listed(self) -> list[str]:
        """The queries the page lists (ids as text), whose rankings it shows."""
        queries: set[str] = set()
        for data in self.differences.values():
            for series in data.series.values():
                queries.update(_text(q) for q in _extremes(series.x, self.shown))
        return sorted(queries)


def page_data(report: Report, shown: int = SHOWN) -> PageData:
    """``PageData`` of ``report`` (``shown``: a positive whole number)."""
    _check_shown(shown)
    table_data = plots.read_per_query(report.per_query_values)
    return PageData(table_data, {
        metric: plots.plot_data(table_data, "difference", metric, reference(report))
        for metric in report.metrics}, shown)


def listed_queries(report: Report, shown: int = SHOWN) -> list[str]:
    """The queries the page lists (ids as text), whose rankings it shows: per metric and system,
    the ``shown`` largest gains and losses against the reference system."""
    return page_data(report, shown).listed


def ranking_depth(report: Report) -> int:
    """The ranks shown per list: the metrics' largest cut-off (at most ``SHOWN_DEPTH``: map@100
    would list 100 items a side), else ``DEPTH``."""
    cutoffs = [int(m.rpartition("@")[2]) for m in report.metrics
               if m.rpartition("@")[2].isdigit()]
    return min(max(cutoffs), SHOWN_DEPTH) if cutoffs else DEPTH


def reference(report: Report) -> str:
    """The system the differences are taken against: the (first) baseline, else the first
    system."""
    baselines = report.options.baselines
    return baselines[0] if baselines else report.systems[0]


def html_report(report: Report, rankings: Rankings | None = None, *, title: str | None = None,
                shown: int = SHOWN, digits: int = DIGITS, data: PageData | None = None) -> str:
    """The page as text. ``rankings``: the lists and judgments of ``listed_queries(report,
    shown)`` (``read_rankings``); without, the page has no side-by-side rankings. ``data``:
    ``page_data(report, shown)`` when the caller has it already (then ``shown`` is its)."""
    data = page_data(report, shown) if data is None else data
    table_data, differences, shown = data.table, data.differences, data.shown
    queries = len(table_data.queries)
    heading = title or (f"Comparison of {len(report.systems)} systems on {queries:,} "
                        f"{table_data.noun if queries == 1 else plots.plural(table_data.noun)}")
    sections = [
        f"<h1>{escape(heading)}</h1>",
        "<h2>Means and significance</h2>", report.to_html(digits),
        "<h2>Comparisons</h2>", _comparisons(report),
        _curves(report, table_data),
        _differences(report, table_data.noun, differences, shown, digits),
        _rankings_section(rankings),
    ]
    payload = _payload(report, rankings, data.listed)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        # No request may leave the page: nothing but inline style and script is allowed.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(heading)}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(sections)
        + f'\n<script type="application/json" id="duckrank-data">{script_json(payload)}'
        f"</script>\n<script>{_SCRIPT}</script>\n</body></html>\n"
    )


def write_html(report: Report, path: str | PathLike[str], rankings: Rankings | None = None,
               **options: Any) -> None:
    """Write ``html_report(report, rankings, **options)`` to ``path`` (UTF-8; checked by
    ``check_output`` first)."""
    check_output(path)
    with open(path, "w", encoding="utf-8") as out:
        out.write(html_report(report, rankings, **options))


def check_output(path: str | PathLike[str], spelling: Spelling = PYTHON) -> None:
    """``path`` ends in .html (or .htm) and can be written: a file (or nothing yet) in an
    existing folder. The command line calls it before it reads anything."""
    text = fspath(path)
    where = spelling.argument("output", text) if spelling.cli else f"write_html: path {text!r}"
    target = Path(text)
    if target.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"{where} must end in .html (the page is one HTML file)")
    if target.is_dir():
        raise ValueError(f"{where} is a folder; give a file name ending in .html")
    if not target.parent.is_dir():
        raise ValueError(f"{where}: the folder {str(target.parent)!r} does not exist; create "
                         "it first")
    if not os.access(target.parent, os.W_OK | os.X_OK) or (
            target.exists() and not os.access(target, os.W_OK)):
        raise ValueError(f"{where} cannot be written (permission denied)")


def _check_shown(shown: int) -> None:
    if isinstance(shown, bool) or not isinstance(shown, int) or shown < 1:
        raise ValueError(f"html_report: shown must be a positive whole number, got {shown!r}")


def _text(value: Any) -> str:
    return str(value.as_py() if isinstance(value, pa.Scalar) else value)


def _extremes(values: np.ndarray, shown: int) -> np.ndarray:
    """Positions of the ``shown`` first and last of sorted ``values`` (each once)."""
    n = len(values)
    return values[np.unique(np.r_[np.arange(min(shown, n)), np.arange(max(n - shown, 0), n)])]


def _number(value: Any, digits: int, sign: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _p(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}"


def _comparisons(report: Report) -> Markup:
    rows = []
    for row in report.comparisons.to_pylist():
        mark = "yes" if row["significant"] else "no"
        rows.append([reader_label(row["metric"]), row["system"], row["other"],
                     f"{row['n']:,}", _number(row["mean_diff"], DIGITS, sign=True),
                     _p(row["p_value"]), _p(row["p_adjusted"]), mark,
                     row["note"] or ""])
    return table(["metric", "system", "other", "queries", "mean difference", "p-value",
                  "adjusted p-value", "significant", "note"], rows, numeric=range(3, 7),
                 table_attributes=' class="comparisons"')


def _curves(report: Report, table_data: Any) -> str:
    families = [name for name, ks in plots.families(table_data).items() if len(ks) > 1]
    if not families:
        return ("<h2>Curves</h2><p class=\"note\">No curves: they need a metric at two or more "
                "cut-offs (for example -m ndcg@1 -m ndcg@5 -m ndcg@10).</p>")
    charts = []
    for family in families:
        data = plots.plot_data(table_data, "curves", family, reference(report))
        series = {name: (s.x.tolist(), s.y.tolist()) for name, s in data.series.items()}
        label = f"mean {reader_label(family)}@k"
        charts.append(f"<h3>{escape(reader_label(family))}</h3>"
                      + line_chart(series, "k (cut-off)", label, metric=family))
    return "<h2>Curves</h2>" + "".join(charts)


def _differences(report: Report, noun: str, differences: dict[str, plots.PlotData],
                 shown: int, digits: int) -> str:
    base = reference(report)
    choices = "".join(f"<option{attributes(value=m)}>{escape(reader_label(m))}</option>"
                      for m in report.metrics)
    parts = [f"<h2>Per-{escape(noun)} differences against {escape(base)}</h2>",
             f'<p class="note">Each {escape(noun)}\'s value of a system minus {escape(base)}\'s, '
             f"sorted from the largest gain to the largest loss; the {shown:,} largest of each "
             "are listed. Choose one to see the two rankings side by side.</p>",
             f'<label>Metric: <select id="metric-choice">{choices}</select></label>']
    for index, metric in enumerate(report.metrics):
        data = differences[metric]
        hidden = "" if index == 0 else " hidden"
        parts.append(f'<div class="metric-differences"{attributes(data_metric=metric)}{hidden}>')
        for system, series in data.series.items():
            parts.append(_system_differences(system, base, metric, series, data.means[system],
                                             noun, shown, digits))
        parts.append("</div>")
    return "\n".join(parts)


def _system_differences(system: str, base: str, metric: str, series: Any, mean: float,
                        noun: str, shown: int, digits: int) -> str:
    n = len(series.y)
    better, worse = int((series.y > 0).sum()), int((series.y < 0).sum())
    head = (f"<h3>{escape(system)} − {escape(base)}: {escape(reader_label(metric))}</h3>"
            f'<p class="note">{n:,} {escape(plots.plural(noun) if n != 1 else noun)}: '
            f'<span class="gain">{escape(system)} better on {better:,}</span>, '
            f'<span class="loss">{escape(base)} better on {worse:,}</span>, '
            f"{n - better - worse:,} tied; mean difference {_number(mean, digits, sign=True)}"
            "</p>")
    step = max(1, math.ceil(n / _BARS))
    drawn = np.unique(np.r_[np.arange(0, n, step), n - 1]) if n else np.arange(0)
    chart = difference_chart(series.y, drawn, mean, plots.plural(noun),
                             f"{reader_label(metric)} difference")
    positions = np.unique(np.r_[np.arange(min(shown, n)), np.arange(max(n - shown, 0), n)])
    rows, row_attributes = [], []
    for position in positions:
        query, value = _text(series.x[position]), float(series.y[position])
        kind = "gain" if value > 0 else "loss" if value < 0 else ""
        rows.append([f"{position + 1:,}", query,
                     Markup(f'<span class="{kind}">{escape(_number(value, digits, True))}</span>')])
        row_attributes.append(' class="query"' + attributes(
            data_query=query, data_system=system, data_metric=metric,
            data_difference=repr(value), tabindex="0"))
    listed = table(["rank", noun, "difference"], rows, numeric=(0, 2),
                   row_attributes=row_attributes, table_attributes=' class="differences"')
    return head + chart + listed


def _rankings_section(rankings: Rankings | None) -> str:
    if rankings is None:
        return ""
    return ('<h2 id="rankings-title">Rankings</h2><p id="rankings-caption" class="note"></p>'
            '<div class="rankings" id="rankings"></div>'
            '<p class="note">Marked: <span class="legend-relevant">relevant</span> (judged with '
            "a grade above 0), <span class=\"legend-judged\">judged not relevant</span>; "
            "unmarked items are not judged.</p>")


def _payload(report: Report, rankings: Rankings | None, listed: list[str]) -> dict[str, Any]:
    """What the script needs: the reference system, and for the listed queries the systems'
    lists, the judgments and the per-query values."""
    if rankings is None:
        return {"reference": reference(report), "lists": {}, "judgments": {}, "values": {}}
    per_query = report.per_query_values
    as_text = pc.cast(per_query["query"], pa.string())
    rows = per_query.filter(pc.is_in(as_text, pa.array(listed, pa.string()))).to_pylist()
    values: dict[str, dict[str, dict[str, float | None]]] = {}
    for row in rows:
        value = row["value"]
        values.setdefault(_text(row["query"]), {}).setdefault(row["system"], {})[
            row["metric"]] = None if value is None or math.isnan(value) else value
    return {
        "reference": reference(report),
        "letters": {s: LETTERS[i] for i, s in enumerate(report.systems)},
        "lists": {system: {q: lists[q] for q in listed if q in lists}
                  for system, lists in rankings.lists.items()},
        "judgments": {q: rankings.judgments.get(q, {}) for q in listed},
        "values": values,
        "depth": rankings.depth,
        "labels": {m: reader_label(m) for m in report.metrics},
    }


# The page's script: switch the metric shown, and show a chosen query's two rankings. Data is
# written with textContent (never innerHTML), so an id cannot inject markup.
_SCRIPT = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("duckrank-data").textContent);
  var choice = document.getElementById("metric-choice");
  function showMetric() {
    document.querySelectorAll(".metric-differences").forEach(function (block) {
      block.hidden = block.dataset.metric !== choice.value;
    });
  }
  if (choice) { choice.addEventListener("change", showMetric); }
  var box = document.getElementById("rankings");
  function add(parent, tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined) { node.textContent = text; }
    if (className) { node.className = className; }
    parent.appendChild(node);
    return node;
  }
  function fixed(value) { return value === null || value === undefined ? "\\u2013"
                                 : value.toFixed(4); }
  function column(system, query, metric) {
    var judged = data.judgments[query] || {};
    var items = (data.lists[system] || {})[query] || [];
    var values = (data.values[query] || {})[system] || {};
    var part = add(box, "div", undefined, "ranking");
    part.dataset.system = system;
    add(part, "h3", system + ": " + (data.labels[metric] || metric) + " = " +
        fixed(values[metric]));
    if (!items.length) { add(part, "p", "no list for this query", "note"); }
    var list = add(part, "ol");
    items.forEach(function (entry) {
      var item = entry[0], grade = judged[item];
      var kind = grade === undefined ? "unjudged" : (grade > 0 ? "relevant" : "judged");
      var line = add(list, "li", item, kind);
      line.dataset.item = item;
      if (grade !== undefined) { add(line, "span", "grade " + grade, "grade"); }
    });
  }
  function show(row) {
    if (!box) { return; }
    document.querySelectorAll("tr.query.chosen").forEach(function (r) {
      r.classList.remove("chosen");
    });
    row.classList.add("chosen");
    var query = row.dataset.query, system = row.dataset.system, metric = row.dataset.metric;
    box.textContent = "";
    box.dataset.query = query;
    document.getElementById("rankings-title").textContent = "Rankings of " + query;
    document.getElementById("rankings-caption").textContent =
      system + " minus " + data.reference + " on " + (data.labels[metric] || metric) + ": " +
      Number(row.dataset.difference).toFixed(4) + " (first " + data.depth + " ranks)";
    column(data.reference, query, metric);
    column(system, query, metric);
  }
  document.querySelectorAll("tr.query").forEach(function (row) {
    row.addEventListener("click", function () { show(row); });
    row.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { show(row); }
    });
  });
  var first = document.querySelector(".metric-differences:not([hidden]) tr.query");
  if (first && box) { show(first); }
})();
"""
