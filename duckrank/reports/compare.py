"""Comparison reports: several systems scored on the same queries, each system's mean with a
bootstrap interval, and marks for the significant differences (``duckrank.compare``, the
``duckrank compare`` command).

The per-query values come from the evaluation (``duckrank.evaluation``: one per run file, or one
with the systems as a ``by`` column); everything after it runs as SQL on the same connection:
the values in long form, the intervals (``bootstrap_ci``, ``paired_bootstrap_ci``), the tests
(``paired_ttest``, ``wilcoxon``, ``randomization_test``) over every (metric, pair of systems)
with ``GROUP BY``, and the Holm or Bonferroni correction as window functions over each metric's
family of comparisons.
Python only lays out the few result rows.

The per-query values are ``duckrank.evaluate``'s (``per_user=True``), so a report's means are
evaluate's means. Every query the qrels judge is scored for every system: a judged query a system
did not rank is scored for it as an empty list (0 on ndcg, recall, map, mrr and precision;
trec_eval -c and ranx's ``make_comparable`` count it the same way), since a system that returns
nothing for a query has failed it, and leaving the query out would reward a system for skipping
hard queries and break the pairing the tests need. That holds for queries that no system ranked
too: they count 0 in every system's mean and enter the tests as zero differences, as in
``evaluate`` and trec_eval -c. A metric undefined on a query (ndcg where no item is relevant) stays
undefined (NULL) for every system: it enters neither the means nor the tests. One
``UnrankedQueries`` warning per system that left judged queries unranked names the system and
counts them; ``frame()``'s ``filled`` column counts the values they give.
"""

from __future__ import annotations

import csv
import io
import json
import math
import textwrap
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import pyarrow as pa

from duckrank.engines.duckdb import connect, register
from duckrank.evaluation import (
    ColumnNames,
    DroppedRows,
    UnrankedQueries,
    as_relation,
    column_names,
    evaluation,
    is_beyond,
    is_polars,
    needed_functions,
    reader_columns,
)
from duckrank.files.runs import file_format, read_file
from duckrank.render.quoting import latex_text, markdown_text, plain_text, quote_identifier
from duckrank.render.spelling import PYTHON, Spelling
from duckrank.stats.t_test import student_t

if TYPE_CHECKING:
    import pandas

# test= -> (the SQL aggregate, its name in a legend, whether it returns a statistic)
TESTS = {
    "randomization": ("randomization_test", "Fisher's paired randomization test", False),
    "t": ("paired_ttest", "paired t-test", True),
    "wilcoxon": ("wilcoxon", "Wilcoxon signed-rank test", True),
}
CORRECTIONS = ("holm", "bonferroni", None)
CORRECTION_NAMES = {"holm": "Holm", "bonferroni": "Bonferroni"}
# Bootstrap resamples and randomization trials: 10,000 bootstrap resamples took 3.7 s per
# interval at 100,000 users; 1,000 move the ends of a 95% interval by about a tenth of the mean's
# standard error from one seed to another (docs/compare.md, bootstrap_ci).
TRIALS = 1000
DIGITS = 4
LEGEND_WIDTH = 100  # the text table's legend is wrapped to this many characters
LETTERS = "abcdefghijklmnopqrstuvwxyz"
SUPERSCRIPTS = "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ"
TABLES = ("summary", "comparisons")
_NOTES_SHOWN = 5  # comparisons without a p-value named in the legend (all in the frame)


@dataclass(frozen=True)
class Options:
    """How the systems are compared (see ``compare``)."""

    baseline: str | None = None
    test: str = "randomization"
    alpha: float = 0.05
    correction: str | None = "holm"
    level: float | None = 0.95
    trials: int = TRIALS
    seed: int = 0

    def check(self, spelling: Spelling = PYTHON) -> None:
        def bad(keyword: str, value: Any, must: str) -> ValueError:
            shown = "none" if value is None and spelling.cli else value
            return _error(spelling, f"{spelling.argument(keyword, shown)}: {must}")

        if self.test not in TESTS:
            raise bad("test", self.test, f"must be one of {', '.join(TESTS)}")
        if self.correction not in CORRECTIONS:
            raise bad("correction", self.correction, "must be holm, bonferroni or "
                      + ("none" if spelling.cli else "None"))
        if not (isinstance(self.alpha, int | float) and 0 < self.alpha < 1):
            raise bad("alpha", self.alpha, "must be a number strictly between 0 and 1")
        if self.level is not None and not (isinstance(self.level, int | float)
                                           and 0 < self.level < 1):
            raise bad("level", self.level, "must be a number strictly between 0 and 1"
                      + ("" if spelling.cli else ", or None for no interval"))
        if isinstance(self.trials, bool) or not isinstance(self.trials, int) or self.trials < 1:
            raise bad("trials", self.trials, "must be a positive integer")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise bad("seed", self.seed, "must be a non-negative integer")

    def pairs(self, systems: Sequence[str], spelling: Spelling = PYTHON
              ) -> list[tuple[int, int]]:
        """The comparisons made, as (system, other) indexes: each system against the baseline,
        or every pair."""
        if self.baseline is None:
            return [(a, b) for a in range(len(systems)) for b in range(a + 1, len(systems))]
        if self.baseline not in systems:
            raise _error(spelling, f"{spelling.argument('baseline', self.baseline)} is not one "
                         f"of the systems: {', '.join(systems)}")
        base = systems.index(self.baseline)
        return [(a, base) for a in range(len(systems)) if a != base]

    def check_trials(self, family: int, spelling: Spelling = PYTHON) -> None:
        """The randomization test's smallest p-value is 1 / (trials + 1); corrected over
        ``family`` comparisons it must still reach alpha, or no mark could ever appear."""
        if self.test != "randomization" or self.correction is None:
            return
        if family / (self.trials + 1) > self.alpha:
            needed = math.ceil(family / self.alpha - 1)
            raise _error(
                spelling,
                f"{spelling.argument('trials', self.trials)} is too few for "
                f"{_plural(family, 'comparison')} per metric with the "
                f"{CORRECTION_NAMES[self.correction]} correction at "
                f"{spelling.argument('alpha', self.alpha)}: the smallest "
                f"corrected p-value would be {family}/{self.trials + 1}; use at least "
                f"{needed} trials"
            )


@dataclass(frozen=True)
class Systems:
    """The runs to compare, as given: one run per system (``runs``: name -> run) or one long run
    with a system column (``by``)."""

    runs: tuple[tuple[str, Any], ...] = ()
    long: Any = None
    by: str | None = None


def systems_of(runs: Any, by: str | None, spelling: Spelling = PYTHON) -> Systems:
    """Read ``compare``'s ``runs`` argument: a mapping name -> run, a sequence of paths (named by
    their stems), or with ``by`` one run holding every system."""
    if by is not None:
        if isinstance(runs, Mapping) or (isinstance(runs, Sequence)
                                         and not isinstance(runs, str)):
            raise _error(spelling, f"{spelling.argument('by', by)} reads the systems from one "
                         "run's column: give one run (a path or a table), not several")
        return Systems(long=runs, by=by)
    if isinstance(runs, Mapping):
        named = tuple((str(name), run) for name, run in runs.items())
    elif isinstance(runs, Sequence) and not isinstance(runs, str):
        other = next((run for run in runs if not isinstance(run, str | Path)), None)
        if other is not None:
            raise ValueError("compare: runs= as a list takes file paths (each system is named by "
                             "its file's stem), got a list holding a "
                             f"{type(other).__name__}; name tables with a mapping, "
                             "{'bm25': table, ...}")
        named = tuple((Path(run).stem, run) for run in runs)
        stems = [name for name, _ in named]
        if len(set(stems)) < len(stems):
            twice = sorted({s for s in stems if stems.count(s) > 1})
            fix = ("rename a file" if spelling.cli
                   else "name them with a mapping, {'name': path, ...}")
            raise _error(spelling, f"two runs are named {twice[0]!r} by their file stems; {fix}")
    else:
        raise ValueError(
            "compare: runs= must be a mapping name -> run, a list of run files, or one run with "
            f"a system column and {spelling.argument('by', 'system')}; got "
            f"{type(runs).__name__}"
        )
    return Systems(runs=named)


def _error(spelling: Spelling, message: str) -> ValueError:
    """A ValueError naming ``compare`` from Python (the command line names its command)."""
    return ValueError(message if spelling.cli else f"compare: {message}")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


# --- the report ----------------------------------------------------------------------------------

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
              interval: tuple[str, str] = (" [", "]")) -> str:
        row = self._cells[system, metric]
        text = _fixed(row["mean"], digits) + marks
        if self.options.level is not None:
            text += (f"{interval[0]}{_fixed(row['ci_low'], digits)}, "
                     f"{_fixed(row['ci_high'], digits)}{interval[1]}")
        return text

    def _superscript(self, letters: str) -> str:
        return "".join(SUPERSCRIPTS[LETTERS.index(c)] for c in letters)

    def _rows(self, digits: int, marks: Any = None, name: Any = str) -> list[list[str]]:
        """One row per system: its letter, ``name(system)`` (quoted for the output's language)
        and its cells."""
        marks = marks or self._superscript
        return [
            [LETTERS[i], name(system),
             *(self._cell(system, m, digits, marks(self._marks(system, m))) for m in self.metrics)]
            for i, system in enumerate(self.systems)
        ]

    def legend(self) -> list[str]:
        """What the marks and intervals mean, one sentence a line."""
        o = self.options
        _, test_name, _ = TESTS[o.test]
        against = (f"against the baseline {o.baseline}" if o.baseline is not None
                   else "pairwise")
        family = self.comparisons.num_rows // len(self.metrics)
        corrected = (f"{CORRECTION_NAMES[o.correction]}-corrected over "
                     f"{_plural(family, 'comparison')} per metric" if o.correction
                     else "not corrected for multiple comparisons")
        trials = f", {o.trials:,} trials, seed {o.seed}" if o.test == "randomization" else ""
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
            lines.append(f"{len(notes) - _NOTES_SHOWN} more comparisons have no p-value "
                         "(frame('comparisons')'s note column says why).")
        filled = sum(self.summary["filled"].to_pylist())
        if filled:
            lines.append(f"{filled} (system, query, metric) values are of judged queries a "
                         "system did not rank, scored as an empty list (0 on ndcg, map, mrr, "
                         "recall, precision; frame()'s 'filled' column).")
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
                 *(row(r) for r in self._rows(digits, name=markdown_text))]
        return "\n".join([*lines, "", markdown_text(" ".join(self.legend()))]) + "\n"

    def to_latex(self, digits: int = DIGITS) -> str:
        """A LaTeX table with booktabs rules (``\\usepackage{booktabs}``); marks as
        ``\\textsuperscript``, the legend as the caption."""
        def marks(letters: str) -> str:
            return f"\\textsuperscript{{{letters}}}" if letters else ""

        body = [" & ".join(r) + r" \\" for r in self._rows(digits, marks, latex_text)]
        header = " & ".join(["", "System", *map(latex_text, self.metrics)]) + r" \\"
        return "\n".join([
            r"\begin{table}[t]", r"\centering",
            r"\begin{tabular}{ll" + "r" * len(self.metrics) + "}",
            r"\toprule", header, r"\midrule", *body, r"\bottomrule", r"\end{tabular}",
            r"\caption{" + latex_text(" ".join(self.legend())) + "}",
            r"\end{table}",
        ]) + "\n"

    def to_csv(self, table: str = "summary") -> str:
        """``frame(table)`` as CSV, every digit kept (NULL is an empty field)."""
        chosen = self._table(table)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(chosen.column_names)
        writer.writerows(["" if v is None else v for v in row.values()]
                         for row in chosen.to_pylist())
        return out.getvalue()

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

    def plot(self, path: str | Path, kind: str = "curves", metric: str | None = None, *,
             title: str | None = None) -> Any:
        """Draw the per-query values with ``duckrank.reports.plots.plot`` (needs matplotlib:
        ``pip install 'duckrank[plots]'``) and return the numbers drawn (its ``PlotData``):
        ``'curves'`` (the mean of a metric family against k, per system), ``'distribution'``
        (one metric's per-query values per system) or ``'difference'`` (per query, against the
        baseline)."""
        from duckrank.reports.plots import plot

        return plot(self.per_query_values, path, kind, metric=metric,
                    baseline=self.options.baseline, title=title)


# --- computing it --------------------------------------------------------------------------------

def _marks(comparisons: list[dict[str, Any]]) -> dict[tuple[int, int], str]:
    """(system index, metric index) -> the letters of the systems it beats (significant, and the
    higher mean), in the systems' order."""
    beaten: dict[tuple[int, int], set[int]] = {}
    for row in comparisons:
        if row["significant"] and row["mean_diff"]:
            winner, loser = ((row["a"], row["b"]) if row["mean_diff"] > 0
                             else (row["b"], row["a"]))
            beaten.setdefault((winner, row["metric"]), set()).add(loser)
    return {key: "".join(LETTERS[i] for i in sorted(losers)) for key, losers in beaten.items()}


def adjusted_sql(tested: str, correction: str | None) -> str:
    """SELECT the rows of ``tested`` (columns metric, a, b, p_value, ...) with ``p_adjusted``:
    the family is each metric's comparisons with a p-value (m of them). Holm: sorted p(1) <= ...
    <= p(m), p_adj(i) = min(1, max over j <= i of (m - j + 1) p(j)); Bonferroni: min(1, m p);
    None: p. A NULL p-value stays NULL."""
    m = "count(p_value) OVER (PARTITION BY metric)"
    if correction is None:
        adjusted = "p_value"
    elif correction == "bonferroni":
        # (least() skips NULLs: a NULL p-value must not become 1.)
        adjusted = f"CASE WHEN p_value IS NOT NULL THEN least(1.0, {m} * p_value) END"
    else:
        order = "PARTITION BY metric ORDER BY p_value NULLS LAST, a, b"
        step = f"({m} - row_number() OVER ({order}) + 1)"
        return f"""
            SELECT * EXCLUDE (duckrank_holm),
                   CASE WHEN p_value IS NOT NULL THEN least(1.0, max(duckrank_holm) OVER (
                     {order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) END AS p_adjusted
            FROM (SELECT *, {step} * p_value AS duckrank_holm FROM {tested})"""
    return f"SELECT *, {adjusted} AS p_adjusted FROM {tested}"


@contextmanager
def _temporary(con: duckdb.DuckDBPyConnection) -> Iterator[Any]:
    """Names for temporary objects on ``con``, dropped (or unregistered) at the end."""
    made: list[tuple[str, str]] = []

    def name(kind: str) -> str:
        text = f"duckrank_compare_{uuid.uuid4().hex}"
        made.append((kind, text))
        return text

    try:
        yield name
    finally:
        for kind, text in reversed(made):
            if kind == "registered":
                con.unregister(text)
            else:
                con.execute(f"DROP {kind} IF EXISTS {quote_identifier(text)}")


def _run_table(con: duckdb.DuckDBPyConnection, run: Any, inputs: Inputs, temporary: Any,
               registered: list[str]) -> str:
    """A view or table of ``con`` holding one run (a path or a table)."""
    if not isinstance(run, str | Path):
        view = temporary("VIEW")
        as_relation(con, run, "run", inputs.names.run, registered).create_view(view)
        return quote_identifier(view)
    fmt = file_format(run) if inputs.run_format == "auto" else inputs.run_format
    relation = read_file(con, run, "run", fmt, reader_columns(inputs.names.run),
                         glob=inputs.glob)
    view = temporary("VIEW")
    relation.create_view(view)
    if fmt == "parquet":
        return quote_identifier(view)
    # The evaluation scans the run several times (checks, a sample, once per range of query
    # ids): text is parsed once, into a table (beyond memory_limit DuckDB spills it to disk).
    table = quote_identifier(temporary("TABLE"))
    con.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM {quote_identifier(view)}")
    return table


def _systems_column(con: duckdb.DuckDBPyConnection, inputs: Inputs, table: str,
                    index: str) -> tuple[str, list[str]]:
    """With ``by``: the long run's system column and its values (the systems, sorted), written
    to ``index`` as a table ``(value, idx)``."""
    spelling, by = inputs.spelling, inputs.systems.by
    columns = con.sql(f"SELECT * FROM {table}").columns
    column = next((c for c in columns if c.lower() == by.lower()), None)
    if column is None:
        raise _error(spelling, f"{spelling.argument('by', by)}: the run has no such "
                     f"column; its columns are: {', '.join(columns)}")
    con.execute(f"""CREATE TEMP TABLE {index} AS
        SELECT value, (row_number() OVER (ORDER BY value NULLS FIRST) - 1)::BIGINT AS idx
        FROM (SELECT DISTINCT {quote_identifier(column)} AS value FROM {table})""")
    values = con.execute(f"SELECT value IS NULL, value::VARCHAR FROM {index} ORDER BY idx"
                         ).fetchall()
    if values and values[0][0]:
        raise _error(spelling, f"the run's system column {column!r} has NULL values: every "
                     "row must name its system")
    return column, [text for _, text in values]


def _check_systems(systems: list[str], options: Options | None, spelling: Spelling) -> None:
    """What needs the systems' names, checked before any evaluation."""
    if len(systems) < 2:
        raise _error(spelling, f"needs at least two systems, got {len(systems)}"
                     + (f" ({systems[0]!r})" if systems else ""))
    if len(systems) > len(LETTERS):
        raise _error(spelling, f"at most {len(LETTERS)} systems get a letter each, got "
                     f"{len(systems)}")
    if options is not None:
        options.check_trials(len(options.pairs(systems, spelling)), spelling)


def _evaluate_into(con: duckdb.DuckDBPyConnection, inputs: Inputs, run: str,
                   by: str | None, system: int | None, wide: str, first: bool) -> list[str]:
    """Score ``run`` per query into the table ``wide`` (s, q, m0, m1, ..., ranked; created
    when ``first``): ``s`` is the ``by`` column's value, or the constant ``system``; a row per
    judged query and system, ``ranked`` false where the run has no list for it (evaluate's
    empty list). Returns the metrics' labels. The rows go from DuckDB to DuckDB, never through
    Python. The evaluation's own UnrankedQueries warning is not shown: ``_warn_unranked`` says
    it per system, by name (with ``by`` the evaluation counts every system together)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnrankedQueries)
        return _evaluate_rows(con, inputs, run, by, system, wide, first)


def _evaluate_rows(con: duckdb.DuckDBPyConnection, inputs: Inputs, run: str,
                   by: str | None, system: int | None, wide: str, first: bool) -> list[str]:
    with evaluation(con, con.sql(f"SELECT * FROM {run}"), inputs.qrels, inputs.metrics,
                    [by] if by is not None else [], True, inputs.names, inputs.ids,
                    inputs.spelling, inputs.glob, ranked=True) as result:
        labels = result.columns[(by is not None) + 1:-1]  # the last is duckrank_ranked
        names = ["q", *(f"m{i}" for i in range(len(labels))), "ranked"]
        if by is None:
            select, aliases = f"SELECT {system} AS s, *", ", ".join(names)
        else:
            select, aliases = "SELECT *", ", ".join(["s", *names])
        for sql, params in result.queries():
            query = f"{select} FROM ({sql}) AS scored({aliases})"
            con.execute(f"CREATE TEMP TABLE {wide} AS {query}" if first
                        else f"INSERT INTO {wide} {query}", params)
            first = False
        return labels


@dataclass(frozen=True)
class Inputs:
    """What is scored: the runs as ``Systems``, the qrels, the metric requests, and how the
    tables are read (as ``duckrank.evaluate`` reads them); errors are spelled for Python or the
    command line."""

    systems: Systems
    qrels: Any
    metrics: Sequence[str]
    names: ColumnNames
    ids: str = "typed"
    glob: bool = False
    spelling: Spelling = PYTHON
    run_format: str = "auto"  # how run paths are read (``duckrank.files.runs.FILE_FORMATS``)

    @property
    def polars(self) -> bool:
        runs = [run for _, run in self.systems.runs] + [self.systems.long, self.qrels]
        return any(map(is_polars, runs))


@dataclass(frozen=True)
class _Scored:
    """The per-query values on the connection: ``table`` (system, query, metric, value,
    filled: a value of a judged query the system did not rank; systems and metrics as indexes
    into ``systems`` and ``labels``)."""

    table: str
    systems: list[str]
    labels: list[str]
    temporary: Any


@contextmanager
def _scored(con: duckdb.DuckDBPyConnection, inputs: Inputs,
            options: Options | None = None) -> Iterator[_Scored]:
    """Score every system (``_per_query_table``), every judged query for each (the module's
    docstring); ``options``' checks that need the systems' names run before any
    evaluation. Only the per-query table outlives the scoring: the runs parsed into tables and
    the evaluation's results are dropped before the tests and intervals run."""
    with _temporary(con) as temporary:
        per_query, systems, labels = _per_query_table(con, inputs, options, temporary)
        yield _Scored(per_query, systems, labels, temporary)


def _per_query_table(con: duckdb.DuckDBPyConnection, inputs: Inputs, options: Options | None,
                     kept: Any) -> tuple[str, list[str], list[str]]:
    """The per-query table (named by ``kept``, the caller's temporary names), the systems and
    the metric labels; everything else made on the way is dropped on return.

    One run file per system: each is read, scored and dropped in turn, so memory holds one
    run at a time (the qrels are read once per system). One long run with ``by``: one
    evaluation with the system column as its ``by`` column. Either way the evaluation scores
    every judged query for every system (an unranked one as an empty list), and its rows are
    the per-query values as they are: the report's means are ``duckrank.evaluate``'s."""
    systems_in, spelling = inputs.systems, inputs.spelling
    beyond = [text for text in inputs.metrics if is_beyond(text)]
    if beyond:  # before any file is read
        raise _error(spelling, f"{beyond[0]!r} is a beyond-accuracy metric, which is not "
                     "compared query by query; duckrank.evaluate gives it per system")
    registered: list[str] = []
    try:
        with _temporary(con) as temporary:
            index = quote_identifier(temporary("TABLE"))
            wide = quote_identifier(temporary("TABLE"))
            if systems_in.by is None:
                systems = [name for name, _ in systems_in.runs]
                _check_systems(systems, options, spelling)
                con.execute(f"CREATE TEMP TABLE {index} AS SELECT range AS value, range AS idx "
                            f"FROM range({len(systems)})")
                for i, (name, run) in enumerate(systems_in.runs):
                    with _temporary(con) as each, warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always", DroppedRows)
                        table = _run_table(con, run, inputs, each, registered)
                        labels = _evaluate_into(con, inputs, table, None, i, wide, i == 0)
                    for warning in caught:  # each system is its own evaluation: say which
                        warnings.warn(f"system {name!r}: {warning.message}", warning.category,
                                      stacklevel=5)
            else:
                table = _run_table(con, systems_in.long, inputs, temporary, registered)
                column, systems = _systems_column(con, inputs, table, index)
                _check_systems(systems, options, spelling)
                labels = _evaluate_into(con, inputs, table, column, None, wide, True)
            _warn_unranked(con, wide, index, systems)
            per_query = quote_identifier(kept("TABLE"))
            values = ", ".join(f"m{i}" for i in range(len(labels)))
            con.execute(f"""
                CREATE TEMP TABLE {per_query} AS
                SELECT system, query, metric, value,
                       NOT ranked AND value IS NOT NULL AS filled
                FROM (SELECT i.idx AS system, w.q AS query, w.ranked,
                             unnest(range({len(labels)})) AS metric, unnest([{values}]) AS value
                      FROM {wide} w JOIN {index} i ON w.s = i.value)""")
            return per_query, systems, labels
    finally:
        for name in registered:
            con.unregister(name)


def _warn_unranked(con: duckdb.DuckDBPyConnection, wide: str, index: str,
                   systems: list[str]) -> None:
    """One UnrankedQueries warning per system that has judged queries without a list, naming
    it (in the systems' order)."""
    counts = con.execute(f"""
        SELECT i.idx, count(*) FROM {wide} w JOIN {index} i ON w.s = i.value
        WHERE NOT w.ranked GROUP BY i.idx ORDER BY i.idx""").fetchall()
    for idx, count in counts:
        warnings.warn(
            f"system {systems[idx]!r}: {count} judged "
            f"{'query has' if count == 1 else 'queries have'} no list in the run: "
            f"{'it is' if count == 1 else 'each is'} scored as an empty list (0 where the metric "
            "is defined) and counted in the means and the tests (frame()'s 'filled' column "
            "counts the values)", UnrankedQueries, stacklevel=6)


def _long(con: duckdb.DuckDBPyConnection, scored: _Scored) -> pa.Table:
    """The per-query values with the systems' and metrics' names, as ``Report.per_query``."""
    return con.sql(f"""
        SELECT $systems[p.system + 1] AS system, p.query, $labels[p.metric + 1] AS metric,
               p.value
        FROM {scored.table} p ORDER BY p.system, p.metric, p.query""",
        params={"systems": scored.systems, "labels": scored.labels}).to_arrow_table()


def per_query(con: duckdb.DuckDBPyConnection, inputs: Inputs,
              baseline: str | None = None) -> pa.Table:
    """The tidy per-query table alone (``Report.per_query``), without tests or intervals;
    ``baseline``, when given, must name a system (checked before the evaluation)."""
    checks = None if baseline is None else Options(baseline=baseline, correction=None)
    with _scored(con, inputs, checks) as scored:
        return _long(con, scored)


def comparison(con: duckdb.DuckDBPyConnection, inputs: Inputs, options: Options) -> Report:
    """``compare``'s work on ``con`` (duckrank registered)."""
    options.check(inputs.spelling)
    with _scored(con, inputs, options) as scored:
        return _report(con, scored, options, inputs.polars)


def _report(con: duckdb.DuckDBPyConnection, scored: _Scored, o: Options,
            polars: bool) -> Report:
    systems, labels, per_query, temporary = (scored.systems, scored.labels, scored.table,
                                             scored.temporary)
    pairs = o.pairs(systems)
    resampling = {"trials": o.trials, "seed": o.seed}
    interval = {"level": o.level, **resampling}

    def call(function: str, arguments: str, named: Mapping[str, Any]) -> str:
        return f"{function}({arguments}{''.join(f', {n} := ${n}' for n in named)})"

    ci = (f"{call('bootstrap_ci', 'value', interval)}" if o.level is not None
          else "NULL::STRUCT(ci_low DOUBLE, ci_high DOUBLE)")
    summary = con.sql(f"""
        SELECT system, metric, n, filled, mean, ci.ci_low AS ci_low, ci.ci_high AS ci_high
        FROM (SELECT system, metric, count(value) AS n,
                     count(*) FILTER (WHERE filled) AS filled, avg(value) AS mean, {ci} AS ci
              FROM {per_query} GROUP BY ALL)
        ORDER BY system, metric""",
        params=interval if o.level is not None else {}).to_arrow_table().to_pylist()

    function, _, has_statistic = TESTS[o.test]
    # The t-test of a report is computed from DuckDB's count, avg and var_samp (Welford: exact
    # digits even when the differences are constant, where paired_ttest's one-pass sums refuse
    # the whole query) with paired_ttest's formula (``student_t``); a cell without a p-value
    # gets its reason (``_note``) and the rest of the report stands.
    test_call = ("struct_pack(variance := var_samp(x.value - y.value))" if o.test == "t"
                 else call(function, "x.value, y.value",
                           resampling if o.test == "randomization" else {}))
    difference = (f", {call('paired_bootstrap_ci', 'x.value, y.value', interval)} AS d"
                  if o.level is not None and o.baseline is not None
                  else ", NULL::STRUCT(ci_low DOUBLE, ci_high DOUBLE) AS d")
    params: dict[str, Any] = {}
    if o.test == "randomization":
        params |= resampling
    if o.level is not None and o.baseline is not None:
        params |= interval
    statistic = ("NULL::DOUBLE" if o.test == "t" or not has_statistic else "t.statistic")
    p_value = "NULL::DOUBLE" if o.test == "t" else "t.p_value"
    variance = "t.variance" if o.test == "t" else "NULL::DOUBLE"
    cells = con.sql(f"""
        SELECT metric, a, b, n, mean_diff, {statistic} AS statistic, {p_value} AS p_value,
               d.ci_low AS ci_low, d.ci_high AS ci_high, {variance} AS variance, lowest,
               highest, not_finite
        FROM (
          SELECT x.metric, p.a, p.b, count(x.value - y.value) AS n,
                 avg(x.value - y.value) AS mean_diff, {test_call} AS t{difference},
                 min(x.value - y.value) AS lowest, max(x.value - y.value) AS highest,
                 count(*) FILTER (WHERE NOT isfinite(x.value - y.value)) AS not_finite
          FROM (VALUES {', '.join(f'({a}, {b})' for a, b in pairs)}) p(a, b)
          JOIN {per_query} x ON x.system = p.a
          JOIN {per_query} y ON y.system = p.b AND y.query = x.query AND y.metric = x.metric
          GROUP BY ALL)""", params=params).to_arrow_table()
    tested = _tested(cells, o.test, labels, systems)
    name = temporary("registered")
    con.register(name, tested)
    compared = con.sql(f"""
        SELECT metric, a, b, n, mean_diff, statistic, p_value, p_adjusted,
               coalesce(p_adjusted <= $alpha, false) AS significant, ci_low, ci_high, note
        FROM ({adjusted_sql(quote_identifier(name), o.correction)}) ORDER BY metric, a, b""",
        params={"alpha": o.alpha}).to_arrow_table().to_pylist()

    marks = _marks(compared)
    summary_table = pa.table({
        "system": [systems[r["system"]] for r in summary],
        "letter": [LETTERS[r["system"]] for r in summary],
        "metric": [labels[r["metric"]] for r in summary],
        **{name: pa.array([r[name] for r in summary], pa.int64()) for name in ("n", "filled")},
        **{name: pa.array([r[name] for r in summary], pa.float64())
           for name in ("mean", "ci_low", "ci_high")},
        "beats": [marks.get((r["system"], r["metric"]), "") for r in summary],
    })
    comparisons_table = pa.table({
        "metric": [labels[r["metric"]] for r in compared],
        "system": [systems[r["a"]] for r in compared],
        "other": [systems[r["b"]] for r in compared],
        **{name: pa.array([r[name] for r in compared], pa.int64() if name == "n"
                          else pa.float64())
           for name in ("n", "mean_diff", "statistic", "p_value", "p_adjusted")},
        "significant": pa.array([r["significant"] for r in compared], pa.bool_()),
        **{name: pa.array([r[name] for r in compared], pa.float64())
           for name in ("ci_low", "ci_high")},
        "note": pa.array([r["note"] for r in compared], pa.string()),
    })
    return Report(tuple(systems), tuple(labels), o, summary_table, comparisons_table,
                  _long(con, scored), polars)


def _tested(cells: pa.Table, test: str, labels: list[str], systems: list[str]) -> pa.Table:
    """The comparisons' rows (metric, a, b, n, mean_diff, statistic, p_value, ci_low, ci_high,
    note): for the t-test, t and p from n, mean_diff and the variance; for every test, where
    p_value is NULL, ``note`` says why."""
    rows = cells.to_pylist()
    if test == "t":
        nan = float("nan")
        statistic, p_value = student_t(
            np.array([r["n"] for r in rows], dtype=np.float64),
            np.array([nan if r["mean_diff"] is None else r["mean_diff"] for r in rows]),
            np.array([nan if r["variance"] is None else r["variance"] for r in rows]))
        for row, t, p in zip(rows, statistic.tolist(), p_value.tolist(), strict=True):
            # Equal differences have no variance: t is ±inf or 0/0 (scipy says inf, p = 0),
            # a statistic the t distribution does not describe; paired_ttest refuses them.
            constant = row["lowest"] is not None and row["lowest"] == row["highest"]
            row["statistic"], row["p_value"] = (None, None) if constant else (_plain(t), _plain(p))
    for row in rows:
        row["note"] = None if row["p_value"] is not None else _note(row, test)
    names = ("metric", "a", "b", "n", "mean_diff", "statistic", "p_value", "ci_low", "ci_high",
             "note")
    types = {"metric": pa.int64(), "a": pa.int64(), "b": pa.int64(), "n": pa.int64(),
             "note": pa.string()}
    return pa.table({name: pa.array([r[name] for r in rows], types.get(name, pa.float64()))
                     for name in names})


def _note(row: dict[str, Any], test: str) -> str:
    """Why a comparison has no p-value."""
    if row["not_finite"]:
        return (f"{_plural(row['not_finite'], 'difference')} not finite (NaN or infinite): "
                "no p-value is defined")
    if row["n"] < 2:
        return (f"{row['n']} {'query' if row['n'] == 1 else 'queries'} with a value for both "
                "systems; a test needs 2")
    if row["lowest"] == row["highest"]:
        value = f"{row['lowest']:+.{DIGITS}g}" if row["lowest"] else "0"
        if test == "t":
            return (f"every difference is {value}: no variance, so no t statistic (the "
                    "randomization test gives a p-value)")
        return f"every difference is {value}"
    return "the test is undefined for these values"


# The statistical tests and intervals a report may call, besides the metrics.
_REPORT_FUNCTIONS = ("bootstrap_ci", "paired_bootstrap_ci", "paired_ttest", "randomization_test",
                     "wilcoxon")


def _needed_functions(metrics: Sequence[str]) -> list[str] | None:
    """What ``connect(functions=...)`` registers for a report of ``metrics``: None (every
    function) when a request does not parse, so that the evaluation names the error."""
    functions = needed_functions(metrics)
    return None if functions is None else [*functions, *_REPORT_FUNCTIONS]


def compare(
    runs: Mapping[str, Any] | Sequence[str | Path] | Any,
    qrels: Any,
    metrics: Sequence[str] | str,
    baseline: str | None = None,
    test: str = "randomization",
    alpha: float = 0.05,
    correction: str | None = "holm",
    *,
    by: str | None = None,
    level: float | None = 0.95,
    trials: int = TRIALS,
    seed: int = 0,
    query_column: str | None = None,
    item_column: str | None = None,
    score_column: str | None = None,
    rank_column: str | None = None,
    grade_column: str | None = None,
    run_columns: Mapping[str, str] | None = None,
    qrels_columns: Mapping[str, str] | None = None,
    ids: str = "typed",
    glob: bool = False,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> Report:
    """Score several systems on the same queries and compare them: each system's mean of each
    metric with a bootstrap interval, and significance marks (a letter per system it beats).

    ``runs``: a mapping name -> run (a path or a table, as ``duckrank.evaluate`` takes), a list
    of run files (each system named by its file's stem), or one run with a system column named by
    ``by``. ``qrels``, ``metrics`` and the column options: as ``duckrank.evaluate``.

    ``baseline``: compare every other system with this one (k - 1 comparisons per metric);
    without it every pair (k (k - 1) / 2). ``test``: ``'randomization'`` (Fisher's paired
    randomization test, ``trials`` sign flips), ``'t'`` (paired t-test) or ``'wilcoxon'``.
    ``correction``: ``'holm'``, ``'bonferroni'`` or None, over each metric's comparisons; a
    comparison is significant when its corrected p-value is <= ``alpha``. ``level``: the
    bootstrap intervals' confidence level (``trials`` resamples; None for none): each system's
    mean, and with a baseline the paired difference to it. ``seed`` seeds the resampling.

    Every judged query is scored for every system, as ``duckrank.evaluate`` scores it (each
    system's mean is evaluate's for its run): a judged query a system did not rank is an empty
    list, 0 on ndcg, map, mrr, recall, precision (as trec_eval -c), even when no system ranked it;
    a metric undefined on a query (no relevant item) is NULL for every system and left out of the
    means and tests. Each system with unranked judged queries gets one ``UnrankedQueries`` warning
    naming it; ``frame()``'s ``filled`` counts them. See the module's docstring and
    docs/compare.md.
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    names = column_names(
        {"query": query_column, "item": item_column, "score": score_column,
         "rank": rank_column, "grade": grade_column},
        run_columns, qrels_columns,
    )
    options = Options(baseline, test, alpha, correction, level, trials, seed)
    options.check()  # before connecting: a typo costs no evaluation
    systems = systems_of(runs, by)
    con = (register(connection) if connection is not None
           else connect(functions=_needed_functions(metrics)))
    try:
        return comparison(con, Inputs(systems, qrels, metrics, names, ids, glob), options)
    finally:
        if connection is None:
            con.close()
