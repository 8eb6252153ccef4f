"""``duckrank.compare`` and ``comparison``, its work on a connection (the ``duckrank compare``
command's too). The "module's docstring" that ``compare``'s docstring points to is the
package's (``duckrank.reports.compare``): how every judged query is scored for every system."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from duckrank.engines.duckdb import connect, register
from duckrank.evaluation import column_names, needed_functions
from duckrank.reports.compare.options import DEFAULT_TEST, TRIALS, Options, systems_of
from duckrank.reports.compare.report import Report
from duckrank.reports.compare.scoring import Inputs, _scored
from duckrank.reports.compare.significance import _report
from duckrank.stats import REPORT_TESTS
from duckrank.stats.effect import PAIRED_EFFECT_SIZE
from duckrank.stats.resampling import BOOTSTRAP_CI


def comparison(con: duckdb.DuckDBPyConnection, inputs: Inputs, options: Options) -> Report:
    """``compare``'s work on ``con`` (duckrank registered)."""
    options.check(inputs.spelling)
    with _scored(con, inputs, options) as scored:
        return _report(con, scored, options, inputs.polars)


# The statistical tests and intervals a report may call, besides the metrics: every test it
# offers, each mean's interval and the differences' (with d_z's).
_REPORT_FUNCTIONS = tuple(sorted({BOOTSTRAP_CI.name, PAIRED_EFFECT_SIZE.name,
                                  *(test.name for test in REPORT_TESTS.values())}))


def _needed_functions(metrics: Sequence[str]) -> list[str] | None:
    """What ``connect(functions=...)`` registers for a report of ``metrics``: None (every
    function) when a request does not parse, so that the evaluation names the error."""
    functions = needed_functions(metrics)
    return None if functions is None else [*functions, *_REPORT_FUNCTIONS]


def compare(
    runs: Mapping[str, Any] | Sequence[str | Path] | Any,
    qrels: Any,
    metrics: Sequence[str] | str,
    baseline: str | Sequence[str] | None = None,
    test: str = DEFAULT_TEST,
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
    subtopic_column: str | None = None,
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

    ``baseline``: compare every other system with this one (k - 1 comparisons per metric), or
    with each of several (``["bm25", "dense"]``: a pair of baselines compared once); without it
    every pair (k (k - 1) / 2). ``test``: ``'randomization'`` (Fisher's paired
    randomization test, ``trials`` sign flips), ``'t'`` (paired t-test) or ``'wilcoxon'``.
    ``correction``: a method of statsmodels' ``multipletests`` by its name (``'holm'``,
    ``'bonferroni'``, ``'sidak'``, ``'holm-sidak'``, ``'simes-hochberg'``, ``'hommel'``,
    ``'fdr_bh'``, ``'fdr_by'``; ``duckrank.stats.corrections``) or None, over each metric's
    comparisons; a comparison is significant when its corrected p-value is <= ``alpha``.
    ``level``: the bootstrap intervals' confidence level (``trials`` resamples; None for none):
    each system's mean, and with a baseline the paired difference to it and its Cohen's d_z
    (``paired_effect_size``). ``seed`` seeds the resampling. Every comparison also has d_z
    and its wins, ties and losses (queries where the system is above, equal to, below the
    other) in ``frame('comparisons')``.

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
         "rank": rank_column, "grade": grade_column, "subtopic": subtopic_column},
        run_columns, qrels_columns,
    )
    if baseline is not None and not isinstance(baseline, str):
        baseline = tuple(baseline)
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
