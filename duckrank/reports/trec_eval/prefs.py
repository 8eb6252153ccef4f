"""``-R prefs`` and ``-R qrels_prefs``: trec_eval 10's preference judgments, read and counted in
DuckDB, and the values of its 14 ``prefs_*`` measures per query.

Read from trec_eval 10.0's source (get_prefs.c, get_qrels_prefs.c, form_prefs_counts.c,
m_prefs_*.c); docs/trec_eval.md says it in full:

* A prefs line is ``qid jg jsg docno rel_level`` (qrels_prefs: ``qid jg docno rel_level``, every
  line in the sub-group '0'). Within a judgment sub-group (jsg) every document is preferred to
  each of a lower level; a judgment group (jg) of one sub-group holds those preferences, one of
  several the transitive closure of its sub-groups' (form_jg_pa, add_transitives). Relevant
  means level > 0.
* The run is ranked by score, highest first, ties by docno *ascending* (form_prefs_counts.c's
  comp_sim_docno; the qrels formats break them descending), cut at ``-M``. Each judged document
  (in any group of the query) gets a docid rank: the retrieved ones by rank from 0, then the
  others by docno. A preference a > b is fulfilled when a's docid rank is smaller; it is
  "retrieved" when both are, "implied" when one is.
* ``-J``, ``-l`` and ``-N`` change nothing here (only form_res_rels.c reads them), as in
  trec_eval.

This module reads the files, checks them and ranks the run; the counting is
``duckrank.metrics.prefs.values_ctes``, the same SQL the ``prefs_*`` functions run per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

# FIELDS and VALUES: the measures' fields and the per-query STRUCT's name (measures.py reads them
# here); values_ctes: the counting, shared with the prefs_* SQL functions.
from duckrank.metrics.prefs import FIELDS as FIELDS
from duckrank.metrics.prefs import VALUES as VALUES
from duckrank.metrics.prefs import values_ctes
from duckrank.render.quoting import quote_identifier
from duckrank.render.trec import table_macro

PREFS, QRELS_PREFS = "prefs", "qrels_prefs"
FORMATS = (PREFS, QRELS_PREFS)

# The TEMP table macros reading the two layouts (rel_level a number, as trec_eval's atof reads
# it; a field too many or too few is an error naming the file and the line, as trec_eval's
# Malformed line). qrels_prefs lines are put in the one sub-group '0' (get_qrels_prefs.c).
_READERS = {
    PREFS: ("duckrank_read_trec_prefs", "qid jg jsg docno rel_level",
            [("query", 1, "VARCHAR"), ("jg", 2, "VARCHAR"), ("jsg", 3, "VARCHAR"),
             ("item", 4, "VARCHAR"), ("level", 5, "DOUBLE")]),
    QRELS_PREFS: ("duckrank_read_trec_qrels_prefs", "qid jg docno rel_level",
                  [("query", 1, "VARCHAR"), ("jg", 2, "VARCHAR"), ("item", 3, "VARCHAR"),
                   ("level", 4, "DOUBLE")]),
}

# trec_eval.c's ranking of a query the run lacks, under -c: this one document, score 1.
BOGUS_DOCNO = "ceci_nest_pas_un_docno"


def reader_macros(rel_info_format: str) -> dict[str, str]:
    """The CREATE statement, by macro name, of the TEMP macro reading ``rel_info_format``'s
    file (none for the qrels formats)."""
    if rel_info_format not in _READERS:
        return {}
    name, layout, columns = _READERS[rel_info_format]
    return {quote_identifier(name): table_macro(name, layout, columns, extra=False, temp=True)}


def _lines_sql(rel_info_format: str, only: str) -> str:
    name = _READERS[rel_info_format][0]
    jsg = "jsg" if rel_info_format == PREFS else "'0' AS jsg"
    return (f"SELECT query, jg, {jsg}, item, level FROM "
            f"{name}($qrels, file_encoding := $encoding){only}")


def check_lines(con: duckdb.DuckDBPyConnection, rel_info_format: str, params: dict[str, Any],
                shown: str) -> None:
    """The judgments trec_eval 10 cannot count, each an error naming the file, the query, the
    group and the document (the first by query, group, document): a document twice in one
    sub-group (form_prefs_counts.c stops when the levels differ, and otherwise counts its
    preferences twice in a group of one sub-group, once in others); levels 0 and above 0 for one
    document in one group (its error: "has both 0 and non-0 rel_level"); and, in a group of
    several sub-groups, a negative level (form_jg_pa keeps the level of the last line it reads,
    so such a document is relevant, not, or neither by the order of its sub-groups)."""
    lines = f"({_lines_sql(rel_info_format, '')})"
    several = f"(SELECT query, jg FROM {lines} GROUP BY ALL HAVING count(DISTINCT jsg) > 1)"
    checks = (
        (f"SELECT query, jg, jsg, item FROM {lines} GROUP BY ALL HAVING count(*) > 1",
         "judges document {item} twice in sub-group {jsg} of judgment group {jg} for query "
         "{query} (trec_eval counts its preferences twice, or stops); keep one line"),
        (f"SELECT query, jg, '', item FROM {lines} GROUP BY query, jg, item "
         "HAVING bool_or(level = 0) AND bool_or(level > 0)",
         "gives document {item} the level 0 and a level above 0 in judgment group {jg} of query "
         "{query} (trec_eval: has both 0 and non-0 rel_level assigned)"),
        (f"SELECT query, jg, jsg, item FROM {lines} JOIN {several} USING (query, jg) "
         "WHERE level < 0",
         "gives document {item} a negative level in judgment group {jg} of query {query}, "
         "which has several sub-groups (trec_eval then counts it relevant, not or neither by "
         "the order of its lines); give levels of 0 or more"),
    )
    for sql, message in checks:
        found = con.execute(f"{sql} ORDER BY query, jg, item LIMIT 1",
                            {"qrels": params["qrels"], "encoding": params["encoding"]}).fetchall()
        if found:
            query, jg, jsg, item = (repr(value) for value in found[0])
            raise ValueError(f"the {rel_info_format} file {shown!r} "
                             + message.format(query=query, jg=jg, jsg=jsg, item=item))


def per_query_sql(rel_info_format: str, max_docs: int | None, complete: bool, only: str,
                  columns: Sequence[str]) -> str:
    """The query of the per-query table of ``-R prefs``/``qrels_prefs``: query,
    duckrank_ranked (the run has lines for it), duckrank_duplicate (a document twice in its
    first ``max_docs``), duckrank_cycle (the [group, document] of a cycle of preferences, the
    smallest, or NULL), and ``columns`` (SQL over the VALUES struct). ``complete`` (-c): a
    query the run lacks is ranked as trec_eval.c's one bogus document; ``only``: -D 0.QID's
    filter."""
    cut = f"\n  QUALIFY pos <= {int(max_docs)}" if max_docs is not None else ""
    bogus = (f"\n  UNION ALL SELECT query, '{BOGUS_DOCNO}', 1 FROM queries "
             "WHERE NOT duckrank_ranked" if complete else "")
    return f"""
WITH RECURSIVE lines AS ({_lines_sql(rel_info_format, only)}),
run AS (
  SELECT query, item, row_number() OVER (PARTITION BY query ORDER BY score DESC, item) AS pos
  FROM read_trec_run($run, file_encoding := $encoding){only}{cut}
),
queries AS (
  SELECT query, r.query IS NOT NULL AS duckrank_ranked,
         coalesce(r.duplicate, false) AS duckrank_duplicate
  FROM (SELECT DISTINCT query FROM lines) q
  LEFT JOIN (SELECT query, count(*) > count(DISTINCT item) AS duplicate FROM run GROUP BY query) r
  USING (query)
),
ranked AS (
  SELECT query, item, min(pos) AS pos FROM run GROUP BY query, item{bogus}
),
{values_ctes()}
SELECT query, duckrank_ranked, duckrank_duplicate, duckrank_cycle,
       {", ".join(f"{sql} AS m{i}" for i, sql in enumerate(columns))}
FROM queries JOIN prefs_values USING (query)"""
