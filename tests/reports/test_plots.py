"""duckrank.reports.plots: metric@k curves, per-query distributions and differences as PNG / SVG.

Expected values: the plotted numbers are recomputed here independently with pandas (groupby
means, a merge for the paired differences, NaN skipped as pandas and SQL's avg skip it) from the
per-query table that ``duckrank.evaluate(..., per_user=True)`` gives, and checked against
``duckrank.evaluate(..., by="system")``'s own means (the report's table); the NaN and tie cases
are hand calculations written out in the tests. File formats: the PNG signature (PNG spec,
section 5.2) and the SVG root element.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import duckrank
from duckrank.reports.plots import PlotData, _thinned, plot

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NDCG = "ndcg(gain=exponential)"  # evaluate's label for ndcg over graded qrels
METRICS = ["ndcg@1", "ndcg@3", "ndcg@10", "recall@5", "map"]
SYSTEMS = ["bm25", "dense", "hybrid"]


def _run_and_qrels() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Three systems ranking 10 of 20 items for 8 queries; query 7 has no relevant item, so its
    recall and map are undefined (NaN) and left out of every mean."""
    rng = np.random.default_rng(15)
    run = pd.DataFrame(
        [(system, query, int(item), float(10 - rank)) for system in SYSTEMS for query in range(8)
         for rank, item in enumerate(rng.permutation(20)[:10])],
        columns=["system", "query", "item", "score"],
    )
    qrels = pd.DataFrame(
        [(query, int(item), int(rng.integers(0, 3)) if query != 7 else 0) for query in range(8)
         for item in rng.permutation(20)[:5]],
        columns=["query", "item", "grade"],
    )
    return run, qrels


@pytest.fixture(scope="module")
def evaluated() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-query long table, evaluate's means per system)."""
    run, qrels = _run_and_qrels()
    wide = duckrank.evaluate(run, qrels, METRICS, by="system", per_user=True)
    long = wide.melt(id_vars=["system", "query"], var_name="metric", value_name="value")
    means = duckrank.evaluate(run, qrels, METRICS, by="system").set_index("system")
    return long, means


def _check_png(path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert 10_000 < len(data) < 1_000_000, len(data)  # a drawn figure, not an empty canvas


def _check_svg(path) -> None:
    data = path.read_bytes()
    assert data.startswith(b"<?xml") and b"<svg" in data[:1000]
    assert 10_000 < len(data) < 1_000_000, len(data)


def test_curves_are_the_means_per_k(evaluated, tmp_path) -> None:
    long, means = evaluated
    data = plot(long, tmp_path / "curves.png")  # the only family at several k: no metric= needed
    _check_png(tmp_path / "curves.png")
    assert isinstance(data, PlotData) and data.kind == "curves" and data.metric == NDCG
    expected = long.groupby(["system", "metric"])["value"].mean()
    assert list(data.series) == SYSTEMS
    for system, series in data.series.items():
        assert series.x.tolist() == [1, 3, 10]
        labels = [f"{NDCG}@{k}" for k in (1, 3, 10)]
        assert series.y == pytest.approx([expected[system, label] for label in labels],
                                         rel=1e-12)
        # The report's table: evaluate's own means per system.
        assert series.y == pytest.approx(means.loc[system, labels].tolist(), rel=1e-12)


def test_distribution_is_the_per_query_values_and_means(evaluated, tmp_path) -> None:
    long, means = evaluated
    data = plot(long, tmp_path / "distribution.svg", kind="distribution", metric="recall@5",
                baseline="dense")
    _check_svg(tmp_path / "distribution.svg")
    assert list(data.series) == ["dense", "bm25", "hybrid"]  # the baseline first
    rows = long[long["metric"] == "recall@5"].dropna()
    for system, series in data.series.items():
        own = rows[rows["system"] == system].sort_values("query")
        assert series.x.tolist() == own["query"].tolist() == list(range(7))  # query 7: NaN
        assert series.y.tolist() == own["value"].tolist()
        assert data.means[system] == pytest.approx(own["value"].mean(), rel=1e-12)
        assert data.means[system] == pytest.approx(means.loc[system, "recall@5"], rel=1e-12)


def test_difference_is_the_sorted_paired_difference(evaluated, tmp_path) -> None:
    long, _ = evaluated
    data = plot(long, tmp_path / "difference.png", kind="difference", metric="map",
                baseline="bm25")
    _check_png(tmp_path / "difference.png")
    assert data.baseline == "bm25" and list(data.series) == ["dense", "hybrid"]
    rows = long[long["metric"] == "map"]
    base = rows[rows["system"] == "bm25"][["query", "value"]]
    for system, series in data.series.items():
        pairs = rows[rows["system"] == system].merge(base, on="query", suffixes=("", "_base"))
        pairs["difference"] = pairs["value"] - pairs["value_base"]
        pairs = pairs.dropna(subset=["difference"])
        pairs = pairs.sort_values(["difference", "query"], ascending=[False, True], kind="stable")
        assert series.x.tolist() == pairs["query"].tolist()
        assert series.y.tolist() == pairs["difference"].tolist()
        assert data.means[system] == pytest.approx(pairs["difference"].mean(), rel=1e-12)


def test_polars_and_pyarrow_tables_plot_the_same(evaluated, tmp_path) -> None:
    long, _ = evaluated
    expected = plot(long, tmp_path / "pandas.png", kind="difference", metric="map")
    for convert in (pl.from_pandas, pa.Table.from_pandas):
        data = plot(convert(long), tmp_path / "other.png", kind="difference", metric="map")
        assert data.baseline == "bm25"  # no baseline: the table's first system
        for system, series in data.series.items():
            assert series.x.tolist() == expected.series[system].x.tolist()
            assert series.y.tolist() == expected.series[system].y.tolist()


def test_hand_computed_table_with_undefined_values_and_a_user_column(tmp_path) -> None:
    # a: u1 0.5, u2 NaN, u3 1.0; b: u1 0.5, u2 0.25, u3 0.0 (a polars table, with user).
    table = pl.DataFrame({
        "system": ["a"] * 3 + ["b"] * 3,
        "user": ["u1", "u2", "u3"] * 2,
        "metric": ["p@1"] * 6,
        "value": [0.5, None, 1.0, 0.5, 0.25, 0.0],
    })
    data = plot(table, tmp_path / "d.png", kind="distribution")  # one metric: no metric= needed
    assert data.series["a"].y.tolist() == [0.5, 1.0]  # u2 undefined, left out
    assert data.means == {"a": 0.75, "b": 0.25}  # (0.5 + 1.0) / 2, (0.5 + 0.25 + 0.0) / 3
    data = plot(table, tmp_path / "d.png", kind="difference", baseline="b")
    # a - b: u1 0.0, u3 1.0 (u2 has no pair); sorted largest first.
    assert data.series["a"].x.tolist() == ["u3", "u1"]
    assert data.series["a"].y.tolist() == [1.0, 0.0]
    assert data.means == {"a": 0.5}
    # p@2: a u1 1.0 (u2, u3 NaN); b all NaN, so b's curve has no point at k = 2.
    at_2 = pl.DataFrame({"system": ["a"] * 3 + ["b"] * 3, "user": ["u1", "u2", "u3"] * 2,
                         "metric": ["p@2"] * 6, "value": [1.0, None, None, None, None, None]})
    data = plot(pl.concat([table, at_2]), tmp_path / "c.svg")
    assert data.metric == "p"
    assert (data.series["a"].x.tolist(), data.series["a"].y.tolist()) == ([1, 2], [0.75, 1.0])
    assert (data.series["b"].x.tolist(), data.series["b"].y.tolist()) == ([1], [0.25])


def test_many_users_draw_quickly_and_small(tmp_path) -> None:
    # A patch per user took about 30 s and 39 MB of SVG at 100,000 users; the difference curve
    # is one path through at most ~2,000 sorted values, with its sign changes kept.
    n = 20_000
    values = np.random.default_rng(1).random(2 * n)
    table = pa.table({"system": np.repeat(["a", "b"], n), "query": np.tile(np.arange(n), 2),
                      "metric": ["ndcg@10"] * (2 * n), "value": values})
    data = plot(table, tmp_path / "many.svg", kind="difference")
    assert (tmp_path / "many.svg").stat().st_size < 1_000_000
    assert len(data.series["b"].y) == n  # the data returned are every user's
    assert data.series["b"].y == pytest.approx(np.sort(values[n:] - values[:n])[::-1])


def test_thinned_curve_keeps_the_ends_and_the_sign_changes() -> None:
    # 3,000 sorted differences: 1,500 positive (positions 0-1499), 10 zeros (1500-1509), 1,490
    # negative: the curve must pass through the last positive, the zeros' ends and the first
    # negative, or the green and red areas would meet at the wrong place.
    values = np.concatenate([np.linspace(1, 0.001, 1500), np.zeros(10),
                             -np.linspace(0.001, 1, 1490)])
    shown = _thinned(values)
    assert {0, 1499, 1500, 1509, 1510, 2999} <= set(shown.tolist())
    assert len(shown) <= 2006 and np.all(np.diff(shown) > 0)
    assert _thinned(values[:100]).tolist() == list(range(100))  # few values: every one


def test_no_global_matplotlib_state_is_changed(evaluated, tmp_path) -> None:
    import matplotlib

    long, _ = evaluated
    pyplot_loaded = "matplotlib.pyplot" in sys.modules
    before = (matplotlib.get_backend(), dict(matplotlib.rcParams))
    plot(long, tmp_path / "state.png", kind="distribution", metric="map", title="map")
    assert (matplotlib.get_backend(), dict(matplotlib.rcParams)) == before
    assert ("matplotlib.pyplot" in sys.modules) == pyplot_loaded  # no pyplot, no open figure


@pytest.mark.parametrize(("arguments", "message"), [
    ({"kind": "bars"}, "plot: kind must be one of 'curves', 'distribution', 'difference', "
                       "got 'bars'"),
    ({"path": "x.jpg"}, "plot: path must end in .png, .svg or .pdf (the format is taken from "
                        "it), got 'x.jpg'"),
    ({"metric": "ndcg@5"}, "plot: metric 'ndcg@5' is not a metric family in per_query (kind="
                           "'curves' takes a family, without @k, e.g. 'ndcg(gain=exponential)')"
                           "; the metrics present are: 'ndcg(gain=exponential)@1'"),
    ({"kind": "distribution", "metric": "mrr"}, "plot: metric 'mrr' is not in per_query; the "
                                                "metrics present are: 'ndcg(gain=exponential)@1',"
                                                " 'ndcg(gain=exponential)@3'"),
    ({"kind": "difference"}, "plot: kind='difference' draws one metric: pass metric= one of "
                             "'ndcg(gain=exponential)@1'"),
    ({"kind": "difference", "metric": "map", "baseline": "bm42"},
     "plot: baseline must be one of the systems, got 'bm42'; the systems are: 'bm25', 'dense', "
     "'hybrid'"),
    ({"metric": "recall"}, "plot: kind='curves' needs metric 'recall' at two or more cut-offs, "
                           "per_query has it at k = 5 only"),
])
def test_errors_name_the_argument_and_value(evaluated, tmp_path, arguments, message) -> None:
    long, _ = evaluated
    arguments = {"path": tmp_path / "x.png", **arguments}
    with pytest.raises(ValueError) as error:
        plot(long, **arguments)
    assert str(error.value).startswith(message)
    assert not (tmp_path / "x.png").exists()


def test_errors_on_the_table(evaluated, tmp_path) -> None:
    long, _ = evaluated
    with pytest.raises(ValueError, match=r"plot: per_query is missing the column\(s\) "
                                         r"query \(or user\), value; .* its columns are: "
                                         r"system, metric"):
        plot(long[["system", "metric"]], tmp_path / "x.png")
    with pytest.raises(ValueError, match="plot: per_query must have one row per system, query and "
                                         "metric; system 'bm25', query 0, metric 'map' has 2"):
        plot(pd.concat([long, long[long["metric"] == "map"]]), tmp_path / "x.png",
             kind="distribution", metric="map")
    only_map = long[long["metric"] == "map"]
    with pytest.raises(ValueError, match="plot: kind='curves' needs a metric at two or more "
                                         "cut-offs .*; the metrics present are: 'map'"):
        plot(only_map, tmp_path / "x.png")
    with pytest.raises(ValueError, match="plot: kind='difference' needs a system besides the "
                                         "baseline 'dense'; the systems are: 'dense'"):
        plot(only_map[only_map["system"] == "dense"], tmp_path / "x.png", kind="difference")
    with pytest.raises(TypeError, match="plot: per_query must be a pandas, polars or pyarrow "
                                        "table .*, got int"):
        plot(3, tmp_path / "x.png")


def test_without_matplotlib_the_error_says_what_to_install(evaluated, tmp_path,
                                                           monkeypatch) -> None:
    # None in sys.modules makes `import matplotlib` fail as if it were not installed.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'duckrank\[plots\]'") as error:
        plot(evaluated[0], tmp_path / "x.png")
    assert error.value.name == "matplotlib"  # what the CLI catches to print its hint
    assert not (tmp_path / "x.png").exists()


def test_metric_as_requested_names_the_labelled_family(evaluated, tmp_path) -> None:
    """Over graded qrels evaluate labels ndcg 'ndcg(gain=exponential)@k'; the metric as the user
    requested it (-m ndcg@10) names it when that is unambiguous. Expected: the same numbers as
    with the full label (the tests above check those against pandas)."""
    long, _ = evaluated
    curves = plot(long, tmp_path / "a.png", metric="ndcg")
    assert curves.metric == NDCG
    assert curves.series["dense"].y.tolist() == plot(
        long, tmp_path / "b.png", metric=NDCG).series["dense"].y.tolist()
    box = plot(long, tmp_path / "c.png", kind="distribution", metric="ndcg@3")
    assert box.metric == f"{NDCG}@3"
    assert box.means == plot(long, tmp_path / "d.png", kind="distribution",
                             metric=f"{NDCG}@3").means
    # Two families that 'ndcg' could name: no guess, the error lists what is there.
    ndcg = long[long["metric"].str.startswith(NDCG)]
    both = pd.concat([ndcg, ndcg.assign(metric=ndcg["metric"].str.replace("exponential",
                                                                          "linear"))])
    with pytest.raises(ValueError, match="plot: metric 'ndcg' is not a metric family"):
        plot(both, tmp_path / "e.png", metric="ndcg")


def test_errors_spelled_for_the_command_line(evaluated, tmp_path) -> None:
    """duckrank plot's flags are --kind, --plot-metric and -o/--output; its errors name them
    (the CLI prefixes 'duckrank plot: ', so no 'plot: ' here)."""
    from duckrank.render.spelling import COMMAND_LINE
    from duckrank.reports.plots import draw

    long, _ = evaluated
    with pytest.raises(ValueError) as error:
        draw(long, tmp_path / "x.png", "distribution", spelling=COMMAND_LINE)
    assert str(error.value).startswith(
        "--kind distribution draws one metric: pass --plot-metric one of 'ndcg(gain=")
    with pytest.raises(ValueError) as error:
        draw(long, tmp_path / "x.png", "curves", "mrr", spelling=COMMAND_LINE)
    assert str(error.value).startswith("--plot-metric mrr is not a metric family in per_query "
                                       "(--kind curves takes a family")
    with pytest.raises(ValueError) as error:
        draw(long, tmp_path / "x.jpg", spelling=COMMAND_LINE)
    assert str(error.value) == ("--output " + str(tmp_path / "x.jpg") + " must end in .png, "
                                ".svg or .pdf (the format is taken from it)")


def _names_table(names: list[str]) -> pa.Table:
    rows = [(name, q, "ndcg@10", (q + i) / 10) for i, name in enumerate(names) for q in range(5)]
    columns = zip(*rows, strict=True)
    return pa.table(dict(zip(["system", "query", "metric", "value"], columns, strict=True)))


@pytest.mark.parametrize("kind", ["distribution", "difference"])
def test_names_are_drawn_as_written_not_as_mathtext(tmp_path, kind) -> None:
    """Issue 25, 1.9: system names come from file stems and tag columns; before, '$\\frac$'
    (mathtext's parse error) failed the plot and '$\\alpha$' was drawn as a Greek letter."""
    import matplotlib
    from matplotlib.text import Text

    made: list[Text] = []
    original = Text.__init__

    def recording(self, *args, **kwargs):  # every Text of the figure, as it is made
        original(self, *args, **kwargs)
        made.append(self)

    names = ["$\\frac$", "$\\alpha$ 50% a_b", "a$b"]
    before = dict(matplotlib.rcParams)
    Text.__init__ = recording
    try:
        plot(_names_table(names), tmp_path / "names.svg", kind=kind)
    finally:
        Text.__init__ = original
    assert dict(matplotlib.rcParams) == before
    shown = [t for t in made if any(name in t.get_text() for name in names)]
    assert shown and not any(t.get_parse_math() or t.get_usetex() for t in shown)


@pytest.mark.parametrize(("where", "problem"), [
    ("missing/x.png", "the folder {folder!r} does not exist; create it first"),
    ("afile.txt/x.png", "the folder {folder!r} is not a folder; create it first"),
    ("folder.png", "is a folder; give a file name ending in .png, .svg or .pdf"),
])
def test_a_bad_output_path_fails_before_any_scoring(tmp_path, where, problem) -> None:
    """Issue 25, section 2: `duckrank plot -o` into a missing folder or onto a folder ended in a
    traceback from savefig, after all the scoring; output_format (which the command calls
    before scoring) now refuses it, naming -o."""
    from duckrank.render.spelling import COMMAND_LINE
    from duckrank.reports.plots import output_format

    (tmp_path / "afile.txt").write_text("")
    (tmp_path / "folder.png").mkdir()
    path = tmp_path / where
    message = problem.format(folder=str(path.parent))
    with pytest.raises(ValueError) as error:
        output_format(path, COMMAND_LINE)
    assert str(error.value).startswith(f"--output {path}")
    assert message in str(error.value)
    with pytest.raises(ValueError, match=f"^plot: path {str(path)!r}"):
        plot(_names_table(["a", "b"]), path, kind="distribution")
    assert output_format(tmp_path / "fine.svg", COMMAND_LINE) == "svg"
