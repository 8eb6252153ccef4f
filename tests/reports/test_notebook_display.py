"""What a notebook, a paper and a spreadsheet get from a comparison report (issue 30, "reports
where people look"): the HTML and Markdown displays (best mean bold, marks readable), LaTeX
(bold, transposed, a caption in a reader's words, reader labels), CSV with the p-values, the
metric listing's display, ``plot()`` without a path (a Figure) and PDF, and the plots' palette,
separators, distribution and legends. The page in a real browser: tests/reports/
test_html_report.py.

Expected values come from the report's own frames (``frame()``, ``frame('comparisons')``: the
numbers the SQL computed) and from hand-made per-query tables where a plot is checked.
"""

from __future__ import annotations

import csv
import io
import warnings
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

import duckrank
from duckrank.reports.labels import reader_label
from duckrank.reports.listing import metric_listing
from duckrank.reports.plots import GAIN_COLOR, LOSS_COLOR, PALETTE, plot

QUERIES = 60


@pytest.fixture(scope="module")
def report():
    """Three systems on 60 queries, one relevant item (0) among 6 ranked: 'strong' ranks it
    first everywhere, 'weak' at 2 to 5, 'mixed' first on odd queries and last on even ones; the
    t-test against 'weak' is significant for 'strong'."""
    qrels = pd.DataFrame({"query": range(QUERIES), "item": 0, "grade": 1})
    rows = []
    for query in range(QUERIES):
        for system, at in (("weak", 1 + query % 4), ("strong", 0),
                           ("mixed", 0 if query % 2 else 5)):
            items = [1, 2, 3, 4, 5]
            items.insert(at, 0)
            rows += [(system, query, item, 10.0 - rank) for rank, item in enumerate(items)]
    run = pd.DataFrame(rows, columns=["system", "query", "item", "score"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return duckrank.compare(run, qrels, ["mrr", "ndcg@1", "ndcg@3", "ndcg@5"], by="system",
                                baseline="weak", test="t", trials=200)


class _Cells(HTMLParser):
    """The text of each <td>, and whether it holds <strong> and <sup>."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[dict]] = []
        self._cell: dict | None = None

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = {"text": "", "strong": False, "sup": ""}
            self.rows[-1].append(self._cell)
        elif self._cell is not None and tag in ("strong", "sup"):
            self._cell[tag] = True if tag == "strong" else dict(attrs).get("title", "")

    def handle_endtag(self, tag) -> None:
        if tag == "td":
            self._cell = None

    def handle_data(self, data) -> None:
        if self._cell is not None:
            self._cell["text"] += data


def test_html_display_bolds_the_best_and_marks_readably(report) -> None:
    summary = report.frame()
    parser = _Cells()
    parser.feed(report._repr_html_())
    rows = [row for row in parser.rows if row]
    assert [row[1]["text"] for row in rows] == list(report.systems)
    for row, system in zip(rows, report.systems, strict=True):
        for cell, metric in zip(row[2:], report.metrics, strict=True):
            expected = summary[(summary.system == system) & (summary.metric == metric)].iloc[0]
            assert cell["text"].startswith(f"{expected['mean']:.4f}{expected['beats']} [")
            best = summary[summary.metric == metric]["mean"].round(4).max()
            assert cell["strong"] == (round(expected["mean"], 4) == best)
            beaten = ", ".join(f"{c} ({report.systems['abc'.index(c)]})"
                               for c in expected["beats"])
            assert cell["sup"] == (f"beats {beaten}" if beaten else "")  # names the beaten
    # strong beats weak (c) on mrr; on ndcg@1 every difference is 1: no t-test, no mark.
    marks = summary[summary.system == "strong"].set_index("metric")["beats"]
    assert marks["mrr"] == "c" and marks["ndcg@1"] == ""


def test_markdown_display_is_to_markdown_with_bold(report) -> None:
    markdown = report._repr_markdown_()
    assert markdown == report.to_markdown()
    strong = report.frame().query("system == 'strong'")
    assert f"**{strong['mean'].iloc[0]:.4f}**ᶜ" in markdown
    assert "Bold: the highest mean of each metric" in markdown


def test_latex_bold_transposed_and_readable(report) -> None:
    latex = report.to_latex()
    assert r"\textbf{1.0000}\textsuperscript{c}" in latex
    assert r"& System & MRR & nDCG@1 & nDCG@3 & nDCG@5 \\" in latex
    assert "frame(" not in latex and "'filled'" not in latex
    transposed = report.to_latex(transpose=True)
    assert r"\begin{tabular}{lrrr}" in transposed
    assert r"Metric & mixed (a) & strong (b) & weak (c) \\" in transposed
    assert transposed.count(r"\textbf{") == latex.count(r"\textbf{")
    assert "MRR & " in transposed


def test_reader_labels() -> None:
    assert reader_label("ndcg(gain=exponential)@10") == "nDCG@10 (gain: exponential)"
    assert reader_label("map@100") == "MAP@100" and reader_label("precision@5") == "P@5"
    assert reader_label("catalog_coverage@10") == "catalog_coverage@10"  # unknown: as written


def test_csv_has_p_values_and_marks(report) -> None:
    rows = list(csv.DictReader(io.StringIO(report.to_csv())))
    comparisons = report.frame("comparisons")
    assert {"beats", "p_value_vs_c", "p_adjusted_vs_c"} <= set(rows[0])
    for row in rows:
        if row["system"] == "weak":  # the baseline: compared with every other system
            assert row["p_value_vs_c"] == "" and row["p_value_vs_a"] != ""
            continue
        expected = comparisons[(comparisons.metric == row["metric"])
                               & (comparisons.system == row["system"])].iloc[0]
        for column, name in (("p_adjusted_vs_c", "p_adjusted"), ("p_value_vs_c", "p_value")):
            # Empty where the comparison has no p-value (ndcg@1: every difference equal).
            shown = float(row[column]) if row[column] else float("nan")
            assert shown == pytest.approx(expected[name], nan_ok=True, rel=0, abs=0)


def test_metric_listing_displays() -> None:
    listing = metric_listing()
    assert listing._repr_html_().count("<tr>") == len(listing.rows) + 1
    assert "| ndcg |" in listing._repr_markdown_()
    assert any(row[0] == "ndcg" for row in listing.rows)


def test_evaluate_result_is_a_frame_notebooks_show() -> None:
    """evaluate returns a pandas (or polars) DataFrame, which Jupyter shows as a table."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sample's one unranked query
        frame = duckrank.evaluate("duckrank/data/sample.run", "duckrank/data/sample.qrels",
                                  ["mrr"], by="tag")
    assert "<table" in frame._repr_html_()


def test_plot_without_path_is_a_figure_and_pdf_is_written(report, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    figure = report.plot(kind="curves", metric="ndcg")
    assert isinstance(figure, Figure)
    out = io.BytesIO()
    figure.savefig(out, format="pdf")
    assert out.getvalue()[:5] == b"%PDF-"
    data = report.plot(tmp_path / "curves.pdf", kind="curves", metric="ndcg")
    assert (tmp_path / "curves.pdf").read_bytes()[:5] == b"%PDF-"
    assert set(data.series) == set(report.systems)


def _difference_table(n: int) -> pd.DataFrame:
    values = np.linspace(-0.5, 0.5, n)
    return pd.DataFrame({
        "system": ["a"] * n + ["b"] * n, "query": list(range(n)) * 2, "metric": "mrr",
        "value": np.r_[np.full(n, 0.5), 0.5 + values]})


def test_difference_plot_is_colour_blind_safe_with_separators() -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_hex

    figure = plot(_difference_table(12_000), kind="difference", baseline="a")
    axes = figure.axes[0]
    colours = {to_hex(c.get_facecolor()[0]) for c in axes.collections if len(c.get_paths())}
    assert colours == {GAIN_COLOR.lower(), LOSS_COLOR.lower()}
    figure.draw_without_rendering()
    labels = [t.get_text() for t in axes.get_xticklabels()]
    assert "10,000" in labels
    texts = [t.get_text() for t in axes.get_legend().get_texts()]
    assert "b better on 6,000" in texts and "a better on 6,000" in texts
    assert "12,000 queries" in axes.get_title()


def test_distribution_shows_a_point_mass_when_quartiles_coincide() -> None:
    """80 of 100 queries at 0: the box is a line at 0 (q1 = median = q3), the histogram's bar at
    0 is the widest; the legend is outside the axes (it covers no box)."""
    pytest.importorskip("matplotlib")
    from matplotlib.patches import Rectangle

    values = np.r_[np.zeros(80), np.linspace(0.1, 1, 20)]
    table = pd.DataFrame({"system": "a", "query": range(100), "metric": "mrr", "value": values})
    figure = plot(table, kind="distribution")
    axes = figure.axes[0]
    bars = [p for p in axes.patches
            if isinstance(p, Rectangle) and p.get_width() > 0 and p.get_height() > 0]
    widest = max(bars, key=lambda p: p.get_width())
    assert widest.get_y() <= 0 <= widest.get_y() + widest.get_height()
    assert widest.get_width() == pytest.approx(0.8)
    figure.draw_without_rendering()
    legend, box = axes.get_legend().get_window_extent(), axes.get_window_extent()
    assert legend.x0 >= box.x1  # right of the plotting area


def test_curves_use_the_palette(report) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_hex

    figure = report.plot(kind="curves", metric="ndcg")
    colours = [to_hex(line.get_color()) for line in figure.axes[0].get_lines()]
    assert colours == [c.lower() for c in PALETTE[:len(report.systems)]]
