"""The HTML report page (``duckrank.reports.html_report``) and the notebook table
(``Report._repr_html_``) opened in a real headless Chromium (Debian's package, driven through the
DevTools protocol: ``tests/reports/chromium.py``): no console error or exception, no request
but the file itself, every number shown equal to the report's, every name from data shown as
text (never as markup), and a screenshot.

Where the expected values come from: the means, curves and differences are recomputed here with
pandas from ``report.per_query`` (the per-query values every number of the report comes from,
``duckrank.evaluate``'s); the rankings from the run tables themselves, sorted as trec_eval sorts
(score descending, ties by item id descending); the judged marks from the qrels table.

One Chromium start for the module (about 3 s); the data is small (3 systems x 40 queries).
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from headless_chromium import CHROMIUM, Browser

import duckrank
from duckrank.evaluation import column_names
from duckrank.reports.compare import Inputs, systems_of
from duckrank.reports.html_report import (
    SHOWN,
    html_report,
    listed_queries,
    ranking_depth,
    reference,
    write_html,
)
from duckrank.reports.rankings import read_rankings

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"no Chromium at {CHROMIUM}: apt-get install chromium (scripts/test installs it)")

# Names from data with markup in them: shown as text, never run or rendered.
NASTY_SYSTEM = '<b>bold</b> & "sys"'
NASTY_QUERY = "q<i>07</i>&amp;"
NASTY_ITEM = "<img src=x onerror=alert(1)>"
METRICS = ["ndcg@1", "ndcg@5", "ndcg@10", "mrr"]
QUERIES = 40


def _data() -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Three systems ranking 12 of 20 items per query; graded qrels (0 to 3) on 8 items."""
    rng = np.random.default_rng(7)
    queries = [NASTY_QUERY if q == 7 else f"q{q:02d}" for q in range(QUERIES)]
    qrels = []
    for query in queries:
        for item in rng.choice(20, 8, replace=False):
            qrels.append((query, f"d{item:02d}", int(rng.integers(0, 4))))
    qrels.append((queries[0], NASTY_ITEM, 2))
    runs = {}
    for s, name in enumerate(["bm25", "dense", NASTY_SYSTEM]):
        rows = []
        for query in queries:
            items = [f"d{i:02d}" for i in rng.choice(20, 12, replace=False)]
            if query == queries[0]:
                items[s] = NASTY_ITEM
            # Scores rounded to a tenth: ties happen, and are broken by item, descending.
            scores = np.round(rng.random(12) + 0.3 * s, 1)
            rows += [(query, item, float(score)) for item, score in zip(items, scores, strict=True)]
        runs[name] = pd.DataFrame(rows, columns=["query", "item", "score"])
    return runs, pd.DataFrame(qrels, columns=["query", "item", "grade"])


@pytest.fixture(scope="module")
def browser():
    started = Browser()
    yield started
    started.close()


@pytest.fixture(scope="module")
def made(tmp_path_factory, browser):
    runs, qrels = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = duckrank.compare(runs, qrels, METRICS, baseline="bm25", test="t", trials=200)
        con = duckrank.connect()
        inputs = Inputs(systems_of(runs, None), qrels, report.metrics, column_names({}))
        rankings = read_rankings(con, inputs, listed_queries(report), ranking_depth(report))
    path = tmp_path_factory.mktemp("html") / "report.html"
    write_html(report, path, rankings)
    page = browser.open(path.as_uri())
    return report, runs, qrels, path, page


def _per_query(report) -> pd.DataFrame:
    frame = report.per_query
    frame["query"] = frame["query"].astype(str)
    return frame


def test_opens_without_error_or_request(made) -> None:
    _, _, _, path, page = made
    assert page.errors == []
    assert page.requests == [path.as_uri()]  # nothing fetched: one self-contained file


def test_table_numbers_are_the_reports(made) -> None:
    """Each cell's mean (shown to 4 decimals, and every digit in data-mean) is the mean of the
    system's per-query values; bold marks the highest shown per metric."""
    report, _, _, _, page = made
    cells = page.evaluate("""[...document.querySelectorAll('table.comparison span.mean')].map(
        s => [s.dataset.system, s.dataset.metric, Number(s.dataset.mean),
              s.firstChild.textContent.trim(), s.querySelector('strong') !== null])""")
    means = _per_query(report).groupby(["system", "metric"])["value"].mean()
    assert len(cells) == len(report.systems) * len(report.metrics)
    for system, metric, mean, shown, bold in cells:
        assert mean == pytest.approx(means[system, metric], abs=1e-12)
        assert shown == f"{means[system, metric]:.4f}"
        best = max(round(means[s, metric], 4) for s in report.systems)
        assert bold == (round(means[system, metric], 4) == best), (system, metric)
    names = page.evaluate("""[...document.querySelectorAll('table.comparison tbody tr')].map(
        r => r.children[1].textContent)""")
    assert names == list(report.systems) and NASTY_SYSTEM in names
    assert page.evaluate("document.querySelectorAll('table b, h3 b, img').length") == 0


def test_curves_are_the_means_at_each_k(made) -> None:
    report, _, _, _, page = made
    points = page.evaluate("""[...document.querySelectorAll('circle.point')].map(
        c => [c.dataset.system, Number(c.dataset.k), Number(c.dataset.value)])""")
    means = _per_query(report).groupby(["system", "metric"])["value"].mean()
    label = next(m for m in report.metrics if m.endswith("@5")).rpartition("@")[0]
    assert len(points) == 3 * len(report.systems)
    for system, k, value in points:
        assert value == pytest.approx(means[system, f"{label}@{k}"], abs=1e-12)


def test_differences_are_sorted_and_the_reports(made) -> None:
    """Per (metric, system): the listed rows are the SHOWN largest gains and losses of the
    system's per-query value minus the baseline's, in descending order."""
    report, _, _, _, page = made
    rows = page.evaluate("""[...document.querySelectorAll('tr.query')].map(r => [
        r.dataset.metric, r.dataset.system, r.dataset.query, Number(r.dataset.difference),
        r.children[2].textContent])""")
    wide = _per_query(report).pivot_table(index=["metric", "query"], columns="system",
                                          values="value")
    base = reference(report)
    for metric in report.metrics:
        for system in report.systems[1:]:
            listed = [r for r in rows if r[0] == metric and r[1] == system]
            expected = (wide.loc[metric, system] - wide.loc[metric, base]).dropna()
            ordered = sorted(expected.to_numpy(), reverse=True)
            shown = [d for *_, d, _ in listed]
            assert shown == pytest.approx(ordered[:SHOWN] + ordered[-SHOWN:], abs=1e-12)
            for _, _, query, difference, text in listed:
                assert difference == pytest.approx(expected[query], abs=1e-12)
                assert text == f"{expected[query]:+.4f}"


def _expected_list(run: pd.DataFrame, query: str, depth: int) -> list[str]:
    rows = run[run["query"] == query].sort_values(["score", "item"], ascending=False)
    return rows["item"].head(depth).tolist()


def _shown_rankings(page) -> dict:
    return page.evaluate("""({query: document.getElementById('rankings').dataset.query,
        lists: [...document.querySelectorAll('#rankings .ranking')].map(d => [d.dataset.system,
            [...d.querySelectorAll('li')].map(li => [li.dataset.item, li.className])])})""")


def test_a_chosen_querys_rankings_side_by_side(made) -> None:
    """The first listed query is shown on load; clicking another row shows its rankings: the
    baseline's and the row's system's lists as the runs rank them, judged items marked."""
    report, runs, qrels, _, page = made
    depth = ranking_depth(report)
    first = page.evaluate("document.querySelector('tr.query').dataset.query")
    target = page.evaluate(f"""(() => {{
        const row = [...document.querySelectorAll('tr.query')].find(r =>
            r.dataset.query === {NASTY_QUERY!r} || r.dataset.system === {NASTY_SYSTEM!r});
        row.click(); return [row.dataset.query, row.dataset.system]; }})()""")
    shown = _shown_rankings(page)
    assert shown["query"] == target[0] and (first == target[0] or shown["query"] != first)
    assert [system for system, _ in shown["lists"]] == ["bm25", target[1]]
    grades = {(q, i): g for q, i, g in qrels.itertuples(index=False)}
    for system, items in shown["lists"]:
        assert [item for item, _ in items] == _expected_list(runs[system], target[0], depth)
        for item, mark in items:
            grade = grades.get((target[0], item))
            assert mark == ("unjudged" if grade is None else
                            "relevant" if grade > 0 else "judged"), (system, item)
    assert page.errors == []


def test_item_ids_are_text(made) -> None:
    """The query whose lists hold an item id that is an <img> tag: shown as text."""
    _, runs, _, _, page = made
    query = runs["bm25"]["query"].iloc[0]
    page.evaluate(f"""(() => {{ const row = [...document.querySelectorAll('tr.query')].find(
        r => r.dataset.query === {query!r}); if (row) row.click(); }})()""")
    shown = _shown_rankings(page)
    assert shown["query"] == query  # listed: the data makes it a large gain
    assert NASTY_ITEM in [item for _, items in shown["lists"] for item, _ in items]
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.errors == [] and len(page.requests) == 1


def test_metric_choice_switches_the_differences(made) -> None:
    report, _, _, _, page = made
    visible = page.evaluate("""(() => { const choice = document.getElementById('metric-choice');
        choice.value = choice.options[3].value; choice.dispatchEvent(new Event('change'));
        return [...document.querySelectorAll('.metric-differences')].filter(d => !d.hidden)
            .map(d => d.dataset.metric); })()""")
    assert visible == [report.metrics[3]]


def test_screenshot(made, tmp_path) -> None:
    """A PNG of the whole page (looked at by a person when the report page changed:
    DUCKRANK_SCREENSHOT=path keeps a copy)."""
    _, _, _, _, page = made
    shot = tmp_path / "report.png"
    page.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    if os.environ.get("DUCKRANK_SCREENSHOT"):
        shutil.copy(shot, os.environ["DUCKRANK_SCREENSHOT"])


def test_notebook_table_in_chromium(made, browser, tmp_path) -> None:
    """``Report._repr_html_`` (what Jupyter shows) renders as a table with the report's means,
    bold on the best, marks as superscript letters."""
    report = made[0]
    path = tmp_path / "notebook.html"
    path.write_text(f"<!DOCTYPE html><meta charset='utf-8'><body>{report._repr_html_()}",
                    encoding="utf-8")
    page = browser.open(path.as_uri())
    assert page.errors == []
    rows = page.evaluate("""[...document.querySelectorAll('tbody tr')].map(r =>
        [...r.children].map(c => c.textContent))""")
    summary = report.frame()
    for row, system in zip(rows, report.systems, strict=True):
        for metric, text in zip(report.metrics, row[2:], strict=True):
            cell = summary[(summary.system == system) & (summary.metric == metric)].iloc[0]
            assert text.startswith(f"{cell['mean']:.4f}{cell['beats']}")
    bold = page.evaluate("document.querySelectorAll('tbody strong').length")
    assert bold == sum(len(report.best(m)) for m in report.metrics)


def test_without_rankings_and_bad_arguments(made) -> None:
    report = made[0]
    page = html_report(report)
    assert 'id="rankings"' not in page and "<svg" in page
    with pytest.raises(ValueError, match="html_report: shown must be a positive whole number, "
                                         "got 0"):
        html_report(report, shown=0)
    with pytest.raises(ValueError, match="read_rankings: depth must be a whole number from 1 "
                                         "to 100, got 0"):
        read_rankings(duckrank.connect(), Inputs(systems_of({"a": made[1]["bm25"]}, None),
                                                 made[2], METRICS, column_names({})), [], 0)
    with pytest.raises(ValueError, match=r"write_html: path 'r.pdf' must end in \.html"):
        write_html(report, "r.pdf")
    with pytest.raises(ValueError, match="the folder '/nowhere' does not exist"):
        write_html(report, "/nowhere/r.html")


def test_page_is_one_file(made) -> None:
    """Nothing in the markup can fetch: no link, image, frame, external script or style URL
    (outside the data block, whose ids are JSON strings), and no address but SVG's namespace."""
    text = Path(made[3]).read_text(encoding="utf-8")
    markup = text[:text.index('<script type="application/json"')]
    for fetching in ("<link", "<img", "<iframe", "src=", "url(", "@import"):
        assert fetching not in markup
    assert "://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_report_command_writes_the_page(browser, tmp_path, capsys) -> None:
    """``duckrank report``: compare's inputs and options, the page at -o; its table is the one
    ``duckrank.compare`` gives for the same files and options. A bad -o fails before anything is
    read (the qrels path here does not exist)."""
    from duckrank.cli import main

    sample = Path(duckrank.__file__).parent / "data"
    out = tmp_path / "report.html"
    metrics = ["-m", "ndcg@5", "-m", "ndcg@10", "-m", "mrr"]
    assert main(["report", str(sample / "sample.run"), str(sample / "sample.qrels"), "--by",
                 "tag", *metrics, "--test", "t", "-o", str(out), "--quiet"]) == 0
    assert capsys.readouterr().err.endswith(f"duckrank report: wrote {out}\n")
    page = browser.open(out.as_uri())
    assert page.errors == [] and page.requests == [out.as_uri()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = duckrank.compare(str(sample / "sample.run"), str(sample / "sample.qrels"),
                                    ["ndcg@5", "ndcg@10", "mrr"], by="tag", test="t")
    means = page.evaluate("""[...document.querySelectorAll('span.mean')].map(
        s => [s.dataset.system, s.dataset.metric, Number(s.dataset.mean)])""")
    assert len(means) == len(expected.frame())
    assert {(system, metric): mean for system, metric, mean in means} == {
        (r.system, r.metric): r.mean for r in expected.frame().itertuples()}
    assert page.evaluate("document.querySelectorAll('#rankings li').length") > 0

    code = main(["report", str(sample / "sample.run"), str(tmp_path / "none.qrels"), "--by",
                 "tag", "-m", "mrr", "-o", str(tmp_path / "report.pdf")])
    assert code == 1 and capsys.readouterr().err == (
        f"duckrank report: --output {tmp_path / 'report.pdf'} must end in .html (the page is "
        "one HTML file)\n")
