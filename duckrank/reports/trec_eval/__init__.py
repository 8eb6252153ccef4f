"""``duckrank trec_eval``: trec_eval's command, its measures and its output, computed in DuckDB.

``duckrank trec_eval [-q] [-c] [-n] [-J] [-M N] [-l N] [-N N] [-Z FILE] [-m MEASURE[.PARAMS]]...
QRELS RUN`` reads the files as trec_eval reads them (``duckrank.files.trec``) and prints what
NIST's trec_eval 10.0 prints (``--compat 9.0.8``: the trec_eval 9.0.8 of pytrec-eval-terrier):
``measure<TAB>query<TAB>value`` lines, the measure name padded to 22 characters, floats with 4
decimals (C's ``%6.4f``), counts as integers, the run's tag on the ``runid`` line, ``all`` for the
summary. What follows is trec_eval's (usnistgov/trec_eval 10.0, ``trec_eval.c``,
``form_res_rels.c``, ``meas_init.c``, ``meas_avg.c``, ``meas_print_*.c``), and docs/trec_eval.md
says it in full, with where 9.0.8 differs:

* Each query's documents are ranked by score, highest first, the score read as a double (9.0.8:
  a C ``float``, in which scores equal in their first 7 digits tie), ties broken by document
  id, descending (byte order); the rank column is ignored. ``-M N`` keeps the first N, ``-J``
  then the judged ones.
* A query is evaluated when it is in both files; a qrels query the run lacks is an error (9.0.8:
  left out), and ``-c`` evaluates it as trec_eval 10 does, on a ranking of one unjudged document
  (0 on most measures). Queries with no relevant document score 0 and count in the means.
  Relevant means grade >= ``-l`` (default 1); a negative grade is a judged non-relevant
  document.
* Measures are printed in trec_eval's order (``MEASURES``) whatever the order of ``-m``;
  queries in id order (byte order), per query with ``-q``, then the summary over the evaluated
  queries (``-n``: none): the mean, the sum for the ``num_*`` counts, the geometric mean
  (values below 0.00001 count as 0.00001) for ``gm_*``.
* A document twice in one query's ranking (among the first N with ``-M``) or in one query's
  judgments is an error, as in trec_eval.

Each measure is a duckrank SQL function over the query's lists (``MEASURES``: trec_eval's name,
its parameters and the call); every value of every query is computed by one DuckDB query over
per-query lists, and the output lines are formatted by DuckDB's ``printf``. The binary measures
read one match per query (``formula_macros``), and the command registers only the functions its
measures call (``needed_functions``). A measure whose
duckrank function is missing from this build is an error naming it (``MissingMeasure``), never a
number. The formula macros' SQL text is written by ``duckrank.render.trec_eval``; the command's
flags are parsed by ``duckrank.cli``, which calls ``write_lines``. Modules: ``measures`` (the
table of measures and sets), ``requests`` (``-m``), ``zscores`` (``-Z``), ``prefs`` (``-R prefs``
and ``qrels_prefs``: the preferences and the ``prefs_*`` values), ``command`` (the flags, the
query, the checks and the lines).
"""

from __future__ import annotations

from duckrank.reports.trec_eval.command import (
    Options,
    Row,
    debug_flag,
    options_from_flags,
    output_bytes,
    printed_lines,
    run_tag,
    trec_eval,
    trec_eval_lines,
    write_lines,
)
from duckrank.reports.trec_eval.measures import (
    BY_NAME,
    MEASURES,
    MIN_GEO_MEAN,
    NICKNAMES,
    REL_INFO_FORMATS,
    Call,
    Measure,
    MissingMeasure,
)
from duckrank.reports.trec_eval.requests import (
    Value,
    check_available,
    formula_macros,
    needed_functions,
    requested_values,
)

__all__ = [
    "BY_NAME", "MEASURES", "MIN_GEO_MEAN", "NICKNAMES", "REL_INFO_FORMATS", "Call", "Measure",
    "MissingMeasure", "Options", "Row", "Value", "check_available", "debug_flag",
    "formula_macros", "needed_functions", "options_from_flags", "output_bytes", "printed_lines",
    "requested_values", "run_tag", "trec_eval", "trec_eval_lines", "write_lines",
]
