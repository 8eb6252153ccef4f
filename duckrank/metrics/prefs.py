"""trec_eval 10's preference measures (the 14 ``prefs_*`` of m_prefs_*.c) as SQL functions, and
the counting both they and ``duckrank trec_eval -R prefs`` run (``duckrank.reports.trec_eval.prefs``
reads the files and calls ``values_ctes``): one computation, one home.

Read from trec_eval 10.0's source (usnistgov/trec_eval: get_prefs.c, get_qrels_prefs.c,
form_prefs_counts.c, m_prefs_*.c); docs/trec_eval.md ("Preferences") says it in full:

* A query's judgments are lines ``(jg, jsg, item, level)``: within a judgment sub-group (jsg)
  every document is preferred to each of a lower level; a judgment group (jg) of one sub-group
  holds those preferences, one of several the transitive closure of its sub-groups' (form_jg_pa,
  add_transitives). Relevant means level > 0.
* Each judged document (in any group of the query) gets a docid rank: the retrieved ones by
  rank from 0, then the others by docno (their text, ascending). A preference a > b is
  fulfilled when a's docid rank is smaller; it is "retrieved" when both are, "implied" when one
  is.

``values_ctes`` computes it set-based over every query at once (DuckDB threads it): the counts of
a group of one sub-group from its documents per level (no pair enumerated, but for the retrieved
ones whose order decides), the closure of a group of several by a recursive query. The SQL
functions (input kind ``prefs``: a Python UDF behind a TEMP macro,
``duckrank.engines.python_udfs``) run the same query over a whole batch of rows at once
(``batch_values``: each row's lists flattened into the two tables, the row's index as the
query). Written as a pure-SQL macro (the query as a correlated subquery per row), DuckDB
carried each row's lists through every join as the correlation key: 20 times slower here, and
minutes on queries of hundreds of judgments (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import threading

import duckdb

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import combined
from duckrank.metrics.record import Metric

np = LazyModule("numpy")
pa = LazyModule("pyarrow")
pc = LazyModule("pyarrow.compute")


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
# k_docs, the first num_rel documents of its lowest level, and the preferences it adds, every
# document of the group against each of them (fulfilled: ranked before it and retrieved); kr,
# the retrieved among the first num_rel_ret, against every retrieved document.
_GROUP_DOCS = """
  SELECT query, jg, any_value(pa) AS pa,
         count(*) FILTER (rel) AS num_rel, count(*) FILTER (rel AND ret) AS num_rel_ret,
         count(*) FILTER (NOT rel) AS num_nonrel,
         count(*) FILTER (NOT rel AND ret) AS num_nonrel_ret,
         count(*) AS n, count(*) FILTER (ret) AS n_ret,
         count(*) FILTER (lowest) AS lowest, count(*) FILTER (lowest AND ret) AS lowest_ret,
         count(*) FILTER (lowest AND lowest_idx < num_rel) AS k_docs,
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
               f"ELSE {_ratio('upper_ful + k_ful', 'upper + n * k_docs')} END")
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


# The per-query STRUCT of the values (the FIELDS, and avgjg_Rnonrel_past, avgjg_Rnonrel_ret_past:
# the group whose recalculation reads past its lowest level, or NULL).
VALUES = "duckrank_prefs"


def values_ctes() -> str:
    """(No column is named rec, truth or k: the SQL functions' macros would read it as their
    argument.) The CTEs that follow ``WITH RECURSIVE lines AS (...), ranked AS (...),`` and end in
    ``prefs_values``. ``lines`` (query, jg, jsg, item, level: VARCHAR but level DOUBLE) holds
    the judgments, ``ranked`` (query, item, pos) each retrieved document once with its rank from
    1. ``prefs_values`` has, per query of ``lines``: ``groups`` (query, jg, pa: several
    sub-groups), duckrank_cycle (the [group, document] of a cycle of preferences, the smallest,
    or NULL) and the STRUCT ``VALUES``."""
    fields = ", ".join(f"'{f}': {_STRUCT_SQL.get(f, f)}" for f in FIELDS)
    past = ", ".join(f"'{f}_past': {f}_past" for f in ("avgjg_Rnonrel", "avgjg_Rnonrel_ret"))
    return f"""judged AS (
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
  SELECT query, c.duckrank_cycle, {{{fields}, {past}}} AS {VALUES}
  FROM per_query LEFT JOIN pair_values USING (query) LEFT JOIN cycles c USING (query)
)"""


# The checks of one batch's judgments, per query (row): the first judgment trec_eval 10 cannot
# count of each kind (by group, sub-group, item), or NULL.
_PROBLEMS = """problems AS (
  SELECT query, min([jg, jsg, item]) FILTER (n > 1) AS twice,
         min([jg, item]) FILTER (zero AND positive) AS mixed,
         min([jg, item]) FILTER (negative AND pa) AS negative
  FROM (SELECT query, jg, jsg, item, count(*) AS n, bool_or(level < 0) AS negative,
               bool_or(bool_or(level = 0)) OVER w AS zero,
               bool_or(bool_or(level > 0)) OVER w AS positive
        FROM lines GROUP BY query, jg, jsg, item WINDOW w AS (PARTITION BY query, jg, item))
  JOIN groups USING (query, jg)
  GROUP BY query
)"""

_MESSAGES = (
    ("twice", "judges item {2!r} twice in sub-group {1!r} of judgment group {0!r} (trec_eval "
     "counts its preferences twice, or stops); keep one judgment"),
    ("mixed", "gives item {1!r} the level 0 and a level above 0 in judgment group {0!r} "
     "(trec_eval: has both 0 and non-0 rel_level assigned)"),
    ("negative", "gives item {1!r} a negative level in judgment group {0!r}, which has several "
     "sub-groups (trec_eval then counts it relevant, not or neither by the order of its "
     "lines); give levels of 0 or more"),
    ("duckrank_cycle", "holds preferences of judgment group {0!r} that contradict each other: "
     "item {1!r} is, through other items, preferred to itself (trec_eval: Pref inconsistency "
     "found)"),
)
_TRUTH_FIELDS = ("jg", "jsg", "item", "level")


def _flat(lists: pa.ListArray, rows: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The elements of the lists of ``rows`` (a mask), each one's row and its position in its
    list (from 1)."""
    parents = pc.list_parent_indices(lists).to_numpy()
    positions = np.arange(len(parents)) - np.searchsorted(parents, parents) + 1
    keep = rows[parents]
    return pc.list_flatten(lists).filter(pa.array(keep)), parents[keep], positions[keep]


# The last batch counted on each thread: DuckDB calls the UDF of each prefs_* function of a
# query on the same chunk in turn, and the counts are the same for all 14 (benchmarks/RESULTS.md).
_LAST = threading.local()


def _counted(rec: pa.Array, truth: pa.Array) -> pa.Table:
    """The batch's values and checks per row (``query``: the row's index; ``prefs``: the STRUCT
    ``VALUES``; the columns of ``_MESSAGES``), only for the rows with judgments: every row's rec
    and truth flattened into the two tables ``values_ctes`` reads, counted in one DuckDB query
    over the whole batch."""
    rows = pc.and_(rec.is_valid(), truth.is_valid()).to_numpy(zero_copy_only=False)
    items, item_rows, positions = _flat(rec, rows)
    lines, line_rows, _ = _flat(truth, rows)
    fields = {name: lines.field(name) for name in _TRUTH_FIELDS}
    if lines.null_count or any(column.null_count for column in fields.values()):
        raise ValueError("truth holds a NULL judgment or one with a NULL field; give each a jg, "
                         "jsg, item and level")
    ranked = pa.table({"query": item_rows, "item": items.cast(pa.string()), "pos": positions})
    judged = pa.table({"query": line_rows, **{name: fields[name].cast(pa.string())
                                              for name in ("jg", "jsg", "item")},
                       "level": fields["level"].cast(pa.float64())})
    checks = ", ".join(name for name, _ in _MESSAGES)
    with duckdb.connect() as con:
        con.register("judgments", judged)
        con.register("retrieved", ranked)
        return con.sql(f"""WITH RECURSIVE lines AS (SELECT * FROM judgments),
ranked AS (
  SELECT query, item, min(pos) AS pos FROM retrieved WHERE item IS NOT NULL GROUP BY ALL
),
{values_ctes()},
{_PROBLEMS}
SELECT query, {VALUES} AS prefs, {checks}
FROM prefs_values v JOIN problems p USING (query) ORDER BY query""").to_arrow_table()


def batch_values(function: str, rec: pa.Array, truth: pa.Array) -> pa.Array:
    """``function``'s values (a ``prefs_*`` name) for a batch of rows (``_counted``, or the
    same thread's last count when rec and truth are the same). NULL for a NULL rec or truth and
    an empty truth; the judgments trec_eval 10 cannot count are a ValueError naming
    ``function``."""
    rec, truth = combined(rec), combined(truth)
    last = getattr(_LAST, "batch", None)
    if last is not None and last[0].equals(rec) and last[1].equals(truth):
        found = last[2]
    else:
        try:
            found = _counted(rec, truth)
        except ValueError as error:
            raise ValueError(f"{function}: {error}") from None
        _LAST.batch = (rec, truth, found)
    field = FIELD_OF[function]
    values = pc.struct_field(found["prefs"], field)
    _raise_first_problem(function, field, found)
    if field.startswith("num_"):
        values = values.cast(pa.int64())
    # Each row's value, NULL for the rows without one (no judgments, a NULL argument).
    where = np.full(len(rec), -1)
    where[found["query"].to_numpy()] = np.arange(found.num_rows)
    return values.combine_chunks().take(pa.array(where, mask=where < 0))


def _raise_first_problem(function: str, field: str, found: pa.Table) -> None:
    """The ValueError for the first row (query) whose judgments trec_eval 10 cannot count (for
    prefs_avgjg_rnonrel*, also a group whose lowest level it reads past)."""
    columns = {name: found[name] for name, _ in _MESSAGES}
    if field.startswith("avgjg_Rnonrel"):
        columns["past"] = pc.struct_field(found["prefs"], f"{field}_past")
    bad = None
    for column in columns.values():
        bad = pc.is_valid(column) if bad is None else pc.or_(bad, pc.is_valid(column))
    if not pc.any(bad).as_py():
        return
    first = pc.index(bad, True).as_py()
    for name, message in _MESSAGES:
        problem = columns[name][first].as_py()
        if problem is not None:
            raise ValueError(f"{function}: truth " + message.format(*problem))
    raise ValueError(
        f"{function}: truth's judgment group {columns['past'][first].as_py()!r} has fewer "
        f"documents at its lowest level than trec_eval 10 reads there (m_prefs_{field}.c reads "
        "past them): its value is not reproducible")


# What each measure is (m_prefs_*.c), by field: (summary, formula).
_MEASURES = {
    "num_prefs_poss": ("the preferences of the query's judgment groups", "sum over the groups "
                       "of their preferences"),
    "num_prefs_ful": ("the preferences the ranking fulfils", "sum over the groups of the "
                      "preferences a > b with a in rec, before b or b not in rec"),
    "num_prefs_ful_ret": ("the fulfilled preferences between retrieved documents", "the "
                          "fulfilled preferences a > b with both a and b in rec"),
    "simp": ("the share of the preferences fulfilled", "fulfilled / possible, over every group "
             "at once (0 without any)"),
    "simp_ret": ("prefs_simp over the preferences between retrieved documents", "fulfilled / "
                 "possible of the preferences with both documents in rec (0 without any)"),
    "simp_imp": ("prefs_simp over the preferences with a document retrieved", "fulfilled / "
                 "possible of the preferences with at least one document in rec (0 without any)"),
    "pair": ("the mean over the pairs of documents with a preference of the share of the groups "
             "the ranking fulfils", "sum over the pairs (x, y) judged in some group, x ranked "
             "first, of the share of those groups preferring x, over the pairs with x in rec; / "
             "all the pairs (a query of one group: prefs_simp)"),
    "pair_ret": ("prefs_pair over the pairs of retrieved documents", "the same sum over the "
                 "pairs with both in rec, / those pairs (one group: prefs_simp_ret)"),
    "pair_imp": ("prefs_pair over the pairs with a document retrieved", "the sum of prefs_pair "
                 "/ the pairs with x in rec (one group: prefs_simp_imp)"),
    "avgjg": ("the mean over the judgment groups of their prefs_simp", "sum over the groups of "
              "fulfilled / possible (0 for a group without any), / the groups"),
    "avgjg_ret": ("the mean over the groups of their prefs_simp_ret", "as prefs_avgjg over the "
                  "preferences between retrieved documents"),
    "avgjg_imp": ("the mean over the groups of their prefs_simp_imp", "as prefs_avgjg over the "
                  "preferences with a document retrieved"),
    "avgjg_Rnonrel": ("prefs_avgjg with as many nonrelevant documents as relevant ones per group",
                      "per group of R relevant (level > 0), R' of them in rec, and N "
                      "nonrelevant documents: when N <= R, (fulfilled + R' (R - N)) / "
                      "(possible + R (R - N)), as if R - N more nonrelevant documents were "
                      "judged and not retrieved; else fulfilled / possible of the preferences "
                      "among the relevant and the first R nonrelevant by docid rank; the mean "
                      "over the groups (0 when one is 0 / 0)"),
    "avgjg_Rnonrel_ret": ("prefs_avgjg_Rnonrel over the retrieved documents", "as "
                          "prefs_avgjg_Rnonrel with R and N the retrieved relevant and "
                          "nonrelevant documents"),
}


_TRUTH = "STRUCT(jg, jsg, item, level)[]"
_TREC_EVAL = "trec_eval 10.0 (usnistgov/trec_eval), m_prefs_{}.c and form_prefs_counts.c"
_UNDEFINED = (
    "NULL for a NULL rec or truth and for an empty truth (trec_eval evaluates no query without "
    "judgments); an error naming the function for a NULL judgment or field, an item judged twice "
    "in one sub-group, the levels 0 and > 0 for one item in one group, a negative level in a "
    "group of several sub-groups, contradicting preferences (a cycle), and for "
    "prefs_avgjg_rnonrel* a group whose lowest level holds fewer documents than it reads there, "
    "as trec_eval 10 stops, miscounts or reads memory it did not fill there.")
_CONVENTIONS = (
    " rec is the ranking (trec_eval's: score descending, ties by docno ascending, cut at -M: "
    "build it with list(docno ORDER BY score DESC, docno)); a repeated item counts at its first "
    "rank and a NULL item is skipped (trec_eval refuses duplicates); items are compared by their "
    "text. The unretrieved judged items rank after rec's by their text, ascending")


def _record(field: str) -> Metric:
    summary, formula = _MEASURES[field]
    return Metric(
        name=f"prefs_{field}".lower(),  # trec_eval's name (DuckDB's are case-insensitive)
        summary=f"trec_eval 10's prefs_{field}: {summary}, over preference judgments "
        f"(truth a {_TRUTH}, -R prefs).",
        formula=formula + ";" + _CONVENTIONS,
        undefined=_UNDEFINED,
        sql="",
        kernel=None,
        inputs="prefs",
        result_type="BIGINT" if field.startswith("num_") else "DOUBLE",
        cutoff=False,
        peers=f"trec_eval 10.0's prefs_{field} per query (-q -R prefs / -R qrels_prefs), the "
        "same double; duckrank trec_eval -R prefs computes it with the same SQL. trec_eval 9 "
        "(pytrec_eval) and ir_measures have no preference measures.",
        source=_TREC_EVAL.format(field),
    )


METRICS = tuple(_record(field) for field in FIELDS)
# The field of each function (its name lower-cased: prefs_avgjg_rnonrel -> avgjg_Rnonrel).
FIELD_OF = {metric.name: field for metric, field in zip(METRICS, FIELDS, strict=True)}
