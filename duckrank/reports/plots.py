"""Pictures of a per-query table: metric@k curves, per-query distributions, and per-query
differences against a baseline, written as PNG, SVG or PDF with matplotlib (the optional extra
``duckrank[plots]``), or returned as a matplotlib ``Figure`` (shown inline by a notebook).

The input is a tidy per-query table, such as a comparison report's ``per_query`` or a melted
``duckrank.evaluate(..., by="system", per_user=True)``: one row per (system, query, metric) with a
float ``value`` (NaN or NULL where the metric is undefined for that query). The numbers are
computed here with numpy, NaN skipped as SQL's ``avg`` skips NULL, and returned as ``PlotData``,
so a caller can check that the picture shows what its table says.

matplotlib is driven through its object API (``matplotlib.figure.Figure``, drawn by the Agg
renderer for PNG, the SVG renderer for SVG and the PDF renderer for PDF): pyplot is never
imported, so no figure is left open and the user's backend, rcParams and figure list are not
touched. Names come from data (systems from file stems or tag columns, metric labels, query
ids), so every text is drawn as written: mathtext and TeX are off while a figure is built and
saved (``$\alpha$`` stays five characters, an odd ``$`` is no parse error).

Colours are Okabe and Ito's palette ("Color Universal Design", https://jfly.uni-koeln.de/color/),
told apart by readers with any common colour-vision deficiency; the difference plot's gains and
losses are its blue and vermillion, not green and red. Counts are written with thousands
separators.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from os import PathLike, fspath
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from duckrank.render.spelling import PYTHON, Spelling

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

KINDS = ("curves", "distribution", "difference")
FORMATS = (".png", ".svg", ".pdf")
# The query column may be named for search (query) or recommendation (user), as evaluate() does.
QUERY_NAMES = ("query", "user")
INSTALL_HINT = "pip install 'duckrank[plots]'"

# A label with a cut-off: everything before the last @ is the family (options included, so
# ndcg(gain=linear)@10 and ndcg@10 are different curves).
_CUTOFF = re.compile(r"(?P<family>.+)@(?P<k>[0-9]+)")

# Above this many queries the per-query tick labels of a difference panel would overlap.
_MAX_QUERY_TICKS = 30
# A difference curve is drawn through at most about this many points (a 7-inch figure at 150 dpi
# is about 1,000 pixels wide).
_MAX_CURVE_POINTS = 2000
# A distribution shows at most this many of each system's values as points beside its box (picked
# evenly from the sorted values, so they keep the distribution's shape).
_MAX_STRIP_POINTS = 600

# Okabe-Ito (see the module's docstring), without its yellow, which is faint on white.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
GAIN_COLOR, LOSS_COLOR = "#0072B2", "#D55E00"


@dataclass(frozen=True)
class Series:
    """One system's plotted points. ``curves``: x = the cut-offs k (ascending), y = the mean of
    the metric at each k. ``distribution``: x = the queries with a value (sorted), y = their
    values. ``difference``: x = the queries with a value on both sides, y = system - baseline,
    both sorted by the difference, largest first (ties by query)."""

    x: np.ndarray
    y: np.ndarray


@dataclass(frozen=True)
class PlotData:
    """The numbers a picture shows. ``metric``: the family for curves (``ndcg``), the label
    otherwise (``ndcg@10``). ``baseline``: the reference of a difference, else None.
    ``series``: per system, in the order drawn (systems are keyed and shown as text).
    ``means``: the mean marked per system, of the values (distribution) or of the differences
    (difference); empty for curves, whose y are already means."""

    kind: str
    metric: str
    baseline: str | None
    series: dict[str, Series]
    means: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PerQuery:
    """The per-query table as arrays: systems and labels as text, queries as codes into
    ``queries`` (their dictionary, kept in its own type for sorting and for PlotData)."""

    system: np.ndarray
    query: np.ndarray
    metric: np.ndarray
    value: np.ndarray
    queries: pa.Array
    query_rank: np.ndarray  # query code -> position of the query in sorted order
    noun: str  # "query" or "user", as the table names it
    systems: list[str]  # in order of first appearance
    labels: list[str]  # in order of first appearance


def plot(
    per_query: Any,
    path: str | PathLike[str] | None = None,
    kind: str = "curves",
    metric: str | None = None,
    baseline: str | None = None,
    *,
    title: str | None = None,
) -> PlotData | Figure:
    """Draw ``per_query`` to ``path`` (``.png``, ``.svg`` or ``.pdf``) and return the numbers
    drawn; without ``path``, return the matplotlib ``Figure`` (a notebook shows it inline; its
    numbers are ``plot_data``'s).

    ``per_query``: a pandas, polars or pyarrow table with columns ``system``, ``query`` (or
    ``user``), ``metric`` (labels as ``duckrank.evaluate`` names its columns: ``ndcg@10``,
    ``ndcg(gain=linear)@10``, ``map``) and ``value`` (NaN or NULL: undefined, skipped).

    ``kind``: ``"curves"``, the mean of one metric family over queries against the cut-off k, one
    line per system (``metric``: the family, e.g. ``"ndcg"`` or ``"ndcg(gain=linear)"``; may be
    left out when only one family has two or more cut-offs). ``"distribution"``: per system, a
    box of one metric's per-query values (quartiles, whiskers at the minimum and maximum) and a
    diamond at the mean. ``"difference"``: per other system, its per-query difference from
    ``baseline`` on one metric, sorted, with zero and the mean difference marked; a query is used
    when both systems have a value for it. For these two ``metric`` is a label, and may be left
    out when the table holds one metric.

    ``baseline``: a system; drawn first in every kind, and the reference of ``"difference"``
    (default there: the table's first system). ``title``: replaces the default title.

    ``metric`` may also be written as requested, without the options that ``evaluate`` adds to
    the label, when that names one family or label: ``"ndcg"`` for ``"ndcg(gain=exponential)"``,
    ``"ndcg@10"`` for ``"ndcg(gain=exponential)@10"`` (ndcg over graded qrels).
    """
    if path is None:
        _check_request(kind, metric, PYTHON)
        table = _read(per_query)
        data = _data(table, kind, metric, baseline, PYTHON)
        with _literal_text():
            return _draw(data, table.noun, title)
    return draw(per_query, path, kind, metric, baseline, title=title)


def plot_data(per_query: Any, kind: str = "curves", metric: str | None = None,
              baseline: str | None = None, spelling: Spelling = PYTHON) -> PlotData:
    """The numbers ``plot`` would draw, without drawing (no matplotlib needed): the HTML report
    draws them as inline SVG. ``per_query`` may be a table already read (``read_per_query``),
    to draw several pictures of one table without reading it again."""
    _check_request(kind, metric, spelling)
    return _data(read_per_query(per_query), kind, metric, baseline, spelling)


def read_per_query(per_query: Any) -> PerQuery:
    """``per_query`` read and checked (``plot``'s errors) as arrays."""
    return per_query if isinstance(per_query, PerQuery) else _read(per_query)


def plural(noun: str) -> str:
    """``queries`` or ``users``."""
    return {"query": "queries", "user": "users"}[noun]


def families(table: PerQuery) -> dict[str, dict[int, int]]:
    """family -> {k: label code}, for the labels of ``table`` with a cut-off."""
    return _families(table)


def _check_request(kind: str, metric: str | None, spelling: Spelling) -> None:
    if kind not in KINDS:
        raise _error(spelling, f"kind must be one of {_listed(KINDS)}, got {kind!r}")
    if metric is not None and not isinstance(metric, str):
        raise TypeError(f"plot: metric must be a metric label or family (str), got {metric!r}")


def _data(table: PerQuery, kind: str, metric: str | None, baseline: str | None,
          spelling: Spelling) -> PlotData:
    systems = _ordered_systems(table, baseline)
    if kind == "curves":
        return _curves(table, systems, metric, spelling)
    if kind == "distribution":
        return _distribution(table, systems, _label(table, metric, kind, spelling))
    return _difference(table, systems, _label(table, metric, kind, spelling))


def output_format(path: str | PathLike[str], spelling: Spelling = PYTHON) -> str:
    """The picture's format from ``path``'s suffix (``"png"``, ``"svg"``, ``"pdf"``), once
    ``path`` is known to be writable: a file (or nothing yet) in an existing folder we may write
    to. The command line calls it before it scores anything, so a bad ``-o`` costs no evaluation."""
    text = fspath(path)
    suffix = Path(text).suffix.lower()
    if suffix not in FORMATS:
        where = spelling.argument("output", text) if spelling.cli else "path"
        raise _error(spelling, f"{where} must end in {_or(FORMATS)} (the format is "
                     "taken from it)" + ("" if spelling.cli else f", got {text!r}"))
    where = spelling.argument("output", text) if spelling.cli else f"path {text!r}"
    target = Path(text)
    folder = target.parent
    if target.is_dir():
        raise _error(spelling, f"{where} is a folder; give a file name ending in "
                     f"{_or(FORMATS)}")
    if not folder.is_dir():
        problem = "is not a folder" if folder.exists() else "does not exist"
        raise _error(spelling, f"{where}: the folder {str(folder)!r} {problem}; create it first")
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists()
                                                   and not os.access(target, os.W_OK)):
        raise _error(spelling, f"{where} cannot be written (permission denied)")
    return suffix[1:]


def draw(per_query: Any, path: str | PathLike[str], kind: str = "curves",
         metric: str | None = None, baseline: str | None = None, *, title: str | None = None,
         spelling: Spelling = PYTHON) -> PlotData:
    """``plot``, its errors spelled for Python or for ``duckrank plot`` (whose flags are
    ``--kind``, ``--plot-metric`` and ``-o``)."""
    if kind not in KINDS:
        raise _error(spelling, f"kind must be one of {_listed(KINDS)}, got {kind!r}")
    fmt = output_format(path, spelling)
    _check_request(kind, metric, spelling)
    table = _read(per_query)
    data = _data(table, kind, metric, baseline, spelling)
    with _literal_text():
        figure = _draw(data, table.noun, title)
        figure.savefig(path, format=fmt, dpi=150)
    return data


def _or(names: Sequence[str]) -> str:
    return f"{', '.join(names[:-1])} or {names[-1]}"


def _error(spelling: Spelling, message: str) -> ValueError:
    """A ValueError naming ``plot`` from Python (the command line names its command)."""
    return ValueError(message if spelling.cli else f"plot: {message}")


def _metric_named(spelling: Spelling, metric: str | None = None) -> str:
    """``metric 'ndcg@5'`` / ``--plot-metric ndcg@5``; without a value ``metric=`` /
    ``--plot-metric``."""
    if spelling.cli:
        return spelling.argument("plot_metric", metric)
    return "metric=" if metric is None else f"metric {metric!r}"


def _kind_named(spelling: Spelling, kind: str) -> str:
    return spelling.argument("kind", kind)


def _resolve(name: str, present: Sequence[str]) -> str | None:
    """``name`` if present, else the one present name that is ``name`` with options added
    before its ``@k`` (``ndcg`` -> ``ndcg(gain=exponential)``, ``ndcg@10`` ->
    ``ndcg(gain=exponential)@10``); None when there is none or more than one."""
    if name in present:
        return name
    base, at, k = name.rpartition("@") if _CUTOFF.fullmatch(name) else (name, "", "")
    pattern = re.compile(re.escape(base) + r"\([^()]*\)" + re.escape(at + k))
    matches = [candidate for candidate in present if pattern.fullmatch(candidate)]
    return matches[0] if len(matches) == 1 else None


def _listed(names: Any) -> str:
    return ", ".join(repr(name) for name in names)


def _read(per_query: Any) -> PerQuery:
    try:
        table = per_query if isinstance(per_query, pa.Table) else pa.table(per_query)
    except (TypeError, ValueError, pa.ArrowException) as error:
        raise TypeError(
            "plot: per_query must be a pandas, polars or pyarrow table (anything with "
            f"__arrow_c_stream__), got {type(per_query).__name__}: {error}"
        ) from None
    query_name = next((name for name in QUERY_NAMES if name in table.column_names), None)
    present = {"system": "system" in table.column_names, "query (or user)": query_name is not None,
               "metric": "metric" in table.column_names, "value": "value" in table.column_names}
    missing = [name for name, found in present.items() if not found]
    if missing:
        raise ValueError(
            f"plot: per_query is missing the column(s) {', '.join(missing)}; it needs system, "
            f"query (or user), metric and value (one row per system, query and metric), and "
            f"its columns are: {', '.join(table.column_names)}"
        )
    value_type = table.schema.field("value").type
    if not (pa.types.is_floating(value_type) or pa.types.is_integer(value_type)
            or pa.types.is_decimal(value_type) or pa.types.is_null(value_type)):
        raise ValueError(f"plot: per_query's value column must hold numbers, got {value_type}")
    if table.num_rows == 0:
        raise ValueError("plot: per_query has no rows")
    value = pc.fill_null(table.column("value").cast(pa.float64()), np.nan)

    system_codes, systems = _encode(table, "system")
    metric_codes, labels = _encode(table, "metric")
    query_codes, queries = _encode_raw(table, query_name)
    query_rank = np.empty(len(queries), dtype=np.int64)
    query_rank[pc.sort_indices(queries).to_numpy()] = np.arange(len(queries))

    # One row per (system, query, metric): a repeated row would weigh twice in every mean.
    key = (system_codes * len(labels) + metric_codes) * max(len(queries), 1) + query_codes
    unique, counts = np.unique(key, return_counts=True)
    if len(unique) < len(key):
        repeated = int(np.flatnonzero(key == unique[np.argmax(counts)])[0])
        raise ValueError(
            "plot: per_query must have one row per system, query and metric; system "
            f"{systems[system_codes[repeated]]!r}, {query_name} "
            f"{queries[int(query_codes[repeated])].as_py()!r}, metric "
            f"{labels[metric_codes[repeated]]!r} has {int(counts.max())}"
        )
    return PerQuery(
        system=system_codes, query=query_codes, metric=metric_codes,
        value=value.to_numpy(zero_copy_only=False), queries=queries, query_rank=query_rank,
        noun=query_name, systems=systems, labels=labels,
    )


def _plain(array: pa.Array) -> pa.Array:
    """``array`` in a type Arrow's sort and dictionary kernels take: polars hands text over as
    string_view, and pandas categories arrive as dictionaries."""
    if pa.types.is_dictionary(array.type):
        return _plain(array.dictionary).take(array.indices)
    if pa.types.is_string_view(array.type):
        return array.cast(pa.large_string())
    return array


def _encode_raw(table: pa.Table, name: str) -> tuple[np.ndarray, pa.Array]:
    """Codes (int64, in order of first appearance) and the distinct values of column ``name``."""
    column = pa.chunked_array([_plain(chunk) for chunk in table.column(name).chunks])
    if column.null_count:
        raise ValueError(f"plot: per_query's {name} column has {column.null_count} NULL values")
    encoded = pc.dictionary_encode(column.combine_chunks())
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary


def _encode(table: pa.Table, name: str) -> tuple[np.ndarray, list[str]]:
    """Like ``_encode_raw``, the values as text (systems and labels are shown as text)."""
    codes, dictionary = _encode_raw(table, name)
    return codes, [str(value) for value in dictionary.to_pylist()]


def _ordered_systems(table: PerQuery, baseline: str | None) -> list[str]:
    if baseline is None:
        return table.systems
    if str(baseline) not in table.systems:
        raise ValueError(
            f"plot: baseline must be one of the systems, got {baseline!r}; the systems are: "
            f"{_listed(table.systems)}"
        )
    return [str(baseline), *(s for s in table.systems if s != str(baseline))]


def _label(table: PerQuery, metric: str | None, kind: str, spelling: Spelling) -> str:
    """The one metric label a distribution or difference is drawn for."""
    if metric is None:
        if len(table.labels) == 1:
            return table.labels[0]
        raise _error(
            spelling, f"{_kind_named(spelling, kind)} draws one metric: pass "
            f"{_metric_named(spelling)} one of {_listed(table.labels)}"
        )
    label = _resolve(metric, table.labels)
    if label is None:
        raise _error(
            spelling, f"{_metric_named(spelling, metric)} is not in per_query; the metrics "
            f"present are: {_listed(table.labels)}"
        )
    return label


def _families(table: PerQuery) -> dict[str, dict[int, int]]:
    """family -> {k: label code}, for the labels with a cut-off."""
    families: dict[str, dict[int, int]] = {}
    for code, label in enumerate(table.labels):
        match = _CUTOFF.fullmatch(label)
        if match:
            families.setdefault(match["family"], {})[int(match["k"])] = code
    return families


def _curve_family(table: PerQuery, metric: str | None, spelling: Spelling
                  ) -> tuple[str, dict[int, int]]:
    families = _families(table)
    curves = {name: ks for name, ks in families.items() if len(ks) > 1}
    kind = _kind_named(spelling, "curves")
    if metric is None:
        if len(curves) == 1:
            return next(iter(curves.items()))
        if curves:
            raise _error(spelling, f"{kind} draws one metric family: pass "
                         f"{_metric_named(spelling)} one of {_listed(curves)}")
        raise _error(
            spelling, f"{kind} needs a metric at two or more cut-offs (e.g. ndcg@1..20); "
            f"the metrics present are: {_listed(table.labels)}"
        )
    family = _resolve(metric, list(families))
    if family is not None:
        if family not in curves:
            (k,) = families[family]
            raise _error(
                spelling, f"{kind} needs {_metric_named(spelling, metric)} at two or more "
                f"cut-offs, per_query has it at k = {k} only; the metrics present are: "
                f"{_listed(table.labels)}"
            )
        return family, curves[family]
    hint = (
        f" ({kind} takes a family, without @k, e.g. {next(iter(families))!r})"
        if families else ""
    )
    raise _error(
        spelling, f"{_metric_named(spelling, metric)} is not a metric family in "
        f"per_query{hint}; the metrics present are: {_listed(table.labels)}"
    )


def _curves(table: PerQuery, systems: list[str], metric: str | None, spelling: Spelling
            ) -> PlotData:
    family, codes = _curve_family(table, metric, spelling)
    ks = sorted(codes)
    # Sums and counts of the defined values per (system, label) in one pass.
    cell = table.system * len(table.labels) + table.metric
    defined = ~np.isnan(table.value)
    size = len(table.systems) * len(table.labels)
    sums = np.bincount(cell[defined], weights=table.value[defined], minlength=size)
    counts = np.bincount(cell[defined], minlength=size)
    series = {}
    for name in systems:
        cells = table.systems.index(name) * len(table.labels) + np.array([codes[k] for k in ks])
        present = counts[cells] > 0  # a system without the metric at this k has no point there
        series[name] = Series(
            x=np.array(ks, dtype=np.int64)[present], y=sums[cells][present] / counts[cells][present]
        )
    return PlotData(kind="curves", metric=family, baseline=None, series=series)


def _values(table: PerQuery, system: str, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Query codes and values of one system and label, the undefined values left out, in the
    queries' sorted order."""
    rows = np.flatnonzero(
        (table.system == table.systems.index(system))
        & (table.metric == table.labels.index(label))
        & ~np.isnan(table.value)
    )
    rows = rows[np.argsort(table.query_rank[table.query[rows]], kind="stable")]
    return table.query[rows], table.value[rows]


def _queries(table: PerQuery, codes: np.ndarray) -> np.ndarray:
    return table.queries.take(pa.array(codes, pa.int64())).to_numpy(zero_copy_only=False)


def _distribution(table: PerQuery, systems: list[str], label: str) -> PlotData:
    series, means = {}, {}
    for name in systems:
        codes, values = _values(table, name, label)
        series[name] = Series(x=_queries(table, codes), y=values)
        means[name] = float(values.mean()) if len(values) else float("nan")
    return PlotData(kind="distribution", metric=label, baseline=None, series=series,
                    means=means)


def _difference(table: PerQuery, systems: list[str], label: str) -> PlotData:
    baseline, others = systems[0], systems[1:]
    if not others:
        raise ValueError(
            f"plot: kind='difference' needs a system besides the baseline {baseline!r}; the "
            f"systems are: {_listed(table.systems)}"
        )
    reference = np.full(len(table.queries), np.nan)
    base_codes, base_values = _values(table, baseline, label)
    reference[base_codes] = base_values
    series, means = {}, {}
    for name in others:
        codes, values = _values(table, name, label)
        differences = values - reference[codes]
        paired = ~np.isnan(differences)
        codes, differences = codes[paired], differences[paired]
        # Largest difference first, ties in query order (codes are already in that order).
        order = np.argsort(-differences, kind="stable")
        series[name] = Series(x=_queries(table, codes[order]), y=differences[order])
        means[name] = float(differences.mean()) if len(differences) else float("nan")
    return PlotData(kind="difference", metric=label, baseline=baseline, series=series,
                    means=means)


def figure_class() -> type[Figure]:
    """matplotlib's ``Figure``, or a ModuleNotFoundError that says what to install (the command
    line asks before it scores anything)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        # ModuleNotFoundError naming matplotlib, as Python's own would: callers that catch
        # that (the CLI) keep working, and the message says what to install.
        raise ModuleNotFoundError(
            f"plot: drawing needs matplotlib, which is not installed: {INSTALL_HINT}",
            name="matplotlib",
        ) from error
    return Figure


def _literal_text() -> Any:
    """matplotlib's settings under which a text is drawn as written: no mathtext (``$...$``),
    no TeX (a user's ``text.usetex`` would send ``_`` and ``%`` to LaTeX). A Text reads them when
    made and tick labels when drawn, so the figure is built and saved inside; the user's
    settings come back after."""
    figure_class()  # without matplotlib, the error that says what to install
    import matplotlib

    return matplotlib.rc_context({"text.parse_math": False, "text.usetex": False})


def _figure(width: float, height: float, rows: int = 1) -> tuple[Figure, list[Axes]]:
    figure = figure_class()(figsize=(width, height), layout="constrained")
    axes = figure.subplots(rows, 1, sharey=True, squeeze=False)[:, 0]
    return figure, list(axes)


_plural = plural


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun if n == 1 else _plural(noun)}"


def _color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _thousands(axis: Any) -> None:
    """Tick labels of ``axis`` with thousands separators (100,000, not 100000 or 1e5)."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))


def _draw(data: PlotData, noun: str, title: str | None) -> Figure:
    if data.kind == "curves":
        figure, default = _draw_curves(data, noun), f"{data.metric}@k: mean per system"
    elif data.kind == "distribution":
        figure, default = _draw_distribution(data, noun), f"{data.metric} per {noun}"
    else:
        figure = _draw_difference(data, noun)
        default = f"{data.metric}: difference per {noun} against {data.baseline}"
    figure.suptitle(default if title is None else title)
    return figure


def _draw_curves(data: PlotData, noun: str) -> Figure:
    figure, (axes,) = _figure(7, 4.5)
    from matplotlib.ticker import MaxNLocator

    ks = sorted({int(k) for s in data.series.values() for k in s.x})
    for index, (name, series) in enumerate(data.series.items()):
        axes.plot(series.x, series.y, label=name, color=_color(index),
                  linestyle=("-", "--", ":", "-.")[index // len(PALETTE) % 4],
                  marker="o" if len(ks) <= 25 else None, markersize=4)
    if len(ks) <= 12:
        axes.set_xticks(ks)
    else:
        axes.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    axes.set_xlabel("k (cut-off)")
    axes.set_ylabel(f"mean {data.metric}@k over {_plural(noun)}")
    axes.grid(alpha=0.3)
    axes.legend(title="system", loc="upper left", bbox_to_anchor=(1.01, 1))
    return figure


# The distribution's histogram: this many bins over the values' range.
_BINS = 20


def _shares(data: PlotData) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Bin edges over every system's values, and per system the share of its values in each
    bin (a point mass, such as the queries at 0, is one tall bin whatever the quartiles)."""
    values = [s.y for s in data.series.values() if len(s.y)]
    low = min((float(v.min()) for v in values), default=0.0)
    high = max((float(v.max()) for v in values), default=1.0)
    if high == low:  # every value equal: one bin around it
        low, high = low - 0.5, high + 0.5
    edges = np.linspace(low, high, _BINS + 1)
    return edges, {name: np.histogram(s.y, edges)[0] / max(len(s.y), 1)
                   for name, s in data.series.items()}


def _draw_distribution(data: PlotData, noun: str) -> Figure:
    names = list(data.series)
    figure, (axes,) = _figure(max(5.5, 1.3 * len(names) + 3), 4.5)
    positions = np.arange(1, len(names) + 1)
    # Behind each box, the histogram of the values mirrored about the box's axis (a violin made
    # of bins): where quartiles coincide (most queries at 0) the box is a line, the bins still
    # show how many values sit where. Widths share one scale, so systems compare.
    edges, shares = _shares(data)
    widest = max((float(share.max()) for share in shares.values()), default=0.0) or 1.0
    centres = (edges[:-1] + edges[1:]) / 2
    for index, (name, position) in enumerate(zip(names, positions, strict=True)):
        widths = 0.8 * shares[name] / widest
        axes.barh(centres, widths, height=np.diff(edges), left=position - widths / 2,
                  color=_color(index), alpha=0.4, linewidth=0,
                  label="share of " + _plural(noun) + " (histogram)" if index == 0 else None)
        if len(data.series[name].y):  # the largest bin's share, written beside it
            top = int(np.argmax(shares[name]))
            axes.text(position + widths[top] / 2 + 0.03, centres[top],
                      f"{shares[name][top]:.0%}", va="center", fontsize="x-small")
    # Whiskers at the minimum and maximum: per-query metrics pile up at 0 and 1, where outlier
    # points would only repeat the whiskers (and with many queries blow up the SVG).
    boxes = axes.boxplot([s.y if len(s.y) else [np.nan] for s in data.series.values()],
                         positions=positions, whis=(0, 100), widths=0.18, patch_artist=True,
                         medianprops={"color": "black"})
    for index, box in enumerate(boxes["boxes"]):
        box.set(facecolor=_color(index), alpha=0.8)
    axes.scatter(positions, [data.means[name] for name in names], marker="D", color="white",
                 edgecolor="black", zorder=3, label="mean")
    axes.set_xticks(positions, [
        f"{name}\nmean {data.means[name]:.4f}\n{_count(len(data.series[name].y), noun)}"
        if len(data.series[name].y) else f"{name}\nno values" for name in names
    ])
    axes.set_xlim(0.4, len(names) + 0.6)
    axes.set_ylabel(data.metric)
    axes.grid(axis="y", alpha=0.3)
    # Outside the axes: inside, it would cover a box or its bins.
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    return figure


def _thinned(sorted_values: np.ndarray) -> np.ndarray:
    """Positions of at most about ``_MAX_CURVE_POINTS`` of ``sorted_values``, evenly spaced, with
    the first and last and those around zero: the values are monotone, so a curve through them
    differs from one through every value by less than a pixel at the figure's width."""
    n = len(sorted_values)
    if n <= _MAX_CURVE_POINTS:
        return np.arange(n)
    even = np.linspace(0, n - 1, _MAX_CURVE_POINTS).round().astype(np.int64)
    # Descending, so -values ascend: the first value <= 0 and the first < 0, and their
    # predecessors, keep the sign changes exact.
    changes = np.array([np.searchsorted(-sorted_values, 0.0, side=side)
                        for side in ("left", "right")])
    return np.unique(np.concatenate([even, np.clip([*changes - 1, *changes], 0, n - 1)]))


def _draw_difference(data: PlotData, noun: str) -> Figure:
    figure, panels = _figure(7, 1.2 + 2.4 * len(data.series), rows=len(data.series))
    for axes, (name, series) in zip(panels, data.series.items(), strict=True):
        n = len(series.y)
        better, worse = int((series.y > 0).sum()), int((series.y < 0).sum())
        # The counts go in the legend, not the title, which long system names would push out.
        sides = ((series.y > 0, GAIN_COLOR, f"{name} better on {better:,}"),
                 (series.y < 0, LOSS_COLOR, f"{data.baseline} better on {worse:,}"))
        handles = []
        if n == 0:
            axes.text(0.5, 0.5, f"no {noun} with a value for both systems", ha="center",
                      va="center", transform=axes.transAxes)
            axes.set_xticks([])
        elif n <= _MAX_QUERY_TICKS:
            for side, color, label in sides:
                handles.append(axes.bar(np.arange(1, n + 1), np.where(side, series.y, 0),
                                        width=0.8, color=color, label=label))
        else:
            # A filled curve through the sorted differences, not a patch per query (a patch
            # each takes minutes and tens of MB of SVG at 100,000 users).
            shown = _thinned(series.y)
            for side, color, label in sides:
                handles.append(axes.fill_between(shown + 1, series.y[shown], 0,
                                                 where=side[shown], interpolate=True,
                                                 color=color, label=label))
        axes.axhline(0, color="black", linewidth=0.8)
        if n:
            handles.append(axes.axhline(data.means[name], color="black", linestyle="--",
                                        linewidth=1, label=f"mean {data.means[name]:+.4f}"))
            # Outside the panel: inside, it would hide bars or the mean line.
            axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1),
                        fontsize="small")
        axes.set_title(f"{name} − {data.baseline}: {_count(n, noun)}, "
                       f"{n - better - worse:,} tied", fontsize="medium")
        if 0 < n <= _MAX_QUERY_TICKS:
            axes.set_xticks(np.arange(1, n + 1), [str(q) for q in series.x],
                            rotation=90 if n > 8 else 0)
        axes.set_xlim(0.5, max(n, 1) + 0.5)
        if n > _MAX_QUERY_TICKS:
            _thousands(axes.xaxis)
        axes.set_ylabel(f"{data.metric} difference")
        axes.grid(axis="y", alpha=0.3)
    panels[-1].set_xlabel(f"{_plural(noun)}, sorted by difference")
    return figure
