"""The matching step in SQL: DuckDB expressions that turn each row's (rec, truth, k) into the
positions of its hits (binary metrics) or the grades of its top K (graded metrics).

The conventions every binary metric shares are written once, in ``duckrank.matching``. The
macros (``duckrank.render.macros``) use these expressions, or the native step
(``duckrank.matching.native``) for the id types it handles; ``duckrank.matching.arrays`` is the
same step over Arrow batches.
"""

from __future__ import annotations

# --- SQL ------------------------------------------------------------------------------------------
# Arguments below must be cheap references (columns, or fields of a row bound once by a lambda over
# a one-element list): DuckDB evaluates an expression used inside a lambda again for every element.
# ``k`` is already the validated BIGINT cut-off (see ``cutoff_sql``).

def _top_k_len(rec: str, k: str) -> str:
    return f"least({k}, len({rec}))"


def _rec_side_positions(rec: str, truth: str, top: str) -> str:
    """Positions i <= top whose item is in truth and occurs there first (a repeat is a miss).
    The CASE runs the duplicate check for hits only."""
    return (
        f"list_filter(range(1, {top} + 1), lambda i: CASE WHEN list_contains({truth}, {rec}[i]) "
        f"THEN list_position({rec}, {rec}[i]) = i ELSE false END)"
    )


def _truth_side_positions(rec: str, truth: str) -> str:
    """For each element of truth: NULL when it is NULL or repeats an earlier element, else its
    first position in rec, 0 when absent. Its non-NULL count is n; its values in 1..K are the hits
    (list_position finds an item's first occurrence, so a repeated recommendation never hits)."""
    return (
        f"list_transform({truth}, lambda t, j: CASE WHEN t IS NULL "
        f"OR list_position({truth}, t) <> j THEN NULL "
        f"ELSE coalesce(list_position({rec}, t), 0)::BIGINT END)"
    )


def _rec_side_is_cheaper(rec: str, truth: str, top: str) -> str:
    """Per row cost model fitted on this machine (benchmarks/RESULTS.md, ns per row): the rec side
    costs about (150 + 19 T) + K (9 + 1.05 T), the truth side about T (50 + 0.47 len(rec)), with
    T = len(truth). This is that comparison, rounded."""
    return f"{top} * (10 + len({truth})) * 2 <= len({truth}) * (60 + len({rec}))"


def _merged_match(rec: str, truth: str, k: str, top: str, count_truth: bool) -> str:
    """The match by one sort: truth items tagged 0 and the top K tagged with their positions,
    sorted by (id, tag). A recommendation is a hit when the entry before it is a truth entry with
    the same id (so only an item's first position can hit); n counts the first truth entry of
    each id. O((K + T) log(K + T)), for rows where both other forms are quadratic."""
    tagged = (
        f"list_sort(list_transform(list_concat({truth}, {rec}[1:{top}]), lambda x, i: "
        f"{{'id': x, 'pos': CASE WHEN i <= len({truth}) THEN 0 ELSE i - len({truth}) END}}))"
    )
    hits = (
        "list_transform(list_filter(range(2, len(s) + 1), lambda i: s[i].pos > 0 "
        "AND s[i - 1].pos = 0 AND s[i - 1].id = s[i].id), lambda i: s[i].pos)"
    )
    count = (
        ", n := len(list_filter(range(1, len(s) + 1), lambda i: s[i].pos = 0 "
        "AND s[i].id IS NOT NULL AND (i = 1 OR s[i - 1].id IS DISTINCT FROM s[i].id)))"
        if count_truth
        else ""
    )
    return (
        f"list_transform([{tagged}], lambda s: "
        f"struct_pack(K := {top}, pos := {hits}{count}, cut := {k}))[1]"
    )


def _merge_is_cheaper(rec: str, truth: str, top: str) -> str:
    """The sorted merge costs about 350 (K + T) ns per row here, against the cost model of
    ``_rec_side_is_cheaper`` for the other two forms, each of which also pays about 0.09 T^2 for
    counting distinct truth items (in hundredths of ns below). Both inequalities need T above
    about 330, so a cheap first test keeps the model off the usual short-truth rows."""
    t = f"len({truth})"
    merge = f"35000 * ({top} + {t})"
    return (
        f"({t} > 256 AND {merge} < {t} * (5000 + 47 * len({rec}) + 9 * {t}) "
        f"AND {merge} < 15000 + 1900 * {t} + {top} * (900 + 105 * {t}) + 9 * {t} * {t})"
    )


def matched_sql(rec: str, truth: str, k: str, *, count_truth: bool = True) -> str:
    """One row's match as STRUCT(K BIGINT, pos BIGINT[], n BIGINT, cut BIGINT): K = min(k,
    len(rec)), the 1-based positions of the hits in the top K (in no particular order), n, the
    number of distinct non-NULL truth items (left out when ``count_truth`` is false: the rec side
    would pay an extra pass over truth for it), and cut, k itself. The metrics read k from the
    struct: DuckDB does not fold the validation of a constant k (``cutoff_sql``) inside a lambda,
    and reading it there cost ndcg@10 20%.

    Three SQL forms over DuckDB's list functions, chosen per row by a cost model: scanning the top K
    of rec against truth costs a lambda step per recommended item; locating each truth item in rec
    costs a lambda step per truth item plus a native scan of rec (n comes free with it); for long
    lists on both sides, where those two are quadratic, one sort of both lists (``_merged_match``).
    """
    top = _top_k_len(rec, k)
    count = f", n := {relevant_count_sql(truth)}" if count_truth else ""
    rec_side = (
        f"struct_pack(K := {top}, pos := {_rec_side_positions(rec, truth, top)}{count}, cut := {k})"
    )
    # K is bound next to the located positions so that a per-row k is not re-validated for
    # every truth item inside the filter's lambda.
    count = ", n := list_count(s.located)::BIGINT" if count_truth else ""
    truth_side = (
        f"list_transform([struct_pack(K := {top}, cut := {k}, located := "
        f"{_truth_side_positions(rec, truth)})], lambda s: struct_pack(K := s.K, "
        f"pos := list_filter(s.located, lambda p: p BETWEEN 1 AND s.K){count}, cut := s.cut))[1]"
    )
    merged = _merged_match(rec, truth, k, top, count_truth)
    return (
        f"(CASE WHEN {_merge_is_cheaper(rec, truth, top)} THEN {merged} "
        f"WHEN {_rec_side_is_cheaper(rec, truth, top)} THEN {rec_side} "
        f"ELSE {truth_side} END)"
    )


# Id types the native matching step (duckrank/matching/native/match.c) compares exactly as SQL does:
# integers of any widths by value, and each of the others against its own type. Any other pair
# takes the SQL form above. (TIME WITH TIME ZONE, DECIMAL, INTERVAL and nested ids are left to SQL:
# their equality is not their bytes, or they are rare as ids.)
NATIVE_SIGNED_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT")
NATIVE_UNSIGNED_TYPES = ("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")
NATIVE_SAME_TYPES = (
    "UUID", "VARCHAR", "BLOB", "DOUBLE", "FLOAT", "BOOLEAN", "DATE", "TIMESTAMP",
    "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMP WITH TIME ZONE",
)


def _list_types(names: tuple[str, ...]) -> str:
    return ", ".join(f"'{name}[]'" for name in names)


def native_handles_sql(rec: str, truth: str) -> str:
    """True when the native step takes this pair of list types. DuckDB folds ``typeof`` of a
    column to a constant, so the choice is made once per query, not per row. UHUGEINT pairs only
    with unsigned types: its values above 2^127 share their bits with negative signed values."""
    integers = _list_types(NATIVE_SIGNED_TYPES + NATIVE_UNSIGNED_TYPES)
    unsigned = _list_types(NATIVE_UNSIGNED_TYPES + ("UHUGEINT",))
    same = _list_types(NATIVE_SAME_TYPES)
    return (
        f"((typeof({rec}) IN ({integers}) AND typeof({truth}) IN ({integers})) "
        f"OR (typeof({rec}) IN ({unsigned}) AND typeof({truth}) IN ({unsigned})) "
        f"OR (typeof({rec}) = typeof({truth}) AND typeof({rec}) IN ({same})))"
    )


def native_matched_sql(function: str, rec: str, truth: str, k: str) -> str:
    """``matched_sql``'s value (always with n; positions ascending) from the native step, for the
    pairs ``native_handles_sql`` accepts. ``function`` names the caller in its error messages."""
    return f"duckrank_match({function}, {rec}, {truth}, {k})"


def native_grades_sql(rec: str, truth: str, k: str) -> str:
    """``graded_top_sql``'s value from the native step when rec holds VARCHAR or integer ids
    (compared by their text, as ``x::VARCHAR`` gives it), else ``graded_top_sql`` itself."""
    ids = _list_types(("VARCHAR",) + NATIVE_SIGNED_TYPES[:-1] + NATIVE_UNSIGNED_TYPES)
    return (
        f"CASE WHEN typeof({rec}) IN ({ids}) THEN duckrank_grades({rec}, {truth}, {k}) "
        f"ELSE {graded_top_sql(rec, truth, k)} END"
    )


def hit_positions_sql(rec: str, truth: str, k: str) -> str:
    """The 1-based positions of the hits of ``rec`` within its top K (in no particular order), as
    a BIGINT[]."""
    return f"struct_extract({matched_sql(rec, truth, k, count_truth=False)}, 'pos')"


def relevant_count_sql(truth: str) -> str:
    """n: the number of distinct non-NULL items of truth. A first-occurrence test per item is
    3x cheaper than list_unique's per-row hash table for the short lists truth usually is."""
    return (
        f"len(list_filter({truth}, lambda t, j: t IS NOT NULL AND list_position({truth}, t) = j))"
    )


def cutoff_sql(function: str, rec: str, k: str) -> str:
    """The validated cut-off as BIGINT: NULL for a NULL k, len(rec) for ``'all'``, an error naming
    the function (``function`` is a SQL expression) and the value for anything else that is not a
    positive integer (NaN and infinities included). A k too large for BIGINT (a HUGEINT, 1e30)
    is beyond every list: it is capped rather than turned into NULL."""
    as_double = f"try_cast({k} AS DOUBLE)"
    return (
        f"(CASE WHEN {k} IS NULL THEN NULL "
        f"WHEN {k}::VARCHAR = 'all' THEN len({rec}) "
        f"WHEN {as_double} IS NULL OR NOT isfinite({as_double}) OR {as_double} < 1 "
        f"OR {as_double} <> floor({as_double}) "
        f"THEN error({function} || ': k must be a positive integer or ''all'', got ' "
        f"|| {k}::VARCHAR) "
        f"ELSE coalesce(try_cast({k} AS BIGINT), least({as_double}, 9e18)::BIGINT) END)"
    )



# --- graded relevance ----------------------------------------------------------------------------
# The graded metrics (duckrank.metrics.graded) read each row as *grades*: the grade of each of the
# top K recommended items in rec order, and the ideal grades. A graded truth is a
# MAP(VARCHAR, DOUBLE) from item id to grade (a finite number >= 0; 0 = not relevant); rec items
# are matched by their text form (``rec[i]::VARCHAR``), since one MAP(VARCHAR, DOUBLE) macro
# overload accepts maps of every key type. A truth LIST means grade 1 for each of its items. The
# hit rules are the binary ones above: a duplicate recommendation or a NULL element has grade 0.

def graded_top_sql(rec: str, truth: str, k: str) -> str:
    """Grades of the top K of ``rec`` in rec order (DOUBLE[], 0 for items without a grade) from a
    MAP(VARCHAR, DOUBLE) truth. The map lookup comes first so that only items in truth pay for
    the duplicate check (about 2x faster at K = 100); a NULL item looks up NULL."""
    grade = f"{truth}[x::VARCHAR]"
    return (
        f"list_transform(list_slice({rec}, 1, {_top_k_len(rec, k)}), lambda x, i: "
        f"CASE WHEN {grade} IS NULL THEN 0.0 WHEN list_position({rec}, x) = i THEN {grade} "
        "ELSE 0.0 END)"
    )


def binary_top_sql(positions: str, top_k_len: str) -> str:
    """Grades of the top K when truth is a LIST: 1.0 at the hit ``positions``, else 0.0."""
    return (
        f"list_transform(range(1, {top_k_len} + 1), "
        f"lambda i: list_contains({positions}, i)::DOUBLE)"
    )


def ideal_grades_sql(grades: str, k: str) -> str:
    """The min(k, n) largest positive grades of a DOUBLE[], largest first."""
    return f"list_slice(list_reverse_sort(list_filter({grades}, lambda g: g > 0)), 1, {k})"


def positive_count_sql(grades: str) -> str:
    """n for graded truth: the number of positive grades."""
    return f"len(list_filter({grades}, lambda g: g > 0))::BIGINT"


def bad_grade_sql(function: str, truth: str) -> tuple[str, str]:
    """(condition, error) for a MAP truth holding a grade that is NULL, NaN, infinite or negative;
    the error names the function (a SQL expression), the first such item and its grade."""
    bad = (
        f"list_filter(map_entries({truth}), "
        "lambda e: e.value IS NULL OR NOT isfinite(e.value) OR e.value < 0)"
    )
    message = (
        f"{function} || ': the grade of item ' || ({bad})[1].key || ' in truth must be a finite "
        f"number >= 0, got ' || coalesce(({bad})[1].value::VARCHAR, 'NULL')"
    )
    return f"len({bad}) > 0", f"error({message})"


def first_field_grades_sql(rec: str, k: str) -> str:
    """Grades of the top K of a rec given as structs whose first field is the grade (Hivemall's
    graded form), as DOUBLE[]."""
    return (
        f"list_transform(list_slice({rec}, 1, {_top_k_len(rec, k)}), "
        "lambda s: struct_extract_at(s, 1)::DOUBLE)"
    )


def bad_list_grade_sql(function: str, grades: str, side: str) -> tuple[str, str]:
    """(condition, error) for a DOUBLE[] of grades holding a NULL, NaN, infinite or negative
    one; the error names the function (a SQL expression), ``side`` and the position."""
    flags = f"list_transform({grades}, lambda g: g IS NULL OR NOT isfinite(g) OR g < 0)"
    position = f"list_position({flags}, true)"
    message = (
        f"{function} || ': grade ' || {position} || ' of {side} must be a finite number >= 0, "
        f"got ' || coalesce(({grades})[{position}]::VARCHAR, 'NULL')"
    )
    return f"list_bool_or({flags})", f"error({message})"


