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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

from duckrank.render.quoting import quote_identifier
from duckrank.render.trec import table_macro

PREFS, QRELS_PREFS = "prefs", "qrels_prefs"
FORMATS = (PREFS, QRELS_PREFS)

# The per-query STRUCT of the prefs values that the measures read (``Measure.sql``).
VALUES = "duckrank_prefs"

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


def _ratio(numerator: str, denominator: str) -> str:
    """C's (double) numerator / (double) denominator; NULL for 0 / 0 (trec_eval's NaN)."""
    return f"CASE WHEN {denominator} = 0 THEN NULL ELSE ({numerator})::DOUBLE / ({denominator}) END"


def _ratio_or_zero(numerator: str, denominator: str) -> str:
    # m_prefs_simp*.c and the per-group ratios of m_prefs_avgjg*.c: 0 when nothing is possible.
    return f"CASE WHEN {denominator} = 0 THEN 0.0 ELSE ({numerator})::DOUBLE / ({denominator}) END"


def _sum_in_order(value: str, order: str, where: str = "true") -> str:
    """The sum of ``value`` over the group's rows in the order ``order``, as C's loops add
    (the same double, bit for bit); 0.0 for none."""
    return (f"list_reduce(coalesce(list({value} ORDER BY {order}) FILTER ({where}), []), "
            "lambda duckrank_s, duckrank_t: duckrank_s + duckrank_t, 0.0)")


def _mean_over_groups(term: str) -> str:
    """m_prefs_avgjg*.c: the sum of the groups' ``term`` in the groups' order over their number;
    a 0 / 0 term (NULL) makes the sum NaN, which its test ``sum > 0.0`` turns into 0."""
    return (f"CASE WHEN bool_or({term} IS NULL) THEN 0.0 "
            f"ELSE {_sum_in_order(term, 'jg')} / count(*) END")


# The counts of form_prefs_counts.c per judgment group: poss (its preferences), ful_ret and
# poss_ret (both documents retrieved: fulfilled, all), ful_imp and poss_imp (one retrieved);
# upper*: those whose less preferred document is not of the group's lowest level (what
# m_prefs_avgjg_Rnonrel*.c recount for a group of one sub-group); kept*: those between the
# documents its recalculation keeps in a group of several. Each count over the preferences
# (a, b: the docid ranks of the preferred and the other document; njr: the judged documents
# retrieved), for the groups of several sub-groups, whose preferences are enumerated
# (count(a) skips the NULL row of a group without any); 0 where unused.
_PA_COUNTS = """
  SELECT query, jg,
         count(a) AS poss,
         count(a) FILTER (a < b AND b < njr) AS ful_ret,
         count(a) FILTER (a < njr AND b < njr) AS poss_ret,
         count(a) FILTER (a < njr AND b >= njr) AS ful_imp,
         count(a) FILTER ((a < njr) <> (b < njr)) AS poss_imp,
         0 AS upper, 0 AS upper_ful, 0 AS upper_ret, 0 AS upper_ful_ret,
         count(a) FILTER (kept) AS kept,
         count(a) FILTER (kept AND a < b AND a < njr) AS kept_ful,
         count(a) FILTER (kept AND a < njr AND b < njr) AS kept_ret,
         count(a) FILTER (kept AND a < b AND b < njr) AS kept_ful_ret
  FROM (SELECT * FROM groups WHERE pa) LEFT JOIN pa_pairs USING (query, jg)
  GROUP BY query, jg"""

# The same counts for a group of one sub-group, whose preferences are every pair of its levels:
# from its documents per level (n, of which nret retrieved; below_*: those of lower levels;
# *_min: those of the lowest level), without enumerating them (a query of 2,000 judgments has
# 400,000), but for the pairs of retrieved documents whose order decides (inversions).
_EC_COUNTS = """
  SELECT query, jg,
         sum(n * below_n) AS poss,
         any_value(coalesce(i.ful_ret, 0)) AS ful_ret,
         sum(nret * below_ret) AS poss_ret,
         sum(nret * (below_n - below_ret)) AS ful_imp,
         sum(nret * (below_n - below_ret) + (n - nret) * below_ret) AS poss_imp,
         coalesce(sum(n * (below_n - n_min)) FILTER (level > level_min), 0) AS upper,
         coalesce(sum(nret * (below_n - below_ret - n_min + ret_min))
                  FILTER (level > level_min), 0)
             + any_value(coalesce(i.upper_ful_ret, 0)) AS upper_ful,
         coalesce(sum(nret * (below_ret - ret_min)) FILTER (level > level_min), 0) AS upper_ret,
         any_value(coalesce(i.upper_ful_ret, 0)) AS upper_ful_ret,
         0 AS kept, 0 AS kept_ful, 0 AS kept_ret, 0 AS kept_ful_ret
  FROM (
    SELECT *, coalesce(sum(n) OVER below, 0) AS below_n,
           coalesce(sum(nret) OVER below, 0) AS below_ret,
           min(level) OVER g AS level_min, first_value(n) OVER lowest AS n_min,
           first_value(nret) OVER lowest AS ret_min
    FROM (SELECT query, jg, level, count(*) AS n, count(*) FILTER (ret) AS nret
          FROM members WHERE NOT pa GROUP BY query, jg, level)
    WINDOW g AS (PARTITION BY query, jg),
           lowest AS (PARTITION BY query, jg ORDER BY level),
           below AS (PARTITION BY query, jg ORDER BY level
                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
  ) LEFT JOIN (
    -- the retrieved pairs a > b with a ranked first (b not of the lowest level: upper_*)
    SELECT a.query, a.jg, count(*) AS ful_ret, count(*) FILTER (NOT b.lowest) AS upper_ful_ret
    FROM ec_retrieved a JOIN ec_retrieved b ON a.query = b.query AND a.jg = b.jg AND a.r < b.r
         AND a.level > b.level
    GROUP BY a.query, a.jg
  ) i USING (query, jg)
  GROUP BY query, jg"""

# Per judgment group: its documents' counts (form_prefs_counts.c's num_rel, num_rel_ret, ...)
# and what the recalculation of m_prefs_avgjg_Rnonrel*.c reads for a group of one sub-group:
# k, the first num_rel documents of its lowest level, and the preferences it adds, every
# document of the group against each of them (fulfilled: ranked before it and retrieved); kr,
# the retrieved among the first num_rel_ret, against every retrieved document.
_GROUP_DOCS = """
  SELECT query, jg, any_value(pa) AS pa,
         count(*) FILTER (rel) AS num_rel, count(*) FILTER (rel AND ret) AS num_rel_ret,
         count(*) FILTER (NOT rel) AS num_nonrel,
         count(*) FILTER (NOT rel AND ret) AS num_nonrel_ret,
         count(*) AS n, count(*) FILTER (ret) AS n_ret,
         count(*) FILTER (lowest) AS lowest, count(*) FILTER (lowest AND ret) AS lowest_ret,
         count(*) FILTER (lowest AND lowest_idx < num_rel) AS k,
         coalesce(sum(CASE WHEN ret THEN idx ELSE group_ret END)
                  FILTER (lowest AND lowest_idx < num_rel), 0) AS k_ful,
         count(*) FILTER (lowest AND lowest_idx < num_rel_ret AND ret) AS kr,
         coalesce(sum(idx) FILTER (lowest AND lowest_idx < num_rel_ret AND ret), 0) AS kr_ful
  FROM members GROUP BY query, jg"""


def _group_terms() -> str:
    """Per judgment group, the ratios the prefs_avgjg* measures average (m_prefs_avgjg*.c), and
    whether m_prefs_avgjg_Rnonrel*.c's recalculation reads past the group's lowest level (it
    takes num_rel documents of it, or num_rel_ret while they are retrieved, whatever it holds)."""
    extra, extra_ret = "(num_rel - num_nonrel)", "(num_rel_ret - num_nonrel_ret)"
    as_is = _ratio(f"ful_ret + ful_imp + num_rel_ret * {extra}", f"poss + num_rel * {extra}")
    as_is_ret = _ratio(f"ful_ret + num_rel_ret * {extra_ret}",
                       f"poss_ret + num_rel * {extra_ret}")
    rnonrel = (f"CASE WHEN num_rel >= num_nonrel THEN {as_is}"
               f" WHEN pa THEN {_ratio('kept_ful', 'kept')} "
               f"ELSE {_ratio('upper_ful + k_ful', 'upper + n * k')} END")
    rnonrel_ret = (f"CASE WHEN num_rel_ret >= num_nonrel_ret THEN {as_is_ret}"
                   f" WHEN pa THEN {_ratio('kept_ful_ret', 'kept_ret')} "
                   f"ELSE {_ratio('upper_ful_ret + kr_ful', 'upper_ret + n_ret * kr')} END")
    return f"""
  SELECT *,
         {_ratio_or_zero('ful_ret + ful_imp', 'poss')} AS avgjg,
         {_ratio_or_zero('ful_ret', 'poss_ret')} AS avgjg_ret,
         {_ratio_or_zero('ful_ret + ful_imp', 'poss_ret + poss_imp')} AS avgjg_imp,
         {rnonrel} AS rnonrel,
         NOT pa AND num_rel < num_nonrel AND lowest < num_rel AS rnonrel_past,
         {rnonrel_ret} AS rnonrel_ret,
         NOT pa AND num_rel_ret < num_nonrel_ret AND lowest < num_rel_ret
             AND lowest_ret = lowest AS rnonrel_ret_past
  FROM group_docs JOIN group_pairs USING (query, jg)"""


_PER_QUERY = f"""
  SELECT query,
         sum(poss) AS num_prefs_poss, sum(ful_ret + ful_imp) AS num_prefs_ful,
         sum(ful_ret) AS num_prefs_ful_ret,
         count(*) AS groups,
         {_ratio_or_zero('sum(ful_ret + ful_imp)', 'sum(poss)')} AS simp,
         {_ratio_or_zero('sum(ful_ret)', 'sum(poss_ret)')} AS simp_ret,
         {_ratio_or_zero('sum(ful_ret + ful_imp)', 'sum(poss_ret + poss_imp)')} AS simp_imp,
         {_mean_over_groups('avgjg')} AS avgjg,
         {_mean_over_groups('avgjg_ret')} AS avgjg_ret,
         {_mean_over_groups('avgjg_imp')} AS avgjg_imp,
         {_mean_over_groups('rnonrel')} AS avgjg_Rnonrel,
         {_mean_over_groups('rnonrel_ret')} AS avgjg_Rnonrel_ret,
         min(jg) FILTER (rnonrel_past) AS avgjg_Rnonrel_past,
         min(jg) FILTER (rnonrel_ret_past) AS avgjg_Rnonrel_ret_past
  FROM group_terms GROUP BY query"""

# m_prefs_pair*.c: per pair of documents with a preference in some group, the share of the
# groups preferring the one ranked first (x, the smaller docid rank), summed over the pairs
# with both retrieved, then those with only x retrieved, each by (x, y), as its loops add. Over
# the preferences of the queries of several judgment groups (``multi_pairs``): with one, every
# share is 1 or 0 and the values are prefs_simp*'s, the same doubles.
_PAIRS = f"""
  SELECT query,
         {_sum_in_order('term', 'y >= njr, x, y', 'x < njr AND term > 0')} AS imp_sum,
         {_sum_in_order('term', 'x, y', 'y < njr AND term > 0')} AS ret_sum,
         count(*) AS pairs, count(*) FILTER (x < njr) AS imp_pairs,
         count(*) FILTER (y < njr) AS ret_pairs
  FROM (SELECT query, least(a, b) AS x, greatest(a, b) AS y, any_value(njr) AS njr,
               (count(*) FILTER (a < b))::DOUBLE / count(*) AS term
        FROM multi_pairs GROUP BY query, x, y)
  GROUP BY query"""

# The fields of the VALUES struct: trec_eval's measure names without 'prefs_'.
FIELDS = ("num_prefs_poss", "num_prefs_ful", "num_prefs_ful_ret", "simp", "pair", "avgjg",
          "avgjg_Rnonrel", "simp_ret", "pair_ret", "avgjg_ret", "avgjg_Rnonrel_ret", "simp_imp",
          "pair_imp", "avgjg_imp")

_STRUCT_SQL = {
    "pair": f"CASE WHEN groups > 1 THEN {_ratio_or_zero('imp_sum', 'coalesce(pairs, 0)')} "
            "ELSE simp END",
    "pair_ret": f"CASE WHEN groups > 1 THEN {_ratio_or_zero('ret_sum', 'coalesce(ret_pairs, 0)')} "
                "ELSE simp_ret END",
    "pair_imp": f"CASE WHEN groups > 1 THEN {_ratio_or_zero('imp_sum', 'coalesce(imp_pairs, 0)')} "
                "ELSE simp_imp END",
}


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
    fields = ", ".join(f"'{f}': {_STRUCT_SQL.get(f, f)}" for f in FIELDS)
    past = ", ".join(f"'{f}_past': {f}_past" for f in ("avgjg_Rnonrel", "avgjg_Rnonrel_ret"))
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
judged AS (
  SELECT query, item, row_number() OVER (PARTITION BY query ORDER BY pos NULLS LAST, item) - 1
             AS r, count(pos) OVER (PARTITION BY query) AS njr
  FROM (SELECT DISTINCT query, item FROM lines) LEFT JOIN ranked USING (query, item)
),
groups AS (
  SELECT query, jg, count(DISTINCT jsg) > 1 AS pa, count(*) OVER (PARTITION BY query) > 1 AS multi
  FROM lines GROUP BY query, jg
),
placed AS (
  SELECT query, jg, item, max(level) AS level, max(level) > 0 AS rel, any_value(pa) AS pa,
         any_value(multi) AS multi,
         any_value(r) AS r, any_value(njr) AS njr, any_value(r) < any_value(njr) AS ret
  FROM lines JOIN groups USING (query, jg) JOIN judged USING (query, item)
  GROUP BY query, jg, item
),
counted AS (
  SELECT *, level = min(level) OVER g AS lowest,
         row_number() OVER (PARTITION BY query, jg ORDER BY r) - 1 AS idx,
         row_number() OVER (PARTITION BY query, jg, rel ORDER BY r) - 1 AS rel_idx,
         count(*) FILTER (rel) OVER g AS num_rel,
         count(*) FILTER (rel AND ret) OVER g AS num_rel_ret,
         count(*) FILTER (ret) OVER g AS group_ret
  FROM placed WINDOW g AS (PARTITION BY query, jg)
),
members AS (
  -- kept: the documents m_prefs_avgjg_Rnonrel*.c's recalculation keeps in a group of several
  -- sub-groups (the relevant and the first num_rel nonrelevant, by docid rank); lowest_idx:
  -- the place of a document of the group's lowest level among them.
  SELECT *, rel OR rel_idx < num_rel AS kept,
         row_number() OVER (PARTITION BY query, jg, lowest ORDER BY r) - 1 AS lowest_idx
  FROM counted
),
pa_lines AS MATERIALIZED (SELECT lines.* FROM lines JOIN groups USING (query, jg) WHERE pa),
edges AS (
  -- (the lines of the groups of several sub-groups first, MATERIALIZED: DuckDB otherwise joins
  -- every pair of a sub-group before filtering, 4,000,000 for 2,000 judgments)
  SELECT a.query, a.jg, a.item AS a, b.item AS b
  FROM pa_lines a JOIN pa_lines b ON a.query = b.query AND a.jg = b.jg AND a.jsg = b.jsg
       AND a.level > b.level
),
closure(query, jg, a, b) AS (
  SELECT query, jg, a, b FROM edges
  UNION
  SELECT c.query, c.jg, c.a, e.b FROM closure c
  JOIN edges e ON c.query = e.query AND c.jg = e.jg AND c.b = e.a
),
pa_members AS MATERIALIZED (SELECT * FROM members WHERE pa),
pa_pairs AS (
  SELECT c.query, c.jg, a.r AS a, b.r AS b, a.njr, a.kept AND b.kept AS kept
  FROM closure c
  JOIN pa_members a ON c.query = a.query AND c.jg = a.jg AND c.a = a.item
  JOIN pa_members b ON c.query = b.query AND c.jg = b.jg AND c.b = b.item
  WHERE c.a <> c.b
),
-- (each side filtered before the join, as pa_lines and pa_members)
ec_retrieved AS MATERIALIZED (SELECT * FROM members WHERE NOT pa AND ret),
ec_multi AS MATERIALIZED (SELECT * FROM members WHERE NOT pa AND multi),
multi_pairs AS (
  SELECT a.query, a.r AS a, b.r AS b, a.njr
  FROM ec_multi a JOIN ec_multi b ON a.query = b.query AND a.jg = b.jg AND a.level > b.level
  UNION ALL
  SELECT query, a, b, njr FROM pa_pairs JOIN groups USING (query, jg) WHERE multi
),
cycles AS (
  SELECT query, min([jg, a]) AS duckrank_cycle FROM closure WHERE a = b GROUP BY query
),
group_pairs AS ({_PA_COUNTS}
  UNION ALL{_EC_COUNTS}),
group_docs AS ({_GROUP_DOCS}),
group_terms AS ({_group_terms()}),
per_query AS ({_PER_QUERY}),
pair_values AS ({_PAIRS}),
prefs_values AS (
  SELECT q.*, c.duckrank_cycle, {{{fields}, {past}}} AS {VALUES}
  FROM queries q JOIN per_query USING (query) LEFT JOIN pair_values USING (query)
  LEFT JOIN cycles c USING (query)
)
SELECT query, duckrank_ranked, duckrank_duplicate, duckrank_cycle,
       {", ".join(f"{sql} AS m{i}" for i, sql in enumerate(columns))}
FROM prefs_values"""
