"""The rank-fusion table macros (issue 29; docs/fusion.md), one per record of ``duckrank.fusion``:

    SELECT * FROM fuse_rrf('runs', k := 60, norm := 'min-max')

``runs`` names a table (or view) of one row per (system, query, item, score): the long form of
several runs. Each macro returns one row per (query, item) that any system returned for the
query: ``query``, ``item``, the fused ``score`` and its ``rank`` (1 = best; equal fused scores by
the item's text descending, the order ``duckrank.evaluate`` gives tied scores), ready for
``to_ordered_list(item, rank)`` and every metric.

The body is one query in stages (CTEs prefixed ``duckrank_fusion_`` so that they cannot hide the
caller's table): the parameter checks; the input rows, refused with an error naming the macro when
a system, query or item is NULL, a score is NULL or not finite, or an item is listed twice by one
system for one query; each system's list statistics and positions (window functions); the
normalisation (``norm``, a CASE over the records of ``duckrank.fusion.normalisations``; the Borda
normalisation adds the candidates a system did not return, in a branch of its own that the
optimizer drops when ``norm`` is another constant); the positions again where the normalisation
reorders; then the method's ``value`` per row and its ``combine`` aggregate per (query, item), or
for Condorcet the pairwise votes. A method whose ``absent`` is set (Borda, BayesFuse) adds what
the systems give the candidates they did not return as a per-query total minus the present rows'
share, without building those rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from duckrank.fusion import METHODS, NORMALISATIONS, FusionMethod, Parameter
from duckrank.fusion.normalisations import BY_NAME as NORMS
from duckrank.fusion.record import Normalisation
from duckrank.matching.sql import INTEGER_TYPES, collates_sql
from duckrank.render.quoting import quote_literal
from duckrank.render.sections import with_section

P = "duckrank_fusion_"  # the prefix of every CTE name
_ITEM_TEXT = "CAST(item AS VARCHAR)"
_LIST_ORDER = f"score DESC, {_ITEM_TEXT} DESC"
_NORMALISED_ORDER = f"value DESC, score DESC NULLS LAST, {_ITEM_TEXT} DESC"


def _fail(macro: str, text: str) -> str:
    """SQL raising ``macro: text`` (``text`` a SQL string expression)."""
    return f"error({quote_literal(macro + ': ')} || {text})"


def _shown(sql: str) -> str:
    """A SQL value as an error message shows it: its text, or NULL."""
    return f"coalesce(CAST({sql} AS VARCHAR), 'NULL')"


def _row_named(prefix: str = "") -> str:
    """`system 'a', query 1, item 'x'` for an error message."""
    return (f"'system ' || {_shown(prefix + 'system')} || ', query ' || "
            f"{_shown(prefix + 'query')} || ', item ' || {_shown(prefix + 'item')}")


def _case(checks: list[tuple[str, str]], otherwise: str = "true") -> str:
    cases = "".join(f"\n    WHEN {condition} THEN {error}" for condition, error in checks)
    return f"CASE{cases}\n    ELSE {otherwise} END"


def _norm_check(macro: str) -> tuple[str, str]:
    known = ", ".join(f"'{n.name}'" for n in NORMALISATIONS)
    listed = ", ".join(quote_literal(n.name) for n in NORMALISATIONS)
    return (
        f"norm IS NULL OR CAST(norm AS VARCHAR) NOT IN ({listed})",
        _fail(macro, f"{quote_literal(f'norm must be one of {known}, got ')} || "
                     f"coalesce('''' || CAST(norm AS VARCHAR) || '''', 'NULL')"),
    )


def _number_check(macro: str, parameter: Parameter) -> tuple[str, str]:
    return (
        parameter.invalid_sql(),
        _fail(macro, f"{quote_literal(f'{parameter.name} must be {parameter.domain()}, got ')} "
                     f"|| {_shown(parameter.name)}"),
    )


def _checks(method: FusionMethod) -> str:
    macro = method.sql_name
    checks = [_norm_check(macro)] + [
        _number_check(macro, p) for p in method.parameters if not p.per_system]
    for p in method.parameters:
        if p.kind == "per_position":
            bad = (f"len(list_filter(map_values({p.name}), lambda l: l IS NULL OR "
                   f"len(list_filter(l, lambda x: x IS NULL OR NOT isfinite(x))) > 0)) > 0")
        elif p.kind == "per_system":
            bad = (f"len(list_filter(map_values({p.name}), "
                   f"lambda x: x IS NULL OR NOT isfinite(x))) > 0")
        else:
            continue
        checks.append((f"{p.name} IS NULL OR {bad}", _fail(
            macro, f"{quote_literal(f'{p.name} must be {p.domain()}, got ')} || "
                   f"{_shown(p.name)}")))
    return f"{P}checks AS (\n  SELECT {_case(checks)} AS ok\n)"


def _per_system(method: FusionMethod) -> list[Parameter]:
    return [p for p in method.parameters if p.per_system]


def _column(parameter: Parameter) -> str:
    return "weight" if parameter.name == "weights" else "trained"


def _system_columns(method: FusionMethod, system: str) -> str:
    """The columns a system's parameters give each of its rows (``weight``, ``trained``), read
    from ``_parameters``'s table: a MAP written in the call is expanded wherever the macro names
    it, so it is read once into a table rather than looked up in each row."""
    return "".join(
        f", (SELECT {_column(p)} FROM {P}parameters pp WHERE pp.system = {system}) "
        f"AS {_column(p)}" for p in _per_system(method))


def _parameters(method: FusionMethod) -> str:
    """The per-system parameter as a table (system, weight or trained); empty without one."""
    per_system = _per_system(method)
    assert len(per_system) <= 1, method.name
    if not per_system:
        return ""
    p = per_system[0]
    cast = "DOUBLE[]" if p.kind == "per_position" else "DOUBLE"
    return (f"{P}parameters AS (\n"
            f"  SELECT CAST(unnest(map_keys({p.name})) AS VARCHAR) AS system,\n"
            f"    CAST(unnest(map_values({p.name})) AS {cast}) AS {_column(p)}\n),\n")


def _rows(method: FusionMethod) -> str:
    macro = method.sql_name
    checks = [
        ("system IS NULL OR query IS NULL OR item IS NULL",
         _fail(macro, f"'runs has a row with a NULL system, query or item (' || {_row_named()} "
                      "|| ')'")),
        ("score IS NULL OR NOT isfinite(score)",
         _fail(macro, f"'runs has the score ' || {_shown('duckrank_given')} || ' for ' || "
                      f"{_row_named()} || '; scores must be finite numbers (leave out the items "
                      "a system did not score)'")),
    ]
    for p in _per_system(method):
        checks.append((f"{_column(p)} IS NULL", _fail(
            macro, f"'{p.name} has no entry for system ' || {_shown('system')} || "
                   f"' (it must have one for every system of runs)'")))
    return (
        f"{_parameters(method)}{P}input AS (\n"
        f"  SELECT CAST(system AS VARCHAR) AS system, query, item, score AS duckrank_given,\n"
        f"    TRY_CAST(score AS DOUBLE) AS score\n"
        f"  FROM query_table(runs)\n"
        f"),\n{P}rows AS (\n"
        f"  SELECT system, query, item, score{_carried(method)}\n"
        f"  FROM (SELECT *{_system_columns(method, 'i.system')} FROM {P}input i)\n"
        f"  WHERE {_case(checks)}\n"
        f"),\n{P}systems AS (\n"
        f"  SELECT system, row_number() OVER (ORDER BY system) - 1 AS system_number\n"
        f"  FROM (SELECT DISTINCT system FROM {P}rows)\n)"
    )


def _lists(method: FusionMethod) -> str:
    """Each system's list statistics and positions. An item listed twice by one system for one
    query is refused: by Condorcet here (a distinct count per list), by the other methods in
    their aggregate per (query, item), where it costs nearly nothing (``_combined``)."""
    distinct, check = "", "true"
    if method.form == "pairwise":
        duplicate = _fail(method.sql_name, "'runs lists an item more than once for system ' || "
                                           f"{_shown('system')} || ', query ' || {_shown('query')}")
        distinct = "    count(DISTINCT item) OVER l AS duckrank_distinct,\n"
        check = f"CASE WHEN duckrank_distinct < s_count THEN {duplicate} ELSE true END"
    # The statistics by a GROUP BY joined back, not window aggregates: a hash aggregate over the
    # (system, query) lists and a join cost about half the window's sort (measured at
    # benchmarks/bench_fusion.py's sizes). The position's window is pruned by the optimizer
    # where nothing reads it (scores-only methods and normalisations).
    return (
        f"{P}list_stats AS (\n"
        f"  SELECT system, query, min(score) AS s_min, max(score) AS s_max, sum(score) AS s_sum,\n"
        f"    avg(score) AS s_mean, stddev_pop(score) AS s_sd, count(*) AS s_count\n"
        f"  FROM {P}rows GROUP BY system, query\n"
        f"),\n{P}lists AS (\n"
        f"  SELECT *,\n{distinct}"
        f"    row_number() OVER (PARTITION BY system, query ORDER BY {_LIST_ORDER}) AS position\n"
        f"  FROM {P}rows JOIN {P}list_stats USING (system, query)\n"
        f"  WINDOW l AS (PARTITION BY system, query)\n"
        f"),\n{P}checked_lists AS (\n"
        f"  SELECT * FROM {P}lists WHERE {check}\n)"
    )


def _carried(method: FusionMethod) -> str:
    """The per-system columns carried through the stages."""
    return "".join(
        ", " + ("weight" if p.name == "weights" else "trained") for p in _per_system(method))


def _normalisation_sql(macro: str, norm: Normalisation, over: Callable[[str], str] = str) -> str:
    """The normalisation's SQL (``over`` rewrites the columns it reads), an error where its
    statistics are not finite (``Normalisation.defined``)."""
    if not norm.defined:
        return over(norm.sql)
    problem = (f" overflow the {norm.name} normalisation (a sum or a spread of them is not "
               "finite): scale them down")
    error = _fail(macro, f"'the scores of a list of query ' || {_shown('query')} || "
                         f"{quote_literal(problem)}")
    return f"CASE WHEN NOT ({over(norm.defined)}) THEN {error} ELSE {over(norm.sql)} END"


def _normalised(method: FusionMethod) -> str:
    carried = _carried(method)
    cases = "".join(
        f"\n      WHEN '{n.name}' THEN {_normalisation_sql(method.sql_name, n)}"
        for n in NORMALISATIONS if not n.adds_candidates)
    borda = NORMS["borda"].sql
    return (
        f"{P}candidates AS (\n"
        f"  SELECT query, count(DISTINCT item) AS candidates FROM {P}rows GROUP BY query\n"
        f"),\n{P}normalised AS (\n"
        f"  SELECT system, query, item, score, s_count, position{carried},\n"
        f"    CASE CAST(norm AS VARCHAR){cases}\n    END AS value\n"
        f"  FROM {P}checked_lists WHERE CAST(norm AS VARCHAR) <> 'borda'\n"
        f"  UNION ALL\n"
        f"  SELECT system, query, item, score, s_count, position{carried}, {borda} AS value\n"
        f"  FROM (\n"
        f"    SELECT system, query, item, score, s_count, position{carried}, candidates\n"
        f"    FROM {P}checked_lists JOIN {P}candidates USING (query)\n"
        f"    WHERE CAST(norm AS VARCHAR) = 'borda'\n"
        f"    UNION ALL\n"
        f"    SELECT s.system, i.query, i.item, NULL, coalesce(z.s_count, 0), NULL"
        f"{_system_columns(method, 's.system')}, c.candidates\n"
        f"    FROM (SELECT DISTINCT system FROM {P}rows) s\n"
        f"    CROSS JOIN (SELECT DISTINCT query, item FROM {P}rows) i\n"
        f"    JOIN {P}candidates c ON c.query = i.query\n"
        f"    LEFT JOIN (SELECT system, query, count(*) AS s_count FROM {P}rows GROUP BY ALL) z\n"
        f"      ON z.system = s.system AND z.query = i.query\n"
        f"    WHERE CAST(norm AS VARCHAR) = 'borda' AND NOT EXISTS (\n"
        f"      SELECT 1 FROM {P}rows r\n"
        f"      WHERE r.system = s.system AND r.query = i.query AND r.item = i.item)\n"
        f"  )\n"
        f"),\n{P}ranked AS (\n"
        f"  SELECT system, query, item, score, value{carried},\n"
        f"    CASE WHEN CAST(norm AS VARCHAR) IN ({_reordering()})\n"
        f"      THEN row_number() OVER (PARTITION BY system, query ORDER BY {_NORMALISED_ORDER})\n"
        f"      ELSE position END AS position,\n"
        f"    CASE WHEN CAST(norm AS VARCHAR) = 'borda'\n"
        f"      THEN count(*) OVER (PARTITION BY system, query) ELSE s_count END AS s_count\n"
        f"  FROM {P}normalised\n)"
    )


def _reordering() -> str:
    return ", ".join(f"'{n.name}'" for n in NORMALISATIONS if n.reorders)


def _needs_candidates(method: FusionMethod) -> bool:
    return "candidates" in method.value or "candidates" in (method.absent or "")


def ordered_sums(combine: str) -> str:
    """``combine`` with each ``sum(x)`` adding its terms in the order of the systems' names. A
    parallel hash aggregate adds them in the order its threads meet them, so two runs could round
    a sum differently and order two equal fused scores differently. ``min_by(x, system_number,
    MAX_SYSTEMS)`` gathers a group's terms in the order of the systems (one per system: a system
    listing an item twice is refused, and more than ``MAX_SYSTEMS`` systems too; NULLs left
    out, as ``sum`` leaves them) and ``list_sum`` adds them left to right: the same number as
    ``sum(x ORDER BY system_number)`` (the same aggregate, the same order), the same on every
    run and thread count, for about 40% of its CPU (benchmarks/bench_fusion.py's sizes: its
    sort per group is the cost; ``list`` then ``list_grade_up`` costs 60%)."""
    return re.sub(r"\bsum\(([^()]*)\)",
                  rf"list_sum(min_by(\1, system_number, {MAX_SYSTEMS}))", combine)


def _reads_the_list(sql: str) -> bool:
    return any(column in sql for column in ("s_count", "candidates", "weight", "trained"))


def _combined(method: FusionMethod) -> str:
    """The method's value per row and its aggregate per (query, item). What absent systems give
    (``absent``) is added as: a constant (BayesFuse's) times the number of absent systems, which
    keeps the sum as exact as ranx's; otherwise (Borda's points, which depend on each system's
    list length) each query's total over all systems minus the present rows' share."""
    join = f" JOIN {P}candidates USING (query)" if _needs_candidates(method) else ""
    value, score, source, fused = method.value, ordered_sums(method.combine), f"{P}values", ""
    if method.absent is not None and not _reads_the_list(method.absent):
        score = f"{score} + (any_value(systems) - count(*)) * {method.absent}"
        source += f", (SELECT count(DISTINCT system) AS systems FROM {P}rows)"
    elif method.absent is not None:
        value = f"({value}) - ({method.absent})"
        fused = (
            f",\n{P}absent AS (\n"
            f"  SELECT query, sum({method.absent} ORDER BY system) AS absent_total\n"
            f"  FROM (\n"
            f"    SELECT c.query, s.system, c.candidates, coalesce(z.s_count, 0) AS s_count"
            f"{_system_columns(method, 's.system')}\n"
            f"    FROM (SELECT DISTINCT system FROM {P}rows) s CROSS JOIN {P}candidates c\n"
            f"    LEFT JOIN (SELECT system, query, count(*) AS s_count FROM {P}ranked\n"
            f"      GROUP BY ALL) z ON z.system = s.system AND z.query = c.query\n"
            f"  ) GROUP BY query\n"
            f"),\n{P}fused AS (\n"
            f"  SELECT query, item, score + absent_total AS score\n"
            f"  FROM {P}combined JOIN {P}absent USING (query)\n)"
        )
    return (
        f"{P}values AS (\n"
        f"  SELECT query, item, system, system_number{_carried(method)}, {value} AS value\n"
        f"  FROM {P}ranked JOIN {P}systems USING (system){join}\n"
        f"),\n{P}combined AS (\n"
        f"  SELECT query, item, {score} AS score FROM {source} GROUP BY query, item\n"
        f"  HAVING {_duplicate_check(method)}\n)"
        + (fused or f",\n{P}fused AS (SELECT * FROM {P}combined)")
    )


# Which systems gave a (query, item) a row, as a 128-bit mask in two UBIGINTs: fewer bits than
# rows means a system listed the item twice. A count(DISTINCT system) per group would cost about
# four times the whole aggregate (measured: benchmarks/bench_fusion.py's sizes).
MAX_SYSTEMS = 128
_MASKS = ("bit_count(bit_or(CASE WHEN system_number < 64 THEN 1::UBIGINT << "
          "CAST(system_number AS UBIGINT) ELSE 0::UBIGINT END)) + "
          "bit_count(bit_or(CASE WHEN system_number >= 64 THEN 1::UBIGINT << "
          "CAST(system_number - 64 AS UBIGINT) ELSE 0::UBIGINT END))")


def _duplicate_error(method: FusionMethod, item: str = "item") -> str:
    return _fail(method.sql_name, "'runs lists item ' || " + _shown(item) + " || ' more than "
                 "once for one system (query ' || " + _shown("query") + " || ')'")


def _duplicate_check(method: FusionMethod) -> str:
    return f"CASE WHEN {_MASKS} < count(*) THEN {_duplicate_error(method)} ELSE true END"


def _pairwise(method: FusionMethod) -> str:
    """Condorcet: per query, the votes for x above y summed over systems (a system's weight, or
    1), then each candidate's score: 1 + the candidates it beats + half those it ties with."""
    vote = "a.weight" if method.weighted else "1"
    return (
        f"{P}items AS (SELECT DISTINCT query, item FROM {P}ranked),\n"
        f"{P}votes AS (\n"
        f"  SELECT a.query, a.system, a.item AS x, b.item AS y, {vote} AS vote\n"
        f"  FROM {P}ranked a JOIN {P}ranked b\n"
        f"    ON a.system = b.system AND a.query = b.query AND a.position < b.position\n"
        f"  UNION ALL\n"
        f"  SELECT a.query, a.system, a.item, c.item, {vote}\n"
        f"  FROM {P}ranked a JOIN {P}items c ON a.query = c.query\n"
        f"  WHERE NOT EXISTS (SELECT 1 FROM {P}ranked r\n"
        f"    WHERE r.system = a.system AND r.query = c.query AND r.item = c.item)\n"
        f"),\n{P}tally AS (\n"
        f"  SELECT query, x, y, sum(vote ORDER BY system) AS votes FROM {P}votes\n"
        f"  GROUP BY query, x, y\n),\n"
        f"{P}fused AS (\n"
        f"  SELECT c1.query, c1.item, 1 + coalesce(sum(\n"
        f"      CASE WHEN coalesce(f.votes, 0) > coalesce(g.votes, 0) THEN 1.0\n"
        f"        WHEN coalesce(f.votes, 0) = coalesce(g.votes, 0) THEN 0.5 ELSE 0.0 END)\n"
        f"      FILTER (WHERE c2.item IS NOT NULL), 0)::DOUBLE AS score\n"
        f"  FROM {P}items c1\n"
        f"  LEFT JOIN {P}items c2 ON c2.query = c1.query AND c2.item <> c1.item\n"
        f"  LEFT JOIN {P}tally f ON f.query = c1.query AND f.x = c1.item AND f.y = c2.item\n"
        f"  LEFT JOIN {P}tally g ON g.query = c1.query AND g.x = c2.item AND g.y = c1.item\n"
        f"  GROUP BY c1.query, c1.item\n)"
    )


def _unknown_systems(method: FusionMethod) -> str:
    """Rows that raise an error for a per-system parameter naming a system runs does not have
    (a misspelt name would otherwise be ignored)."""
    parts = []
    for p in _per_system(method):
        error = _fail(method.sql_name, f"'{p.name} names system ' || {_shown('name')} || "
                                       "', which runs does not have'")
        parts.append(
            f"\nUNION ALL\nSELECT NULL, NULL, NULL, NULL\n"
            f"FROM (SELECT unnest(map_keys({p.name})) AS name)\n"
            f"WHERE CASE WHEN CAST(name AS VARCHAR) NOT IN (SELECT system FROM {P}systems)\n"
            f"  THEN {error} ELSE false END")
    return "".join(parts)


def _too_many_systems(method: FusionMethod) -> str:
    error = _fail(method.sql_name, f"'runs holds ' || (system_number + 1) || ' systems; at most "
                                   f"{MAX_SYSTEMS} can be fused'")
    return (f"\nUNION ALL\nSELECT NULL, NULL, NULL, NULL FROM {P}systems\n"
            f"WHERE CASE WHEN system_number >= {MAX_SYSTEMS} THEN {error} ELSE false END")


def body(method: FusionMethod) -> str:
    """The macro's query: the SQL form, and for the methods the native step serves
    (``native_serves``) its form too, each under a condition DuckDB folds per query (the native
    step loaded, ``norm`` and the item type: ``_native_condition``)."""
    fused = _pairwise(method) if method.form == "pairwise" else _combined(method)
    sql_form = (
        f"SELECT query, item, score,\n"
        f"  row_number() OVER (PARTITION BY query ORDER BY score DESC, {_ITEM_TEXT} DESC) AS rank\n"
        f"FROM {P}fused"
    )
    if native_serves(method):
        fused += f",\n{_native_stages(method)}"
        sql_form += (f"\nWHERE NOT ({_native_condition(method, 'item')})\nUNION ALL\n"
                     f"{_native_select(method)}")
    return (
        f"WITH {_checks(method)},\n{_rows(method)},\n{_lists(method)},\n"
        f"{_normalised(method)},\n{fused}\n{sql_form}\n"
        f"UNION ALL\nSELECT NULL, NULL, NULL, NULL FROM {P}checks WHERE NOT ok"
        f"{_unknown_systems(method)}{_too_many_systems(method)}"
    )


# --- the native form (duckrank/matching/native/fusion.c) ------------------------------------------
#
# The native step does the grouping and ordering only; a method's formulas are its record's SQL,
# applied here to what the step returns. Per query: its rows as lists, laid out by
# ``duckrank_fusion_layout`` (grouped by item, each row with its list's statistics and position),
# the record's ``value`` over each row (a lambda: the normalisation's SQL, then the method's), the
# values cut into one list per item (``duckrank_fusion_split``: the terms in the systems' order,
# as ``ordered_sums`` adds them), the record's ``combine`` over each item's list, and the items
# ordered by fused score, equal scores by item text descending, as the SQL form's rank orders
# them (``duckrank_fusion_order``). About 2x faster than the SQL form end to end at
# benchmarks/bench_fusion.py's sizes (10,000 queries: 2.2 s -> 1.0 s): one GROUP BY per query,
# not per (query, item), and no sort of every row for the rank.

# The fields of a laid-out row (fusion.c), as the records' SQL names them, in the struct's order
# (the bit of each in the step's ``fields`` argument).
_ROW_FIELDS = ("system", "score", "weight", "position", "s_count", "s_min", "s_max", "s_sum",
               "s_mean", "s_sd")
_ROW_WORDS = re.compile(rf"\b({'|'.join(_ROW_FIELDS[1:])})\b")
LAYOUT_TYPE = ("STRUCT(rows STRUCT(system INTEGER, score DOUBLE, weight DOUBLE, position BIGINT, "
               "s_count BIGINT, s_min DOUBLE, s_max DOUBLE, s_sum DOUBLE, s_mean DOUBLE, "
               "s_sd DOUBLE)[], sizes INTEGER[], firsts INTEGER[], duplicate INTEGER)")
# Item types whose text is equal exactly when the items are (the step groups by the text): the
# integers' decimal text is canonical.
_NATIVE_ITEM_TYPES = ("VARCHAR", *INTEGER_TYPES)
# A combine's aggregates over one item's terms: ``g`` its values, ``gw`` its systems' weights.
_OVER_GROUP = {"sum(value)": "list_sum(g)", "count(*)": "len(g)", "min(value)": "list_min(g)",
               "max(value)": "list_max(g)", "median(value)": "list_median(g)",
               "sum(weight)": "list_sum(gw)"}


def native_serves(method: FusionMethod) -> bool:
    """Whether the macro has a native form: the unsupervised methods that combine per item and
    give absent systems nothing (not Borda's or BayesFuse's points, not Condorcet's votes)."""
    return (method.form == "combine" and not method.supervised and method.absent is None
            and not _needs_candidates(method))


def _native_norms(method: FusionMethod) -> list[str]:
    """The normalisations the native form serves for ``method``: not Borda's (it adds rows), nor
    one that reorders the list for a method that reads positions (the step's positions are by
    the original score)."""
    reads_position = "position" in method.value
    return [n.name for n in NORMALISATIONS
            if not n.adds_candidates and not (n.reorders and reads_position)]


def _native_condition(method: FusionMethod, item: str) -> str:
    """The native branch's condition (``item``: an item of the branch's rows): the step loaded,
    ``norm`` served, and items compared by their bytes: VARCHAR without a collation that makes
    distinct texts equal (the SQL form groups and orders by the collation; the step by the
    bytes) or an integer type."""
    norms = ", ".join(quote_literal(n) for n in _native_norms(method))
    types = ", ".join(quote_literal(t) for t in _NATIVE_ITEM_TYPES)
    return (f"duckrank_fusion_native() AND CAST(norm AS VARCHAR) IN ({norms}) "
            f"AND typeof({item}) IN ({types}) AND NOT {collates_sql(f'[{item}]')}")


def _over_row(sql: str) -> str:
    """A record's SQL over one laid-out row ``r`` (a lambda's parameter)."""
    return _ROW_WORDS.sub(r"r.\1", sql)


def _fields(method: FusionMethod) -> str:
    """The step's ``fields`` argument: the row fields the method's value and combine read under
    each normalisation (a CASE DuckDB folds for a constant ``norm``), so that the step fills
    only those and sorts no list where nothing reads the list order."""
    read_always = _ROW_WORDS.findall(f"{method.value} {method.combine}")
    normalised = re.search(r"\bvalue\b", method.value) is not None

    def bits(sql: str) -> int:
        read = {"score", *read_always, *(_ROW_WORDS.findall(sql) if normalised else ())}
        return sum(1 << _ROW_FIELDS.index(field) for field in read)

    cases = "".join(f" WHEN {quote_literal(n)} THEN {bits(f'{NORMS[n].sql} {NORMS[n].defined}')}"
                    for n in _native_norms(method))
    return f"CAST(CASE CAST(norm AS VARCHAR){cases} END AS INTEGER)"


def _row_value(method: FusionMethod) -> str:
    norms = "".join(
        f" WHEN {quote_literal(n)} THEN {_normalisation_sql(method.sql_name, NORMS[n], _over_row)}"
        for n in _native_norms(method))
    normalised = f"CASE CAST(norm AS VARCHAR){norms} END"
    return re.sub(r"\bvalue\b", f"({normalised})", _over_row(method.value))


def _group_combine(method: FusionMethod) -> str:
    """The record's ``combine`` over one item's terms (``_OVER_GROUP``)."""
    combine = method.combine
    for aggregate, over_group in _OVER_GROUP.items():
        combine = combine.replace(aggregate, over_group)
    assert not re.search(r"\b(value|weight)\b|\(\*\)", combine), (method.name, combine)
    return combine


def _native_scores(method: FusionMethod) -> str:
    row_values = f"list_transform(l.rows, lambda r: {_row_value(method)})"
    values = f"duckrank_fusion_split({row_values}, l.sizes)"
    combine = _group_combine(method)
    if "gw" not in combine:
        return f"list_transform({values}, lambda g: {combine})"
    weights = "duckrank_fusion_split(list_transform(l.rows, lambda r: r.weight), l.sizes)"
    combine = re.sub(r"\bgw\b", "z[2]", re.sub(r"\bg\b", "z[1]", combine))
    return f"list_transform(list_zip({values}, {weights}), lambda z: {combine})"


def _native_stages(method: FusionMethod) -> str:
    weights = ("(SELECT list(pp.weight ORDER BY s.system_number) FROM "
               f"{P}systems s JOIN {P}parameters pp USING (system))"
               if method.weighted else "CAST([] AS DOUBLE[])")
    duplicate = _duplicate_error(method, "items[l.duplicate]")
    return (
        f"{P}queries AS (\n"
        f"  SELECT query, list(CAST(s.system_number AS INTEGER)) AS systems,\n"
        f"    list({_ITEM_TEXT}) AS texts, list(score) AS scores, list(item) AS items\n"
        f"  FROM {P}rows JOIN {P}systems s USING (system) GROUP BY query\n"
        f"),\n{P}laid AS (\n"
        f"  SELECT query, items, texts,\n"
        f"    duckrank_fusion_layout(systems, texts, scores, {weights}, {_fields(method)}) AS l\n"
        f"  FROM {P}queries\n"
        f"),\n{P}scored AS (\n"
        f"  SELECT query, items, texts, l.firsts AS firsts,\n"
        f"    CASE WHEN l.duplicate IS NOT NULL THEN {duplicate}\n"
        f"      ELSE {_native_scores(method)} END AS scores\n"
        f"  FROM {P}laid\n"
        f"),\n{P}native_fused AS (\n"
        f"  SELECT query, items, scores, firsts,\n"
        f"    duckrank_fusion_order(scores, texts, firsts) AS o\n"
        f"  FROM {P}scored\n)"
    )


def _native_select(method: FusionMethod) -> str:
    return (
        f"SELECT query, unnest(list_select(items, list_select(firsts, o))) AS item,\n"
        f"  unnest(list_select(scores, o)) AS score,\n"
        f"  CAST(generate_subscripts(o, 1) AS BIGINT) AS rank\n"
        f"FROM {P}native_fused\nWHERE {_native_condition(method, 'items[1]')}"
    )


def native_step_macros(native: bool) -> list[str]:
    """The helpers the fusion macros call for the native step: its functions with ``native``
    (the step loaded), else stand-ins of the same types that the macros never read (their
    native branch is folded away: ``duckrank_fusion_native()`` is false)."""
    limit = "current_setting('memory_limit')"
    if native:
        bodies = {
            "duckrank_fusion_native()": "true",
            "duckrank_fusion_layout(systems, items, scores, weights, fields)":
                f"duckrank_native_fusion_layout(systems, items, scores, weights, fields, {limit})",
            "duckrank_fusion_split(v, sizes)": f"duckrank_native_fusion_split(v, sizes, {limit})",
            "duckrank_fusion_order(scores, texts, firsts)":
                f"duckrank_native_fusion_order(scores, texts, firsts, {limit})",
        }
    else:
        bodies = {
            "duckrank_fusion_native()": "false",
            "duckrank_fusion_layout(systems, items, scores, weights, fields)":
                f"CAST(NULL AS {LAYOUT_TYPE})",
            "duckrank_fusion_split(v, sizes)": "CAST(NULL AS DOUBLE[][])",
            "duckrank_fusion_order(scores, texts, firsts)": "CAST(NULL AS INTEGER[])",
        }
    return [f"CREATE OR REPLACE MACRO {signature} AS {body}" for signature, body in bodies.items()]


def parameter_list(method: FusionMethod) -> str:
    """``runs, k := 60, norm := 'min-max'``: required parameters, then those with defaults."""
    return ", ".join([
        "runs", *(p.name for p in method.required),
        *(f"{p.name} := {p.default}" for p in method.optional), "norm := 'min-max'",
    ])


def method_macro(method: FusionMethod) -> str:
    return (f"CREATE OR REPLACE MACRO {method.sql_name}({parameter_list(method)}) AS TABLE\n"
            f"{body(method)}")


MACROS: tuple[str, ...] = tuple(method_macro(m) for m in METHODS)


# --- docs/fusion.md's reference part -------------------------------------------------------------

DOC_FILE = Path(__file__).resolve().parents[2] / "docs" / "fusion.md"
BEGIN = "<!-- fusion methods: generated from their records (python -m duckrank.render.fusion) -->"
END = "<!-- end of the fusion methods -->"


def _parameter_text(p: Parameter) -> str:
    default = f" (default `{p.default}`)" if p.default is not None else " (required)"
    return f"`{p.name}`{default}: {p.domain()}"


def _method_section(method: FusionMethod) -> str:
    lines = [f"### {method.title} (`{method.name}`)", "",
             f"- {method.summary[0].upper() + method.summary[1:]}: {method.formula}.",
             f"- Call: `{method.sql_name}({parameter_list(method)})`.",
             f"- Missing items: {method.missing}."]
    lines += [f"- `{p.name}`: {p.doc}; {p.domain()}." for p in method.parameters]
    lines += [f"- Against ranx 0.3.21: {method.ranx_notes}.", f"- Source: {method.source}.", ""]
    return "\n".join(lines)


def render_section() -> str:
    """The generated part of docs/fusion.md, markers included."""
    methods = ["| method (ranx's name) | parameters | formula | against ranx 0.3.21 |",
               "| --- | --- | --- | --- |"]
    methods += [
        f"| {m.title} (`{m.name}`) | "
        f"{'; '.join(map(_parameter_text, m.parameters)) or 'none'} | {m.formula} | "
        f"{m.ranx_notes} |"
        for m in METHODS
    ]
    norms = ["| `norm` (ranx's spelling) | formula | notes |", "| --- | --- | --- |"]
    norms += [f"| `'{n.name}'` (`{n.ranx}`) | {n.formula} | {n.notes} |" for n in NORMALISATIONS]
    parts = ["## Reference", "", "### Normalisations", "", *norms, "", "### Methods", "",
             *methods, "", *map(_method_section, METHODS)]
    return "\n".join([BEGIN, "", *parts, END])


def updated(text: str) -> str:
    """``text`` (the whole doc) with its generated part replaced, or appended if absent."""
    return with_section(text, BEGIN, END, render_section())


if __name__ == "__main__":
    DOC_FILE.write_text(updated(DOC_FILE.read_text()))
    print(f"wrote {DOC_FILE}")
