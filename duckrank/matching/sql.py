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
    """min(k, len(rec)), 0 for a NULL rec (whose value the callers make NULL). ``least`` skips a
    NULL, so least(k, len(NULL)) was k, which the cost models below multiplied: a NULL rec with
    k near 2^63 overflowed BIGINT. k is written once: it is the whole validation expression of
    ``cutoff_sql``, and every copy of it is bound again when a query is planned."""
    return f"least({k}, coalesce(len({rec}), 0))"


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


def collates_sql(ids: str) -> str:
    """True when ``ids`` holds VARCHAR whose collation makes distinct strings equal: 'A' and 'a'
    (NOCASE), 'é' and 'e' (NOACCENT), or the composed and decomposed 'é' (NFC, and every ICU
    collation). ``cast_to_type`` gives a constant of the element type, collation included, and
    DuckDB folds the comparisons (``typeof`` does not show a collation; DuckDB 1.4 has no
    ``get_type``). The CASE keeps DuckDB from casting 'A' to a non-text id type. The type is
    read through a cast to VARCHAR[], which keeps a collation and gives an untyped empty list
    (``[]``, "NULL"[]) a type: cast_to_type refuses to cast to NULL, even in a branch not taken."""
    def same(one: str, other: str) -> str:  # a comparison applies the collation of either side
        return f"cast_to_type({one}, CAST({ids} AS VARCHAR[])[1]) = {other}"

    pairs = [("'A'", "'a'"), ("chr(233)", "'e'"), ("chr(233)", "'e' || chr(769)")]
    probes = " OR ".join(same(one, other) for one, other in pairs)
    return f"(CASE WHEN typeof({ids}) = 'VARCHAR[]' THEN {probes} ELSE false END)"


def native_handles_sql(rec: str, truth: str) -> str:
    """True when the native step takes this pair of list types. DuckDB folds ``typeof`` of a
    column to a constant, so the choice is made once per query, not per row. UHUGEINT pairs only
    with unsigned types: its values above 2^127 share their bits with negative signed values.
    (Collated VARCHAR ids, which the native step would compare by their bytes, are routed
    before this test: ``id_pair_sql``.)"""
    integers = _list_types(NATIVE_SIGNED_TYPES + NATIVE_UNSIGNED_TYPES)
    unsigned = _list_types(NATIVE_UNSIGNED_TYPES + ("UHUGEINT",))
    same = _list_types(NATIVE_SAME_TYPES)
    return (
        f"((typeof({rec}) IN ({integers}) AND typeof({truth}) IN ({integers})) "
        f"OR (typeof({rec}) IN ({unsigned}) AND typeof({truth}) IN ({unsigned})) "
        f"OR (typeof({rec}) = typeof({truth}) AND typeof({rec}) IN ({same})))"
    )


# --- id types that DuckDB would compare inexactly ------------------------------------------------
# rec and truth of different types are compared in DuckDB's common type of the two, but within one
# side (n, the duplicate check) in that side's own type. Where the common type merges ids that
# one side holds apart, a hit counted twice takes a metric out of [0, 1]: UHUGEINT against HUGEINT
# meet as DOUBLE (2^64 - 1 = 2^64), BIGINT against DOUBLE too (2^53 + 1 = 2^53), DECIMAL(38,0)
# against DECIMAL(38,10) as DECIMAL(38,0) (1.5 = 2), a TIMESTAMP against a TIMESTAMP WITH TIME ZONE
# through the session's TimeZone (02:30 and 03:30 on a spring-forward day are one instant), a
# VARCHAR against a VARCHAR COLLATE NOCASE under NOCASE ('a' = 'A'). Each pair is decided from the
# types alone, which DuckDB folds to constants: nothing is paid per row by the usual pairs.

INTEGER_TYPES = (*NATIVE_SIGNED_TYPES, *NATIVE_UNSIGNED_TYPES, "UHUGEINT", "BIGNUM")
# The integer types a FLOAT (24-bit significand) and a DOUBLE (53 bits) do not hold exactly.
_BEYOND_FLOAT = tuple(t for t in INTEGER_TYPES if t not in ("TINYINT", "SMALLINT", "UTINYINT",
                                                               "USMALLINT"))
_BEYOND_DOUBLE = tuple(t for t in _BEYOND_FLOAT if t not in ("INTEGER", "UINTEGER"))
_DECIMAL = r"DECIMAL\(\d+,\d+\)"
_TIME_ZONE = "TIMESTAMP WITH TIME ZONE"


def _types(names: tuple[str, ...]) -> str:
    return "(" + "|".join(names) + ")"


def _pairs_regex(pairs: list[tuple[str, str]]) -> str:
    """A regex over ``_pair_key`` matching each (one, other) pair of element type patterns, in
    either order."""
    return "|".join(
        rf"{a}\[\];{b}\[\]" for one, other in pairs for a, b in ((one, other), (other, one))
    )


def _pair_key(rec: str, truth: str) -> str:
    """'<rec type>;<truth type>': one string that each rule below reads with a single regex,
    rather than a test of each side against each type list (planning binds every test anew)."""
    return f"(typeof({rec}) || ';' || typeof({truth}))"


def _matches(rec: str, truth: str, pairs: list[tuple[str, str]]) -> str:
    return f"regexp_full_match({_pair_key(rec, truth)}, '{_pairs_regex(pairs)}')"


def _exact_pair(rec: str, truth: str) -> str:
    """True for numeric ids of two types whose common type DuckDB reaches inexactly, or by a
    cast that can overflow: UHUGEINT against a signed integer (DOUBLE, or the signed type),
    DECIMAL against an integer or another DECIMAL (a DECIMAL(38, s) that rounds or overflows),
    an integer against a float that does not hold all its values. These are compared by their
    exact values (``exact_ids_sql``). DECIMAL against a float is refused (``id_pair_sql``);
    integers of any other widths and FLOAT against DOUBLE keep DuckDB's comparison."""
    integers, signed = _types(INTEGER_TYPES), _types(NATIVE_SIGNED_TYPES)
    pairs = [
        ("UHUGEINT", signed), (_DECIMAL, integers), (_DECIMAL, _DECIMAL),
        ("FLOAT", _types(_BEYOND_FLOAT)), ("DOUBLE", _types(_BEYOND_DOUBLE)),
    ]
    return f"(typeof({rec}) <> typeof({truth}) AND {_matches(rec, truth, pairs)})"


def exact_ids_sql(ids: str) -> str:
    """The ids of a numeric list as text that is equal exactly when the values are: an integer's
    digits; a DECIMAL's without trailing zeros (1.500 -> 1.5, 2.0 -> 2); a FLOAT or DOUBLE that
    holds an integer, that integer's digits (by BIGNUM, exact at any size: 2^53 + 2 is
    9007199254740994, where DuckDB's text says 9007199254740994.0 or 1e+16); any other float its
    shortest text, which no integer or DECIMAL pair reaches (DECIMAL against a float is refused).
    Written to bind for every id type, since the macros choose this form by a CASE on the types:
    ``TRY_CAST`` binds where a cast does not exist."""
    real = "TRY_CAST(v AS DOUBLE)"
    return (
        f"list_transform({ids}, lambda v: CASE WHEN typeof(v) IN ('FLOAT', 'DOUBLE') "
        f"AND isfinite({real}) AND {real} = trunc({real}) THEN {real}::BIGNUM::VARCHAR "
        "WHEN typeof(v) LIKE 'DECIMAL(%' "
        r"THEN regexp_replace(v::VARCHAR, '\.0*$|(\.\d*[1-9])0+$', '\1') "
        "ELSE v::VARCHAR END)"
    )


def _collated_pair(rec: str, truth: str) -> str:
    """True when either side is a collated VARCHAR. DuckDB compares the two under the collation,
    so both sides are brought to that common type (``common_ids_sql``; else a plain side would
    keep apart ('a', 'A') what the comparison merges) and matched by the sorted merge, whose sort
    and comparisons follow the collation; the native step would compare bytes. (Before DuckDB
    2.0 list functions ignore a collation that comparisons apply, and sorts of structs ignore it
    too: ``id_pair_sql`` refuses collated ids there.) Two different collations are DuckDB's
    binder error."""
    return f"({collates_sql(rec)} OR {collates_sql(truth)})"


def common_ids_sql(ids: str, other: str) -> str:
    """``ids`` in DuckDB's common type of the two lists (a collation of either side included)."""
    return f"list_concat({other}[1:0], {ids})"


def converted_matched_sql(function: str, rec: str, truth: str, k: str, native: bool) -> str:
    """``matched_sql``'s value (with n) for a pair that ``id_pair_sql`` calls 'exact' or
    'collated': numeric ids by their exact text, collated ids both in the collated common type
    (cast to VARCHAR, which keeps the collation, so that one SQL form serves both), matched by
    the sorted merge alone (``_collated_pair`` says why; binding each form of the matching SQL
    is most of a query's planning time, and the merge is never quadratic). With ``native``, the
    exact text (plain VARCHAR) goes to the native step; a collation cannot. The converted lists
    are bound once by a lambda over a one-element list, as an expression would otherwise be
    evaluated again inside every matching lambda."""
    collated = _collated_pair(rec, truth)

    def converted(ids: str, other: str) -> str:
        return (
            f"CASE WHEN {collated} THEN CAST({common_ids_sql(ids, other)} AS VARCHAR[]) "
            f"ELSE {exact_ids_sql(ids)} END"
        )

    merged = _merged_match("e.rec", "e.truth", "e.k", _top_k_len("e.rec", "e.k"), True)
    sql = (
        f"list_transform([struct_pack(rec := {converted(rec, truth)}, "
        f"truth := {converted(truth, rec)}, k := {k})], lambda e: {merged})[1]"
    )
    if not native:
        return sql
    native_match = native_matched_sql(function, exact_ids_sql(rec), exact_ids_sql(truth), k)
    return f"CASE WHEN {collated} THEN {sql} ELSE {native_match} END"


def id_pair_sql(function: str, rec: str, truth: str) -> str:
    """How a pair of id list types is matched: 'exact' (``_exact_pair``: numeric ids by their
    exact values), 'collated' (``_collated_pair``: both sides in the collated common type) or
    'as is' (DuckDB's comparison, by the SQL form or the native step); or an error naming
    ``function`` (a SQL expression), both types and the fix, for the pairs duckrank refuses
    because no exact comparison serves them: DECIMAL against FLOAT or DOUBLE (DuckDB compares
    them as DOUBLE: 0.1 is not exactly any DOUBLE, and wide DECIMALs merge), a TIMESTAMP WITH
    TIME ZONE against another type (the comparison goes through the session's TimeZone and can
    merge two local times), ids that are lists or structs of two different types (their fields
    would meet in a common type that may be inexact), and collated ids in a DuckDB before 2.0
    (the SQL file in a 1.4 or 1.5 shell), whose list functions ignore a collation that its
    comparisons and sorts apply. Only types are read: DuckDB folds it to a constant per query
    (a refusal is raised by the first row that reaches it)."""
    types = f"' and truth is ' || typeof({truth}) || ': '"

    def message(reason: str, fix: str = "") -> str:
        fix = fix or (
            f"cast one side to the other''s type, e.g. CAST(truth AS ' || typeof({rec}) || ')"
        )
        return f"error({function} || ': rec is ' || typeof({rec}) || {types} || '{reason}; {fix}')"

    differ = f"typeof({rec}) <> typeof({truth})"
    nested = r"((STRUCT|TUPLE|MAP|UNION)\(.*|.*\]\[\])"
    refused = [
        # Never true. It binds first, so that DuckDB's binder error for a truth or rec that is
        # not a list (the item column of a long table, a score) names both types:
        # list_concat(INTEGER[], BIGINT).
        (f"typeof(list_concat({rec}, {truth})) IS NULL", "NULL"),
        (_matches(rec, truth, [(_DECIMAL, "(FLOAT|DOUBLE)")]),
         message("DuckDB would compare these ids as DOUBLE, which is inexact")),
        (f"({differ} AND contains({_pair_key(rec, truth)}, '{_TIME_ZONE}'))",
         message("DuckDB would compare these ids through the TimeZone setting, which can merge "
                 "two local times")),
        (f"({differ} AND regexp_full_match({_pair_key(rec, truth)}, "
         f"'{nested};.*|.*;{nested}'))",
         message("ids that are lists or structs must have the same type on both sides")),
        (_exact_pair(rec, truth), "'exact'"),
        (_collated_pair(rec, truth),
         "CASE WHEN list_contains(['A' COLLATE NOCASE], 'a') THEN 'collated' ELSE "
         + message("collated ids need DuckDB 2.0 (the list functions of this DuckDB ignore a "
                   "collation)", "compare them byte for byte as BLOBs: list_transform(rec, "
                   "lambda x: x::BLOB), and the same for truth") + " END"),
    ]
    whens = "".join(f"WHEN {condition} THEN {result} " for condition, result in refused)
    return f"(CASE {whens}ELSE 'as is' END)"


def native_matched_sql(function: str, rec: str, truth: str, k: str) -> str:
    """``matched_sql``'s value (always with n; positions ascending) from the native step, for the
    pairs ``native_handles_sql`` accepts. ``function`` names the caller in its error messages."""
    # The limit in force for this query: the native step keeps its scratch memory under it. The
    # name is qualified: a macro of the same name in the user's database would shadow it.
    return (
        f"system.main.duckrank_match({function}, {rec}, {truth}, {k}, "
        "current_setting('memory_limit'))"
    )


# rec's element types the native graded functions take (match.c: VARCHAR against the keys'
# text, integers against the integers the keys are the text of), else the SQL form.
_NATIVE_GRADED_IDS = _list_types(("VARCHAR",) + NATIVE_SIGNED_TYPES[:-1] + NATIVE_UNSIGNED_TYPES)


def native_top_grades_sql(rec: str, truth: str, k: str) -> str:
    """``top_grades_sql``'s value from the native step (its function ``duckrank_grades``: the
    grades of the top K) when rec holds VARCHAR or integer ids, else ``top_grades_sql`` itself."""
    return (
        f"CASE WHEN typeof({rec}) IN ({_NATIVE_GRADED_IDS}) "
        f"THEN system.main.duckrank_grades({rec}, {truth}, {k}, current_setting('memory_limit')) "
        f"ELSE {top_grades_sql(rec, truth, k)} END"
    )


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
# MAP from item id to grade (a finite number >= 0; 0 = not relevant), of one of two types, the
# macros' two typed overloads: MAP(BIGINT, DOUBLE) for a rec of integers (``INTEGER_KEYS``), ids
# compared by value; else MAP(VARCHAR, DOUBLE), rec items matched by their text form
# (``rec[i]::VARCHAR``), which accepts maps of every key type. DuckDB chooses between them by
# rec's type (it costs every MAP cast alike) and casts a map of any other type, a cost that
# outweighs the whole native step. A truth LIST means grade 1 for each of its items. The hit
# rules are the binary ones above: a duplicate recommendation or a NULL element has grade 0.
# (rec type, truth type) of the overload for integer ids.
INTEGER_KEYS = ("BIGINT[]", "MAP(BIGINT, DOUBLE)")


def top_grades_sql(rec: str, truth: str, k: str, integer_keys: bool = False) -> str:
    """Grades of the top K of ``rec`` in rec order (DOUBLE[], 0 for items without a grade) from a
    MAP(VARCHAR, DOUBLE) truth (MAP(BIGINT, DOUBLE) with ``integer_keys``). The map lookup comes
    first so that only items in truth pay for the duplicate check (about 2x faster at K = 100);
    a NULL item looks up NULL."""
    grade = f"{truth}[x]" if integer_keys else f"{truth}[x::VARCHAR]"
    return (
        f"list_transform(list_slice({rec}, 1, {_top_k_len(rec, k)}), lambda x, i: "
        f"CASE WHEN {grade} IS NULL THEN 0.0 WHEN list_position({rec}, x) = i THEN {grade} "
        "ELSE 0.0 END)"
    )


def top_grades_match_sql(top: str, grades: str, k: str, bad: str = "0") -> str:
    """What the graded formulas read (``graded_match_sql``) from the grades of the top K in rec
    order (``top``, DOUBLE[]) and the grades of truth (``grades``, DOUBLE[]); ``bad`` is the
    field of that name."""
    return (
        f"list_transform([struct_pack(top := {top}, truth := {grades})], lambda s: struct_pack("
        "K := len(s.top)::BIGINT, pos := list_filter(range(1, len(s.top) + 1), "
        "lambda i: s.top[i] > 0), grades := list_filter(s.top, lambda g: g > 0), "
        f"ideal := {ideal_grades_sql('s.truth', k)}, n := {positive_count_sql('s.truth')}, "
        f"cut := {k}, bad := ({bad})::BIGINT))[1]"
    )


def graded_match_sql(rec: str, truth: str, k: str, integer_keys: bool = False) -> str:
    """One row's graded match from a graded truth (``top_grades_sql``), the value of the native
    ``duckrank_graded`` (match.c): STRUCT(K BIGINT, pos BIGINT[], grades DOUBLE[], ideal
    DOUBLE[], n BIGINT, cut BIGINT, bad BIGINT). pos: the ascending ranks i <= K whose item has
    a positive grade and occurs there first; grades: their grades; ideal: the min(k, n) largest
    positive grades, largest first; n: the number of positive grades; cut: k; bad: the 1-based
    index in truth of its first grade that is NULL, NaN, infinite or negative, 0 without one
    (the other fields are then not to be read)."""
    bad = (
        f"coalesce(list_position(list_transform(map_values({truth}), "
        "lambda g: g IS NULL OR NOT isfinite(g) OR g < 0), true), 0)"
    )
    top = top_grades_sql(rec, truth, k, integer_keys)
    return top_grades_match_sql(top, f"map_values({truth})", k, bad)


def bound_graded_match_sql(rec: str, truth: str, k: str, integer_keys: bool = False) -> str:
    """``graded_match_sql`` over rec, truth and k bound once per row by a lambda over a
    one-element list (the arguments may be expressions, which its lambdas would evaluate again
    for every element); NULL when rec, truth or k is NULL, as the native step gives it."""
    row = f"struct_pack(rec := {rec}, truth := {truth}, cut := {k})"
    return (
        f"list_transform([{row}], lambda gr: CASE WHEN gr.rec IS NULL OR gr.truth IS NULL "
        f"OR gr.cut IS NULL THEN NULL ELSE "
        f"{graded_match_sql('gr.rec', 'gr.truth', 'gr.cut', integer_keys)} "
        "END)[1]"
    )


def native_graded_match_sql(rec: str, truth: str, k: str, integer_keys: bool = False) -> str:
    """``bound_graded_match_sql``'s value from the native step (its function
    ``duckrank_graded``: the whole graded match) when rec holds VARCHAR or integer ids, else
    ``bound_graded_match_sql`` itself. DuckDB folds the choice per query."""
    return (
        f"CASE WHEN typeof({rec}) IN ({_NATIVE_GRADED_IDS}) "
        f"THEN system.main.duckrank_graded({rec}, {truth}, {k}, current_setting('memory_limit')) "
        f"ELSE {bound_graded_match_sql(rec, truth, k, integer_keys)} END"
    )


def hits_graded_match_sql(match: str) -> str:
    """``graded_match_sql``'s value for a LIST truth (grade 1 for each item) from its binary
    match (``matched_sql``'s struct, with n): the hits sorted (the SQL form gives them in no
    particular order), each of grade 1, and min(k, n) ideal grades of 1."""
    return (
        f"struct_pack(K := {match}.K, pos := list_sort({match}.pos), "
        f"grades := list_resize([]::DOUBLE[], len({match}.pos), 1.0), "
        f"ideal := list_resize([]::DOUBLE[], least({match}.cut, {match}.n), 1.0), "
        f"n := {match}.n, cut := {match}.cut, bad := 0::BIGINT)"
    )


def bad_grade_at_sql(function: str, truth: str, bad: str) -> tuple[str, str]:
    """(condition, error) for a graded match whose ``bad`` field names a grade of a MAP truth
    (see ``graded_match_sql``); the error is ``bad_grade_sql``'s."""
    return f"{bad} > 0", _grade_error(
        function, f"map_keys({truth})[{bad}]", f"map_values({truth})[{bad}]", "finite number >= 0"
    )


def ideal_grades_sql(grades: str, k: str) -> str:
    """The min(k, n) largest positive grades of a DOUBLE[], largest first."""
    return f"list_slice(list_reverse_sort(list_filter({grades}, lambda g: g > 0)), 1, {k})"


def positive_count_sql(grades: str) -> str:
    """n for graded truth: the number of positive grades."""
    return f"len(list_filter({grades}, lambda g: g > 0))::BIGINT"


def bad_grade_sql(function: str, truth: str, negative: bool = False) -> tuple[str, str]:
    """(condition, error) for a MAP truth holding a grade that is NULL, NaN, infinite or (unless
    ``negative``: trec_eval's qrels, see ``relevant_grade_sql``) negative; the error names the
    function (a SQL expression), the first such item and its grade."""
    floor = "" if negative else " OR e.value < 0"
    bad = (
        f"list_filter(map_entries({truth}), "
        f"lambda e: e.value IS NULL OR NOT isfinite(e.value){floor})"
    )
    domain = "finite number" if negative else "finite number >= 0"
    return f"len({bad}) > 0", _grade_error(
        function, f"({bad})[1].key", f"({bad})[1].value", domain
    )


def _grade_error(function: str, key: str, grade: str, domain: str) -> str:
    """The error naming ``function`` (a SQL expression), the item ``key`` and its ``grade``."""
    return (
        f"error({function} || ': the grade of item ' || {key} || ' in truth must be a "
        f"{domain}, got ' || coalesce({grade}::VARCHAR, 'NULL'))"
    )


# --- judged truth: trec_eval's reading of graded qrels -------------------------------------------
# A MAP truth item -> grade read as trec_eval reads qrels: a grade >= 0 is a judgment, relevant
# when it reaches the threshold (min_grade; NULL: grade > 0, trec_eval's default -l 1 on its
# integer grades), else judged non-relevant; a negative grade is "in the pool but unjudged"
# (trec_eval's RELVALUE_UNJUDGED, which infAP samples); an item missing from truth is "not in the
# pool". Both kinds of unjudged documents are never relevant, whatever min_grade says.

def relevant_grade_sql(grade: str, min_grade: str) -> str:
    """True when ``grade`` (a DOUBLE, NULL for an item not in truth) is relevant."""
    return (
        f"({grade} >= 0 AND CASE WHEN {min_grade} IS NULL THEN {grade} > 0 "
        f"ELSE {grade} >= try_cast({min_grade} AS DOUBLE) END)"
    )


def relevant_keys_sql(truth: str, min_grade: str) -> str:
    """The items of a MAP truth whose grade is relevant, as a VARCHAR[] (the binary metrics'
    LIST truth)."""
    return (
        f"list_transform(list_filter(map_entries({truth}), "
        f"lambda e: {relevant_grade_sql('e.value', min_grade)}), lambda e: e.key)"
    )


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




# --- the native step's entry points as macros --------------------------------------------------
# The metric macros call the native step only through these helper macros, so that a metric's
# text is the same with the native step and without it: the stored macros are registered once,
# in every database, and a connection with the native step loaded gets TEMP copies of just these
# helpers (DuckDB resolves a TEMP macro before a stored one, also inside a stored macro's body),
# not TEMP copies of every metric (72 statements, 390 KB of SQL parsed on each connect: 0.2 s).
# Their stored forms are what DuckDB without the native step runs: the SQL matching step, or a
# branch DuckDB folds away (``duckrank_native_ids`` is false).
_MATCH_TYPE = "STRUCT(K BIGINT, pos BIGINT[], n BIGINT, cut BIGINT)"  # duckrank_match's


def native_step_macros(native: bool) -> list[str]:
    """CREATE MACRO statements of the helpers the metric macros call for the native step: its
    forms with ``native`` (the native step must be loaded), else the stored forms.

    * ``duckrank_native_ids(rec, truth)``: whether the native step takes this pair of list types
      (``native_handles_sql``; false when it is not loaded), folded per query.
    * ``duckrank_native_match(fn, rec, truth, k)``: its match (``native_matched_sql``), read only
      where ``duckrank_native_ids`` holds (the stored form: a NULL of its type, never read).
    * ``duckrank_text_match`` and ``duckrank_text_hits(fn, rec, truth, k)``: the match of ids
      as text (VARCHAR against VARCHAR, which the native step always takes), with n and without
      it (the SQL form spares the pass over truth for it).
    * ``duckrank_text_grades(rec, truth, k)``: the grades of the top K of VARCHAR ids from a
      MAP(VARCHAR, DOUBLE) truth (``native_top_grades_sql``, ``top_grades_sql``).
    * ``duckrank_graded_match(rec, truth, k)`` and ``duckrank_graded_match_int`` (truth keyed by
      integers, ``INTEGER_KEYS``): the graded match of a MAP truth (``native_graded_match_sql``,
      ``bound_graded_match_sql``), which the graded metrics read (``inputs="grades"``)."""
    graded = native_graded_match_sql if native else bound_graded_match_sql
    bodies = {
        "duckrank_graded_match(rec, truth, k)": graded("rec", "truth", "k"),
        "duckrank_graded_match_int(rec, truth, k)": graded("rec", "truth", "k", integer_keys=True),
    }
    if native:
        match = native_matched_sql("fn", "rec", "truth", "k")
        bodies |= {
            "duckrank_native_ids(rec, truth)": native_handles_sql("rec", "truth"),
            "duckrank_native_match(fn, rec, truth, k)": match,
            "duckrank_text_match(fn, rec, truth, k)": match,
            "duckrank_text_hits(fn, rec, truth, k)": match,
            "duckrank_text_grades(rec, truth, k)": native_top_grades_sql("rec", "truth", "k"),
        }
    else:
        bodies |= {
            "duckrank_native_ids(rec, truth)": "false",
            "duckrank_native_match(fn, rec, truth, k)": f"CAST(NULL AS {_MATCH_TYPE})",
            "duckrank_text_match(fn, rec, truth, k)": matched_sql("rec", "truth", "k"),
            "duckrank_text_hits(fn, rec, truth, k)": matched_sql(
                "rec", "truth", "k", count_truth=False),
            "duckrank_text_grades(rec, truth, k)": top_grades_sql("rec", "truth", "k"),
        }
    return [f"CREATE OR REPLACE MACRO {signature} AS {body}" for signature, body in bodies.items()]
