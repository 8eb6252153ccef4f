"""``duckrank.compare``: comparison reports. Expected values come from ranx's ``compare`` on the
same runs (means, t-test p-values and significance marks), scipy (``ttest_rel``) and hand
calculations written out in the tests (Holm, Bonferroni, the zero for a missing query)."""

from __future__ import annotations

import csv
import io
import json
import math
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import duckrank
from duckrank.reports.compare import adjusted_sql

QUERIES = 40
ITEMS = 15
METRICS = ["ndcg@10", "map@100", "mrr", "precision@5", "recall@10"]


def _runs(seed: int = 7) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Three systems over QUERIES queries with binary qrels (items 0-2 relevant, plus one more per
    query); each ranks ITEMS items by a random score, the relevant ones pushed up by a shift per
    system, scores distinct (no ties, whose order ranx breaks its own way). System 'low' does not
    rank query 5."""
    rng = np.random.default_rng(seed)
    qrels = pd.DataFrame(
        [(q, i, 1) for q in range(QUERIES) for i in (0, 1, 2, 3 + q % 7)],
        columns=["query", "item", "grade"],
    )
    relevant = {(q, i) for q, i, _ in qrels.itertuples(index=False)}
    runs = {}
    for name, shift in (("low", 0.0), ("mid", 0.35), ("high", 0.45)):
        rows = [(q, i, rng.random() + shift * ((q, i) in relevant))
                for q in range(QUERIES) for i in range(ITEMS) if not (name == "low" and q == 5)]
        runs[name] = pd.DataFrame(rows, columns=["query", "item", "score"])
    return runs, qrels


@pytest.fixture(scope="module")
def data() -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    return _runs()


@pytest.fixture(scope="module")
def shared():
    """One connection for the module's reports (connecting costs more than a small report)."""
    connection = duckrank.connect()
    yield connection
    connection.close()


def _compare(shared, *args, **kwargs) -> duckrank.reports.compare.Report:
    return duckrank.compare(*args, connection=shared, **kwargs)


def _ranx_compare(runs: dict[str, pd.DataFrame], qrels: pd.DataFrame, metrics: list[str]):
    ranx = pytest.importorskip("ranx")

    def nested(table: pd.DataFrame, value: str) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for q, i, v in table[["query", "item", value]].itertuples(index=False):
            out.setdefault(str(q), {})[str(i)] = v
        return out

    ranx_qrels = ranx.Qrels(nested(qrels, "grade"))
    ranx_runs = [ranx.Run(nested(run, "score"), name=name) for name, run in runs.items()]
    # make_comparable: a query missing from a run scores 0, as in duckrank's report.
    return ranx.compare(ranx_qrels, ranx_runs, metrics, stat_test="student", max_p=0.05,
                        make_comparable=True)


def test_means_p_values_and_marks_equal_ranx(shared, data) -> None:
    runs, qrels = data
    report = _compare(shared, runs, qrels, METRICS, test="t", alpha=0.05, correction=None)
    expected = _ranx_compare(runs, qrels, METRICS)
    summary = report.frame()
    for row in summary.itertuples():
        assert row.mean == pytest.approx(expected.results[row.system][row.metric], abs=1e-12)
        # ranx's mark rule: significant (p <= max_p) and the higher mean.
        assert row.beats == expected.get_superscript_for_latex(row.system, row.metric), row
    for row in report.frame("comparisons").itertuples():
        ranx_p = expected.comparisons[row.system, row.other][row.metric]["p_value"]
        assert row.p_value == pytest.approx(ranx_p, abs=1e-9)
    # The data has marks to compare (not only empty strings).
    assert set(summary["beats"]) >= {"a", "ab"}


def test_missing_query_scores_zero(shared, data) -> None:
    """'low' did not rank query 5: it is scored as an empty list (ndcg 0, as trec_eval -c and
    duckrank.evaluate score it), counted in n and in filled, and the report's mean is evaluate's.
    Hand check: trec_eval's convention leaves query 5 out (the mean of the 39 ranked queries;
    binary grades and distinct scores, so its ndcg@10 is the default's), and adding the 0 for
    query 5 makes that mean 39/40 of itself."""
    runs, qrels = data
    with pytest.warns(duckrank.evaluation.UnrankedQueries) as caught:
        report = _compare(shared, runs, qrels, ["ndcg@10"], test="t", level=None)
    assert [str(w.message).split(":")[0] for w in caught] == ["system 'low'"]  # once, by name
    values = report.per_query
    low = values[(values["system"] == "low") & (values["query"] == 5)]
    assert isinstance(values, pd.DataFrame)  # pandas in, pandas out
    assert low["value"].tolist() == [0.0]
    row = report.frame().set_index("system").loc["low"]
    assert (row["n"], row["filled"]) == (QUERIES, 1)
    with pytest.warns(duckrank.evaluation.UnrankedQueries):
        scored = duckrank.evaluate(runs["low"], qrels, "ndcg@10", connection=shared)
        skipped = duckrank.evaluate(runs["low"], qrels, "ndcg@10", convention="trec_eval",
                                    connection=shared)
    assert (scored["unranked"][0], skipped["scored"][0]) == (1, QUERIES - 1)
    assert row["mean"] == pytest.approx(scored["ndcg@10"][0], abs=1e-15)
    assert row["mean"] == pytest.approx(skipped["ndcg@10"][0] * (QUERIES - 1) / QUERIES,
                                        abs=1e-12)


def test_query_no_system_ranked_scores_zero_for_every_system(shared) -> None:
    """Queries 1-3 each have one relevant item (item q); with by='system', x ranks query 1 and
    y queries 1 and 2; nobody ranks query 3, and query 4 is not judged. Hand calculation (mrr):
    x: q1 [2, 1] -> 1/2, q2 and q3 empty -> 0, 0: mean 1/6, filled 2; y: q1 [1] -> 1,
    q2 [5, 2] -> 1/2, q3 -> 0: mean 1/2, filled 1. Query 3 is in both means and pairs as a
    zero difference: x - y = -1/2, -1/2, 0, mean -1/3 over n = 3. Query 4 (unjudged) is in
    neither. evaluate's means are the same. One UnrankedQueries warning per system, by name
    (the evaluation's own, over both systems, is not shown)."""
    qrels = pd.DataFrame({"query": [1, 2, 3], "item": [1, 2, 3], "grade": [1, 1, 1]})
    run = pd.DataFrame({"system": ["x", "x", "y", "y", "y", "x"], "query": [1, 1, 1, 2, 2, 4],
                        "item": [2, 1, 1, 5, 2, 4], "score": [2.0, 1.0, 1.0, 2.0, 1.0, 1.0]})
    with pytest.warns(duckrank.evaluation.UnrankedQueries) as caught:
        report = _compare(shared, run, qrels, ["mrr"], by="system", test="t", level=None,
                          correction=None)
    assert [str(w.message).split(" no list")[0] for w in caught] == [
        "system 'x': 2 judged queries have", "system 'y': 1 judged query has"]
    values = {(r.system, r.query): r.value for r in report.per_query.itertuples()}
    assert values == {("x", 1): 0.5, ("x", 2): 0.0, ("x", 3): 0.0,
                      ("y", 1): 1.0, ("y", 2): 0.5, ("y", 3): 0.0}
    summary = report.frame().set_index("system")
    assert summary["n"].tolist() == [3, 3] and summary["filled"].tolist() == [2, 1]
    assert summary["mean"].tolist() == pytest.approx([1 / 6, 1 / 2], abs=1e-15)
    comparison = report.frame("comparisons").iloc[0]
    assert (comparison["n"], comparison["mean_diff"]) == (3, pytest.approx(-1 / 3, abs=1e-15))
    with pytest.warns(duckrank.evaluation.UnrankedQueries):
        scored = duckrank.evaluate(run, qrels, "mrr", by="system", connection=shared)
    assert scored["mrr"].tolist() == pytest.approx(summary["mean"].tolist(), abs=1e-15)


def test_undefined_metric_stays_undefined(shared) -> None:
    """Query 2 has no relevant item: ndcg is undefined there for the system that ranked it, and
    stays undefined (not 0) for the system that did not; precision is 0 on it for 'x' and 0 for
    'y' (not ranked)."""
    qrels = pd.DataFrame({"query": [1, 1, 2], "item": [1, 2, 1], "grade": [1, 1, 0]})
    x = pd.DataFrame({"query": [1, 1, 2], "item": [1, 3, 1], "score": [2.0, 1.0, 1.0]})
    y = pd.DataFrame({"query": [1, 1], "item": [3, 2], "score": [2.0, 1.0]})
    report = _compare(shared, {"x": x, "y": y}, qrels, ["ndcg@10", "precision@1"], test="t",
                              level=None, correction=None)
    values = {(r.system, r.query, r.metric): r.value for r in report.per_query.itertuples()}
    assert math.isnan(values["x", 2, "ndcg@10"]) and math.isnan(values["y", 2, "ndcg@10"])
    assert values["x", 2, "precision@1"] == 0.0 and values["y", 2, "precision@1"] == 0.0
    means = report.frame().set_index(["system", "metric"])["mean"]
    assert means["x", "precision@1"] == 0.5  # (1 + 0) / 2
    assert means["y", "ndcg@10"] == pytest.approx(1 / math.log2(3) / (1 + 1 / math.log2(3)))


def test_holm_and_bonferroni_against_hand_calculation(shared) -> None:
    """p = 0.01, 0.04, 0.03 (m = 3). Holm: sorted 0.01, 0.03, 0.04 times 3, 2, 1 = 0.03, 0.06,
    0.04, then the running maximum: 0.03, 0.06, 0.06. Bonferroni: 3p capped at 1: 0.03, 0.12,
    0.09. A NULL p-value is not in the family of the other metric."""
    con = shared.cursor()
    con.execute("""CREATE TEMP TABLE tested AS SELECT * FROM (VALUES
        (0, 0, 1, 0.01::DOUBLE), (0, 0, 2, 0.04), (0, 1, 2, 0.03), (1, 0, 1, 0.5), (1, 0, 2, NULL))
        t(metric, a, b, p_value)""")

    def adjusted(correction: str | None) -> list:
        sql = adjusted_sql("tested", correction)
        return con.sql(f"SELECT p_adjusted FROM ({sql}) ORDER BY metric, a, b").fetchall()

    holm = [row[0] for row in adjusted("holm")]
    assert holm[:3] == pytest.approx([0.03, 0.06, 0.06]) and holm[3:] == [0.5, None]
    bonferroni = [row[0] for row in adjusted("bonferroni")]
    assert bonferroni[:3] == pytest.approx([0.03, 0.12, 0.09]) and bonferroni[3:] == [0.5, None]
    assert [row[0] for row in adjusted(None)][:3] == pytest.approx([0.01, 0.04, 0.03])


def test_holm_in_the_report_from_scipy_p_values(shared, data) -> None:
    """The report's Holm-adjusted p-values from scipy's t-test p-values, adjusted by hand."""
    stats = pytest.importorskip("scipy.stats")
    runs, qrels = data
    report = _compare(shared, runs, qrels, ["ndcg@10"], test="t", correction="holm", level=None)
    values = report.per_query.pivot(index="query", columns="system", values="value")
    pairs = [("low", "mid"), ("low", "high"), ("mid", "high")]
    p = {pair: stats.ttest_rel(values[pair[0]], values[pair[1]]).pvalue for pair in pairs}
    order = sorted(pairs, key=p.get)
    expected, running = {}, 0.0
    for j, pair in enumerate(order):
        running = max(running, (len(pairs) - j) * p[pair])
        expected[pair] = min(1.0, running)
    for row in report.frame("comparisons").itertuples():
        assert row.p_adjusted == pytest.approx(expected[row.system, row.other], rel=1e-9)
        assert row.significant == (row.p_adjusted <= 0.05)


def test_baseline_compares_against_it_only(shared, data) -> None:
    runs, qrels = data
    report = _compare(shared, runs, qrels, ["ndcg@10", "map@100"], baseline="low",
                              test="randomization", trials=200)
    comparisons = report.frame("comparisons")
    assert set(zip(comparisons["system"], comparisons["other"], strict=True)) == {
        ("mid", "low"), ("high", "low")}
    # The paired interval of the difference holds its mean.
    assert (comparisons["ci_low"] <= comparisons["mean_diff"]).all()
    assert (comparisons["mean_diff"] <= comparisons["ci_high"]).all()
    summary = report.frame().set_index(["system", "metric"])
    # Only the baseline's letter can mark a system; 'mid' vs 'high' is not tested.
    assert summary.loc[("high", "ndcg@10"), "beats"] in ("", "a")
    assert "b" not in "".join(summary["beats"])
    assert "against the baseline low" in str(report)


def test_formats(shared, data) -> None:
    runs, qrels = data
    report = _compare(shared, runs, qrels, ["ndcg@10", "mrr"], test="t", trials=200)
    mean = report.frame()["mean"][0]

    table = str(report)
    assert table == report.table() and f"{mean:.4f}" in table
    assert f"{mean:.2f}" in report.table(digits=2)

    latex = report.to_latex()
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert latex.count(rule) == 1
    assert r"\begin{tabular}{llrr}" in latex

    markdown_it = pytest.importorskip("markdown_it")  # a CommonMark parser with tables
    tokens = markdown_it.MarkdownIt("commonmark").enable("table").parse(report.to_markdown())
    cells = [t.content for t in tokens if t.type == "inline"]
    assert [t.type for t in tokens].count("tr_open") == 1 + len(report.systems)
    assert cells[:4] == ["#", "system", "ndcg@10", "mrr"]

    parsed = json.loads(report.to_json())
    assert parsed == json.loads(json.dumps(report.to_dict()))
    assert parsed["summary"][0]["mean"] == mean  # every digit
    assert parsed["options"]["test"] == "t"

    rows = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert float(rows[0]["mean"]) == mean and len(rows) == 2 * len(report.systems)


def test_leaves_no_objects_on_the_connection(shared, data) -> None:
    runs, qrels = data
    before = shared.sql("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchall()
    _compare(shared, runs, qrels, ["ndcg@10"], test="t", level=None)
    assert shared.sql("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchall() == before
    assert shared.sql("SELECT count(*) FROM duckdb_views() WHERE view_name LIKE 'duckrank%'"
                      ).fetchall() == [(0,)]


def test_polars_in_polars_out(shared, data) -> None:
    polars = pytest.importorskip("polars")
    runs, qrels = data
    report = _compare(shared, {k: polars.from_pandas(v) for k, v in runs.items()}, qrels,
                              ["ndcg@10"], test="t", level=None)
    assert isinstance(report.frame(), polars.DataFrame)
    assert isinstance(report.per_query, polars.DataFrame)
    assert report.per_query.columns == ["system", "query", "metric", "value"]


def test_one_long_table_by_system_equals_a_mapping(shared, data) -> None:
    runs, qrels = data
    long = pa.concat_tables([
        pa.Table.from_pandas(run, preserve_index=False).append_column(
            "system", pa.array([name] * len(run))) for name, run in runs.items()
    ])
    by_column = _compare(shared, long, qrels, ["ndcg@10"], by="system", test="t", level=None)
    by_mapping = _compare(shared, runs, qrels, ["ndcg@10"], test="t", level=None)
    assert by_column.systems == ("high", "low", "mid")  # the column's values, sorted
    means = by_mapping.frame().set_index("system")["mean"]
    for row in by_column.frame().itertuples():
        assert row.mean == pytest.approx(means[row.system], abs=1e-15)


@pytest.mark.parametrize(("arguments", "message"), [
    ({"test": "z"}, "compare: test='z': must be one of randomization, t, wilcoxon"),
    ({"correction": "fdr_tsbh"}, "compare: correction='fdr_tsbh': must be one of holm, "),
    ({"alpha": 1.5}, "compare: alpha=1.5"),
    ({"level": 0}, "compare: level=0"),
    ({"baseline": "nope"}, "compare: baseline='nope' is not one of the systems: low, mid, high"),
    ({"trials": 30}, "compare: trials=30 is too few for 3 comparisons per metric"),
])
def test_bad_arguments_name_themselves(shared, data, arguments, message) -> None:
    runs, qrels = data
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        _compare(shared, runs, qrels, ["ndcg@10"], **arguments)


def test_bad_runs(shared, data, tmp_path) -> None:
    runs, qrels = data
    with pytest.raises(ValueError, match="needs at least two systems, got 1 \\('low'\\)"):
        _compare(shared, {"low": runs["low"]}, qrels, ["ndcg@10"])
    with pytest.raises(ValueError, match="runs= as a list takes file paths .*, got a list "
                                         "holding a DataFrame; name tables with a mapping"):
        _compare(shared, list(runs.values()), qrels, ["ndcg@10"])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(ValueError, match="two runs are named 'run' by their file stems"):
        _compare(shared, [tmp_path / "a" / "run.csv", tmp_path / "b" / "run.csv"], qrels, "mrr")
    with pytest.raises(ValueError, match="by='tag': the run has no such column"):
        _compare(shared, runs["low"], qrels, ["ndcg@10"], by="tag")
    with pytest.raises(ValueError, match="compare: 'arp@10' is a beyond-accuracy metric, which "
                                         "is not compared query by query"):
        _compare(shared, runs, qrels, ["ndcg@10", "arp@10"])


def test_plot_draws_the_reports_differences(shared, data, tmp_path) -> None:
    """Report.plot hands the per-query values and the baseline to duckrank.reports.plots: the
    mean differences it draws are the report's (system - baseline)."""
    pytest.importorskip("matplotlib")
    runs, qrels = data
    report = _compare(shared, runs, qrels, ["ndcg@10"], baseline="low", test="t", level=None)
    drawn = report.plot(tmp_path / "difference.svg", kind="difference")
    assert (tmp_path / "difference.svg").stat().st_size > 1000
    assert drawn.baseline == "low"
    for row in report.frame("comparisons").itertuples():
        assert drawn.means[row.system] == pytest.approx(row.mean_diff, abs=1e-12)


def test_only_the_per_query_table_outlives_the_scoring(shared, data, tmp_path) -> None:
    """The tests and intervals run with the runs' parsed tables and the evaluation's results
    already dropped (they were alive together before: +330 MB instead of +174 MB at 5 x 20,000
    users, benchmarks/bench_compare.py): inside ``_scored`` the per-query table is the only
    temporary object left on the connection."""
    from duckrank.evaluation import column_names
    from duckrank.reports.compare import Inputs, systems_of
    from duckrank.reports.compare.scoring import _scored

    runs, qrels = data
    paths = []
    for name, run in runs.items():
        run.to_csv(tmp_path / f"{name}.csv", index=False)  # text: parsed into a table
        paths.append(tmp_path / f"{name}.csv")
    con = shared.cursor()
    # CSV reads the ids as text: compared as text with the qrels' integers.
    inputs = Inputs(systems_of(paths, None), qrels, ["ndcg@10"], column_names({}), "varchar")

    def temporary() -> list:
        return con.sql("SELECT table_name FROM duckdb_tables() WHERE temporary UNION ALL "
                       "SELECT view_name FROM duckdb_views() WHERE view_name LIKE 'duckrank%'"
                       ).fetchall()

    before = temporary()
    with pytest.warns(duckrank.evaluation.UnrankedQueries, match="system 'low': 1 judged"), \
            _scored(con, inputs) as scored:
        left = [name for (name,) in temporary() if (name,) not in before]
        assert [f'"{name}"' for name in left] == [scored.table]
        # Every judged query for every system: 40 queries x 3 systems x 1 metric; 'low''s
        # unranked query 5 scored as an empty list, 0, the one filled value.
        assert con.sql(f"SELECT count(*), sum(filled::INT) FROM {scored.table}"
                       ).fetchall() == [(QUERIES * 3, 1)]
        assert con.sql(f"SELECT value FROM {scored.table} WHERE filled").fetchall() == [(0.0,)]
    assert temporary() == before


def test_dropped_rows_warning_names_the_system(shared, data) -> None:
    """Each run file is scored on its own: a warning about rows left out says whose (hand
    calculation: one NULL score in 'mid', so 1 run row left out), and so does the warning about
    judged queries without a list ('low' does not rank query 5: 1 query), each once."""
    runs, qrels = data
    mid = pa.Table.from_pandas(runs["mid"], preserve_index=False)
    scores = mid["score"].to_pylist()
    mid = mid.set_column(2, "score", pa.array([None, *scores[1:]], pa.float64()))
    with pytest.warns(duckrank.evaluation.DroppedRows) as caught:
        _compare(shared, {"low": runs["low"], "mid": mid}, qrels, ["ndcg@10"], test="t",
                 level=None)
    messages = [(w.category, str(w.message)) for w in caught]
    assert len(messages) == 2
    assert messages[0][0] is duckrank.evaluation.DroppedRows
    assert messages[0][1].startswith("system 'mid': left out 1 run rows")
    assert messages[1][0] is duckrank.evaluation.UnrankedQueries
    assert messages[1][1].startswith("system 'low': 1 judged query has no list in the run")


def _two_by_one(shift_b: float = 0.0):
    """Systems a (relevant item first) and b (relevant item last) on 6 queries: precision@1 and
    ndcg@3 differ by exactly 1 on every query, and a copy of a differs from a by 0."""
    qrels = pd.DataFrame([(q, 0, 1) for q in range(6)], columns=["query", "item", "grade"])
    a = pd.DataFrame([(q, i, 10.0 - i) for q in range(6) for i in range(3)],
                     columns=["query", "item", "score"])
    b = a.assign(score=-a["score"] + shift_b)
    return a, b, qrels


def test_t_test_reports_constant_differences_instead_of_failing(shared) -> None:
    """Issue 25, section 2: with test='t', one metric whose differences are all equal aborted the
    whole report (paired_ttest refuses them); now that cell has a NULL p-value and its reason,
    in the comparisons frame and the legend, and the other cells stand."""
    a, b, qrels = _two_by_one()
    c = a.assign(score=a["score"] * np.where(a["query"] < 3, 1, -1))  # varying differences
    report = _compare(shared, {"a": a, "b": b, "c": c}, qrels, ["precision@1"], test="t",
                      correction=None)
    rows = {(r["system"], r["other"]): r for r in report.frame("comparisons").to_dict("records")}
    constant = rows["a", "b"]
    assert math.isnan(constant["p_value"]) and math.isnan(constant["statistic"])
    assert not constant["significant"]
    assert constant["note"].startswith("every difference is +1: no variance, so no t statistic")
    varying = rows["a", "c"]  # differences 0, 0, 0, 1, 1, 1: scipy's ttest_rel
    expected = stats_ttest([1.0] * 6, [1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    assert varying["p_value"] == pytest.approx(expected.pvalue, rel=1e-9)
    assert varying["statistic"] == pytest.approx(expected.statistic, rel=1e-9)
    assert varying["note"] is None or (isinstance(varying["note"], float)
                                       and math.isnan(varying["note"]))
    assert "No p-value for precision@1, a vs b: every difference is +1" in report.table()


def stats_ttest(x, y):
    from scipy import stats

    return stats.ttest_rel(x, y)


NASTY = "<img src=x onerror=alert(1)>*b*_c_[l](http://x) $\\alpha$ |\nrow \x1b[31m"


def test_names_are_not_markup_in_any_format(shared) -> None:
    """Issue 25, 1.9: a system name (a file stem, a tag column) is shown as written: in
    Markdown no HTML, emphasis, link, math or row break; in LaTeX escaped; in the text table
    its control characters shown as escapes (a newline split the row, ESC drove the
    terminal)."""
    a, b, qrels = _two_by_one()
    report = _compare(shared, {NASTY: a, "plain": b}, qrels, ["precision@1"], baseline=NASTY,
                      test="randomization", trials=100, correction=None)
    markdown = report.to_markdown()
    lines = markdown.splitlines()
    assert len([line for line in lines if line.startswith("|")]) == 4  # header, rule, 2 rows
    assert re.search(r"(?<!\\)<img", markdown) is None and "\x1b" not in markdown
    row = next(line for line in lines if line.startswith("| a |"))
    # Every markup character of the name is escaped (CommonMark: a backslash escapes any ASCII
    # punctuation, so the cell renders as the name).
    assert row.startswith("| a | \\<img src=x onerror=alert(1)\\>\\*b\\*\\_c\\_\\[l\\](http://x) "
                          "\\$\\\\alpha\\$ \\|<br>row \\x1b\\[31m |")
    latex = report.to_latex()
    assert "\\$\\textbackslash{}alpha\\$" in latex and "\\_c\\_" in latex and "\n row" not in latex
    text = report.table()
    assert "\x1b" not in text and "\\x1b[31m" in text and "\\nrow" in text
    assert len(text.splitlines()[2:4]) == 2 and all(line[0] in "ab" for line in
                                                   text.splitlines()[2:4])


def test_a_new_test_is_one_record(shared, data, monkeypatch, capsys) -> None:
    """Issue 26, item 5: a test the report runs is its record (``StatTest.report``): the report,
    its legend, its checks and ``duckrank compare --test`` follow it with no other edit. The
    new record here reruns the randomization test's aggregate under another alias and title,
    so its p-values must be the randomization test's."""
    import dataclasses

    from duckrank import cli, stats
    from duckrank.reports.compare import command
    from duckrank.reports.compare import options as compare_options
    from duckrank.stats.record import InReport

    base = stats.REPORT_TESTS["randomization"]
    record = dataclasses.replace(base, report=InReport(
        alias="sign_flips", title="a sign-flip test", help="sign flips, --trials of them"))
    tests = dict(sorted({**stats.REPORT_TESTS, "sign_flips": record}.items()))
    for module in (stats, compare_options):  # compare's options and command read REPORT_TESTS
        monkeypatch.setattr(module, "REPORT_TESTS", tests)

    runs, qrels = data
    new = _compare(shared, runs, qrels, ["mrr"], test="sign_flips", trials=200, level=None)
    old = _compare(shared, runs, qrels, ["mrr"], test="randomization", trials=200, level=None)
    assert new.frame("comparisons").equals(old.frame("comparisons"))
    assert "(a sign-flip test pairwise, 200 trials, seed 0, Holm" in " ".join(new.legend())
    with pytest.raises(ValueError, match="trials=3 is too few"):  # it takes trials: checked
        _compare(shared, runs, qrels, ["mrr"], test="sign_flips", trials=3)
    with pytest.raises(ValueError, match="must be one of randomization, sign_flips, t"):
        _compare(shared, runs, qrels, ["mrr"], test="z")

    assert "sign_flips (sign flips, --trials of them), t (" in command._test_help()
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    assert "{randomization,sign_flips,t,wilcoxon}" in capsys.readouterr().out
