"""The SQL text of ``duckrank trec_eval``'s formula macros: each binary metric's record formula
over one shared match per query (``duckrank.reports.trec_eval`` runs them).

The command matches a query's ranking against its relevant documents once (``duckrank_matched``,
the binary metrics' matching step, over the whole ranking: the STRUCT (K, pos, n, cut)) and
computes every binary measure and cut-off from that match, with TEMP macros
``duckrank_trec_eval_<metric>(match, options...)``: trec_eval's default measures ran 2.5 times
faster and planned 5 times faster than with one match per call (docs/trec_eval.md, Speed).
"""

from __future__ import annotations

from collections.abc import Iterable

from duckrank.metrics import METRICS
from duckrank.metrics.record import Metric, option_errors_sql
from duckrank.render.quoting import quote_identifier

# The prefix of the TEMP macros, one per binary metric, that compute its record's formula from a
# match (``formula_macros``).
FORMULA = "duckrank_trec_eval_"

# The binary metrics of the matching step over a list truth (``inputs='hits'``), by name: the
# value of each is its formula over the match, which one query shares.
HITS: dict[str, Metric] = {m.name: m for m in METRICS if m.inputs == "hits" and not m.truth_type}


def formula_macro(function: str) -> str:
    """The CREATE statement of the TEMP macro ``duckrank_trec_eval_<function>(match,
    options...)`` of the binary metric ``function`` (a key of ``HITS``): the record's formula
    (the same text as its duckrank macro's) over a match, after the macro's option checks."""
    metric = HITS[function]
    options = "".join(f", {o.name} := {o.sql_default()}" for o in metric.options)
    checks = option_errors_sql(metric.name, metric.options)
    m = "duckrank_m"
    value = metric.sql.format(pos=f"{m}.pos", K=f"{m}.K", k=f"{m}.cut", n=f"{m}.n")
    whens = "".join(f"WHEN {condition} THEN {error} " for condition, error in checks)
    name = quote_identifier(FORMULA + function)
    body = f"CASE {whens}ELSE {value} END" if whens else value
    return f"CREATE OR REPLACE TEMP MACRO {name}({m}{options}) AS {body}"


def formula_macros(functions: Iterable[str]) -> dict[str, str]:
    """The CREATE statements, by quoted macro name, of the formula macros of ``functions``
    (binary metrics' names, each once, in order)."""
    return {quote_identifier(FORMULA + function): formula_macro(function)
            for function in dict.fromkeys(functions)}
