"""Comparison reports: several systems scored on the same queries, each system's mean with a
bootstrap interval, and marks for the significant differences (``duckrank.compare``, the
``duckrank compare`` command).

The per-query values come from the evaluation (``duckrank.evaluation``: one per run file, or one
with the systems as a ``by`` column); everything after it runs as SQL on the same connection:
the values in long form, the intervals (``bootstrap_ci``, ``paired_bootstrap_ci``), the tests
(``paired_ttest``, ``wilcoxon``, ``randomization_test``) over every (metric, pair of systems)
with ``GROUP BY``, and the chosen correction (``duckrank.stats.corrections``: statsmodels'
``multipletests`` methods, by its names) over each metric's family of comparisons.
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

One module per job, each importing only those listed before it:

* ``options``: ``Options`` (the baseline, test, correction, alpha, interval level, trials and seed,
  and their checks), the tests and corrections offered, and the ``runs`` argument read as
  ``Systems`` (``systems_of``);
* ``report``: ``Report``, the result: its frames and the systems x metrics table as text,
  Markdown, LaTeX, CSV and JSON;
* ``scoring``: every system scored per query into one table on the connection (``Inputs``,
  ``per_query``);
* ``significance``: the means, intervals, tests and corrections as SQL over that table
  (``adjusted_sql``), and the ``Report`` they make;
* ``api``: ``compare`` and ``comparison`` (its work on a connection, the command line's too);
* ``command``: the command line's ``compare``, ``plot`` and ``report`` (their arguments and
  runners; ``duckrank.cli`` adds them).

This package re-exports their public names: ``from duckrank.reports.compare import compare``.
"""

from __future__ import annotations

# _REPORT_FUNCTIONS: the functions a report registers (tests/stats/test_compare_doc.py reads it).
from duckrank.reports.compare.api import _REPORT_FUNCTIONS, compare, comparison  # noqa: F401
from duckrank.reports.compare.options import (
    CORRECTION_NAMES,
    CORRECTIONS,
    DEFAULT_TEST,
    RESAMPLING,
    TRIALS,
    Options,
    Systems,
    systems_of,
)
from duckrank.reports.compare.report import (
    DIGITS,
    LEGEND_WIDTH,
    LETTERS,
    SUPERSCRIPTS,
    TABLES,
    Report,
)
from duckrank.reports.compare.scoring import Inputs, per_query
from duckrank.reports.compare.significance import adjusted_sql

__all__ = [
    "CORRECTIONS", "CORRECTION_NAMES", "DEFAULT_TEST", "DIGITS", "LEGEND_WIDTH", "LETTERS",
    "RESAMPLING", "SUPERSCRIPTS", "TABLES", "TRIALS", "Inputs", "Options", "Report", "Systems",
    "adjusted_sql", "compare", "comparison", "per_query", "systems_of",
]
