"""The SQL text of ``duckrank trec_eval``'s formula macros: each binary, graded or judged
metric's record formula over one shared match per query (``duckrank.reports.trec_eval`` runs
them).

The command matches a query's ranking against its relevant documents once (``duckrank_matched``,
the binary metrics' matching step, over the whole ranking: the STRUCT (K, pos, n, cut)) and
computes every binary measure and cut-off from that match, with TEMP macros
``duckrank_trec_eval_<metric>(match, options...)``: trec_eval's default measures ran 2.5 times
faster and planned 5 times faster than with one match per call (docs/trec_eval.md, Speed).
The measures over the judgments' grades read one judged match per query the same way
(``JUDGED_FIELDS``): the judged metrics (``inputs="judged"``: bpref, infAP, unj, G, ...)
directly, the graded ones over a MAP truth (ndcg) through the graded match cut from it, where
each of their macros matched the ranking against the judgments again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from duckrank.metrics import METRICS
from duckrank.metrics.record import Metric, option_errors_sql
from duckrank.metrics.trec_eval import (
    NONREL_ABOVE,
    POSITIVE_GAINS,
    POSITIVE_RANKS,
    POSITIVE_TERMS,
)
from duckrank.render.quoting import quote_identifier

# The prefix of the TEMP macros, one per metric, that compute its record's formula from a
# match (``formula_macros``).
FORMULA = "duckrank_trec_eval_"

# The binary metrics of the matching step over a list truth (``inputs='hits'``), by name: the
# value of each is its formula over the match, which one query shares.
HITS: dict[str, Metric] = {m.name: m for m in METRICS if m.inputs == "hits" and not m.truth_type}

# The metrics over judged truth (``inputs="judged"``), by name, and the fields of the judged
# match their formulas read (a record's placeholders: ``duckrank.metrics.inputs``, kind "judged"),
# each field by the placeholder it fills (``K`` and ``k`` are one name to a DuckDB STRUCT).
JUDGED: dict[str, Metric] = {m.name: m for m in METRICS if m.inputs == "judged"}
JUDGED_FIELDS = {"gains": "gains", "pos": "pos", "nonrel": "nonrel", "judged": "judged",
                 "pool": "pool", "n": "n", "nn": "nn", "ideal": "ideal", "K": "K", "k": "cut",
                 "gpos": "gpos", "gp": "gp", "above": "above"}
# The parts of the judged formulas the command computes once per query, as fields of the judged
# match (``_judged_formula``), by the placeholder that replaces them: the first that is in a
# formula is replaced first (the list of ranks of positive gain with their gains and DCG terms,
# ``gp``, stands for the list of their ranks and gains too: G reads those two fields of it).
SHARED = (("gp", POSITIVE_TERMS), ("gp", POSITIVE_GAINS), ("above", NONREL_ABOVE),
          ("gpos", POSITIVE_RANKS))

# The graded metrics over a MAP truth (``inputs="grades"``: ndcg, dcg, ...), by ``GRADED_PREFIX``
# and name (binary ndcg has the name too): their formula over a graded match
# (``graded_match_sql``'s STRUCT).
GRADED_PREFIX = "graded_"
GRADED: dict[str, Metric] = {GRADED_PREFIX + m.name: m for m in METRICS
                             if m.inputs == "grades" and m.truth_type}
if GRADED.keys() & (HITS.keys() | JUDGED.keys()):
    raise ImportError(f"duckrank.render.trec_eval: a metric is named like a graded one's formula "
                      f"macro: {sorted(GRADED.keys() & (HITS.keys() | JUDGED.keys()))}")


def _judged_formula(function: str) -> str:
    """The judged metric ``function``'s formula with placeholders, the parts ``SHARED`` with
    other formulas read from the judged match's fields, which the command computes once per
    query: the ranks of positive gain (``POSITIVE_RANKS``; G, ndcg_rel and Rndcg each make one),
    with their gains and DCG terms (``POSITIVE_TERMS``), and the judged non-relevant items above
    each relevant one (``NONREL_ABOVE``: bpref and infAP). all_trec took 0.1 s less CPU at
    1,000,000 run lines for gpos, 0.02 s for gp and above."""
    sql = JUDGED[function].sql
    for field, part in SHARED:
        sql = sql.replace(part, f"{{{field}}}")
    return sql


def judged_fields(function: str) -> frozenset[str]:
    """The placeholders of the judged metric ``function``'s formula (keys of ``JUDGED_FIELDS``)."""
    return frozenset(re.findall(r"\{(\w+)\}", _judged_formula(function))) & JUDGED_FIELDS.keys()


# A binary formula's sort of the match's positions (``{pos}``), a copy of them where they are in
# ascending order already (``formula_macro``'s ``ascending``).
SORTED_POSITIONS = "list_sort({pos})"


def formula_macro(function: str, ascending: bool = False) -> str:
    """The CREATE statement of the TEMP macro ``duckrank_trec_eval_<function>(match,
    options...)`` of the binary metric ``function`` (a key of ``HITS``), the graded one (of
    ``GRADED``) or the judged one (of ``JUDGED``): the record's formula (the same text as its
    duckrank macro's) over a match (``matched_sql``'s STRUCT, ``graded_match_sql``'s, or the
    judged match's of ``JUDGED_FIELDS``), after the macro's option checks. (A macro's argument
    is its text: a match that is an expression is to be bound by the caller, or the formula's
    lambdas compute it again for every element.) ``ascending``: the binary match's positions
    come in ascending order (the native step gives them so, and a cut-off's keeps their order),
    and a binary formula reads them as they are instead of its sort of them (the sort alone
    makes them so: the same value; AP, map_cut, iprec_at_recall and 11pt_avg sorted them 22
    times per query, 0.03 s of CPU for all_trec at 1,000,000 run lines)."""
    m = "duckrank_m"
    if function in JUDGED:
        metric = JUDGED[function]
        value = _judged_formula(function).format(
            **{p: f"{m}.{f}" for p, f in JUDGED_FIELDS.items()})
    else:
        metric = HITS.get(function) or GRADED[function]
        sql = metric.sql
        if ascending and function in HITS:
            sql = sql.replace(SORTED_POSITIONS, "{pos}")
        value = sql.format(pos=f"{m}.pos", K=f"{m}.K", k=f"{m}.cut", n=f"{m}.n",
                           grades=f"{m}.grades", ideal=f"{m}.ideal")
    options = "".join(f", {o.name} := {o.sql_default()}" for o in metric.options)
    checks = option_errors_sql(metric.name, metric.options)
    whens = "".join(f"WHEN {condition} THEN {error} " for condition, error in checks)
    name = quote_identifier(FORMULA + function)
    body = f"CASE {whens}ELSE {value} END" if whens else value
    return f"CREATE OR REPLACE TEMP MACRO {name}({m}{options}) AS {body}"


def formula_macros(functions: Iterable[str], ascending: bool = False) -> dict[str, str]:
    """The CREATE statements, by quoted macro name, of the formula macros of ``functions``
    (keys of ``HITS``, ``GRADED`` or ``JUDGED``, each once, in order; ``ascending`` as
    ``formula_macro``'s)."""
    return {quote_identifier(FORMULA + function): formula_macro(function, ascending)
            for function in dict.fromkeys(functions)}
