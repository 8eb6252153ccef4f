"""Render the metric records into DuckDB SQL macros (no Python at query time).

The statements are pure SQL: they are what ``duckrank.register`` runs, and what
``sql/duckrank.sql`` holds for DuckDB clients without Python (``python -m duckrank.render``
rewrites that file; a test checks it is current). With ``native=True`` the binary metrics match
through duckrank's native step (``duckrank.matching.native``) for the id types it handles and
through the SQL form for the others; the metric's formula is the same text in both. The metric
macros reach the native step through a few helper macros (``native_step_macros``), so that only
those differ between the two registrations.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from duckrank.matching.sql import (
    INTEGER_KEYS,
    bad_grade_at_sql,
    bad_grade_sql,
    bad_list_grade_sql,
    converted_matched_sql,
    cutoff_sql,
    first_field_grades_sql,
    hits_graded_match_sql,
    id_pair_sql,
    matched_sql,
    native_step_macros,
    relevant_grade_sql,
    relevant_keys_sql,
    top_grades_match_sql,
)
from duckrank.matching.subtopics import ideal_gains_sql, subtopics_sql
from duckrank.metrics import METRICS
from duckrank.metrics.inputs import check_engine
from duckrank.metrics.record import Choice, Metric, option_errors_sql
from duckrank.render import (
    beyond_accuracy,
    fusion,
    off_policy,
    ordered_list,
    pointwise,
    protocol,
    stats_sql,
    trec,
)
from duckrank.render.quoting import quote_literal

SQL_FILE = Path(__file__).resolve().parents[2] / "sql" / "duckrank.sql"


# A record's fast path for its option at the default: the option's ``Choice`` and the reading
# of a match by the record's ``default_sql`` (``_default_first``).
DefaultRead = tuple[Choice, Callable[[str], str]]


def _default_first(match: str, read: Callable[[str], str], default: DefaultRead | None) -> str:
    """``read(match)``, preceded, for a record with a ``choice``, by a test of the option at its
    default (folded by DuckDB: it is outside every lambda) that reads ``match`` by the formula
    without the CASE on the option, which DuckDB would evaluate per row inside the lambda. Used
    where ``match`` is small (the native step's call): every copy of a match is bound again
    when a query is planned, and a copy of the SQL form's or the converted match would cost more
    planning (3-19 ms) than the CASE costs 300,000 rows (about 10 ns a row)."""
    if default is None:
        return read(match)
    choice, read_default = default
    return (
        f"CASE WHEN {choice.is_default_sql()} THEN {read_default(match)} "
        f"ELSE {read(match)} END"
    )


def _matched(
    function: str, cut: str, read: Callable[[str], str], count_truth: bool,
    default: DefaultRead | None = None,
) -> str:
    """``read`` (a SQL expression of the row's match) over the matching step that fits the pair
    of id types, chosen by a CASE that DuckDB folds per query (``id_pair_sql``, which also
    raises the error of a refused pair): ids of types DuckDB would compare inexactly, or under a
    collation one side lacks, through ``duckrank_converted_match``; the types the native step
    handles, when it is loaded, through it (with ``default``'s fast path: ``_default_first``);
    the rest through the SQL form."""
    native_match = f"duckrank_native_match({function}, rec, truth, {cut})"
    sql_match = matched_sql("rec", "truth", cut, count_truth=count_truth)
    return (
        f"CASE WHEN duckrank_id_pair({function}, rec, truth) <> 'as is' "
        f"THEN {read(f'duckrank_converted_match({function}, rec, truth, {cut})')} "
        f"WHEN duckrank_native_ids(rec, truth) THEN {_default_first(native_match, read, default)} "
        f"ELSE {read(sql_match)} END"
    )


def _helper_macros(native: bool) -> list[str]:
    matched = _matched("fn", "k", lambda match: match, count_truth=True)
    converted = converted_matched_sql("fn", "rec", "truth", "k", native)
    return [
        *native_step_macros(native),
        *fusion.native_step_macros(native),
        f"CREATE OR REPLACE MACRO duckrank_cutoff(fn, rec, k) AS {cutoff_sql('fn', 'rec', 'k')}",
        f"CREATE OR REPLACE MACRO duckrank_id_pair(fn, rec, truth) AS "
        f"{id_pair_sql('fn', 'rec', 'truth')}",
        f"CREATE OR REPLACE MACRO duckrank_converted_match(fn, rec, truth, k) AS {converted}",
        f"CREATE OR REPLACE MACRO duckrank_matched(fn, rec, truth, k) AS {matched}",
    ]


def _option_checks(metric: Metric) -> list[tuple[str, str]]:
    """(condition, error) pairs for the record's options (``Option.errors_sql``)."""
    return option_errors_sql(metric.name, metric.options)


def _hits_body(metric: Metric, native: bool) -> str:
    """A binary metric's body. The row's match is bound once by a lambda over a one-element
    list, so that the metric's SQL can read the hit positions and n several times. rec and truth
    are not bound the same way: that second lambda level cost 25% (benchmarks/RESULTS.md), so an
    argument that is an expression rather than a column is evaluated again inside the matching
    lambdas (correct, but slower). n is computed only for metrics that read it. Option checks
    come first and outside the lambda, where DuckDB folds them for constant options; the choice
    of matching step (``_matched``) is folded for the column types."""
    name = f"'{metric.name}'"
    cut = f"duckrank_cutoff({name}, rec, k)"

    def reading(sql: str) -> Callable[[str], str]:
        return lambda match: _hits_value(sql, match)

    choice = metric.choice
    per_row = _matched(
        name, cut, reading(metric.sql), count_truth="{n}" in metric.sql,
        default=None if choice is None else (choice, reading(choice.default_sql)),
    )
    checks = _option_checks(metric)
    whens = "".join(f"WHEN {condition} THEN {error} " for condition, error in checks)
    return (
        f"CASE {whens}WHEN rec IS NULL OR truth IS NULL OR {cut} IS NULL THEN NULL "
        f"ELSE {per_row} END"
    )


def _hits_value(sql: str, match: str) -> str:
    """A metric's SQL over one row's match (a STRUCT from ``matched_sql``), bound once."""
    value = sql.format(pos="m.pos", K="m.K", k="m.cut", n="m.n")
    return f"list_transform([{match}], lambda m: {value})[1]"


def _relevant_hits_body(metric: Metric, native: bool) -> str:
    """``inputs="graded_hits"``: a binary metric over MAP truth, rec as text against the items of
    relevant grade (``relevant_keys_sql``), both bound once per row, matched by the native step
    (VARCHAR against VARCHAR, which it always takes) or the SQL form. Negative grades are allowed
    (trec_eval's qrels); NULL, NaN and infinite ones are an error naming the item. The match
    goes through ``duckrank_text_match`` (``native_step_macros``): the native step when loaded
    (VARCHAR against VARCHAR, which it always takes), else the SQL form."""
    name = f"'{metric.name}'"
    row = (
        f"struct_pack(rec := CAST(rec AS VARCHAR[]), truth := "
        f"{relevant_keys_sql('truth', 'min_grade')}, cut := duckrank_cutoff({name}, rec, k))"
    )
    helper = "duckrank_text_match" if "{n}" in metric.sql else "duckrank_text_hits"
    match = f"{helper}({name}, r.rec, r.truth, r.cut)"
    grade, error = bad_grade_sql(name, "truth", negative=True)
    checks = [
        *_option_checks(metric),
        ("rec IS NULL OR truth IS NULL OR duckrank_cutoff(" + name + ", rec, k) IS NULL",
         "NULL"),
        (grade, error),
    ]
    whens = "".join(f"WHEN {condition} THEN {result} " for condition, result in checks)
    per_row = f"list_transform([{row}], lambda r: {_hits_value(metric.sql, match)})[1]"
    return f"CASE {whens}ELSE {per_row} END"


def _judged_body(metric: Metric, native: bool) -> str:
    """A measure over judged truth (``inputs="judged"``), from what its SQL reads: the ranks of
    the relevant, judged non-relevant, judged and negative-grade items of the top K, each from a
    match of rec (as text) against those items of truth (the binary matching step: native,
    hashed, when loaded), and the grades of the top K for the gain measures (the graded step,
    native for VARCHAR and integer ids). The row, the key lists and the ranks are bound once by
    lambdas over one-element lists."""
    name = f"'{metric.name}'"
    row = (
        "struct_pack(rec := rec, text := CAST(rec AS VARCHAR[]), truth := truth, "
        f"entries := map_entries(truth), cut := duckrank_cutoff({name}, rec, k))"
    )
    relevant = relevant_grade_sql("e.value", "min_grade")
    kinds = {  # rank placeholder -> the grades it takes
        "pos": relevant, "nonrel": f"e.value >= 0 AND NOT {relevant}",
        "judged": "e.value >= 0", "pool": "e.value < 0",
    }
    top_len = "least(jrow.cut, len(jrow.rec))"
    gains = "duckrank_text_grades(jrow.text, jrow.truth, jrow.cut)"
    counts = {
        "n": f"len(list_filter(jrow.entries, lambda e: {relevant}))",
        "nn": f"len(list_filter(jrow.entries, lambda e: {kinds['nonrel']}))",
        "ideal": "list_reverse_sort(list_filter(map_values(jrow.truth), lambda x: x > 0))",
        "gains": gains,
    }
    used = {f for f in (*counts, *kinds) if "{" + f + "}" in metric.sql}
    if "min_grade" not in {o.name for o in metric.options} and used & {"n", "nn", "pos", "nonrel"}:
        raise ValueError(f"{metric.name}: reads relevance but has no min_grade option")
    keys = "".join(
        f", {kind}_keys := list_transform(list_filter(jrow.entries, lambda e: {test}), "
        "lambda e: e.key)" for kind, test in kinds.items() if kind in used
    )
    matched = f"struct_pack(K := {top_len}, cut := jrow.cut, text := jrow.text{keys}" + "".join(
        f", {field} := {value}" for field, value in counts.items() if field in used
    ) + ")"

    def ranks(kind: str) -> str:
        match = f"duckrank_text_hits({name}, jmatch.text, jmatch.{kind}_keys, jmatch.cut)"
        return f"list_sort(({match}).pos)"

    ranked = "struct_pack(m := jmatch" + "".join(
        f", {kind} := {ranks(kind)}" for kind in kinds if kind in used
    ) + ")"
    value = metric.sql.format(
        gains="jranks.m.gains", K="jranks.m.K", k="jranks.m.cut", n="jranks.m.n",
        nn="jranks.m.nn", ideal="jranks.m.ideal",
        **{kind: f"jranks.{kind}" for kind in kinds},
    )
    grade, error = bad_grade_sql(name, "jrow.truth", negative=True)
    checks = [
        *_option_checks(metric),
        ("jrow.rec IS NULL OR jrow.truth IS NULL OR jrow.cut IS NULL", "NULL"),
        (grade, error),
    ]
    whens = " ".join(f"WHEN {condition} THEN {result}" for condition, result in checks)
    return (
        f"list_transform([{row}], lambda jrow: CASE {whens} ELSE "
        f"list_transform([{matched}], lambda jmatch: list_transform([{ranked}], "
        f"lambda jranks: {value})[1])[1] END)[1]"
    )


def _body_over_graded_match(
    metric: Metric,
    match: str,
    grade_checks: tuple[tuple[str, str], ...] = (),
    bad_grade: tuple[str, str] | None = None,
    bind_row: bool = True,
    cast_truth: bool = False,
    default_first: bool = False,
) -> str:
    """The body every graded input kind shares: the record's SQL over ``match``, the row's graded
    match (``graded_match_sql``'s struct), bound once per row as ``g`` by a lambda over a
    one-element list, after ``bad_grade``, a (condition, error) over ``g``. DuckDB evaluates an
    expression used inside a lambda again for every element, and the SQL forms read rec and
    truth inside their lambdas: a truth argument written as map(items, grades) was rebuilt for
    every recommended item (70x slower). So with ``bind_row`` the row is bound first, as ``r.rec``,
    ``r.truth`` and ``r.cut`` (the validated cut-off), which ``match`` and ``grade_checks`` then
    read. Without it they read ``rec``, ``truth`` and the cut-off's own expression, for a match
    that reads them outside any lambda (the native step): binding rec and truth costs a copy of
    both per row, half of graded dcg@10 over the native step. ``cast_truth``: truth is a typed
    parameter, which DuckDB casts wherever it is read (a MAP cast costs more than the whole
    native step, even under IS NULL), so the match, NULL for a NULL truth, is tested instead.
    ``default_first``: the record's ``choice`` at its default reads ``match`` without the CASE
    on the option (``_default_first``; for a small ``match``, the native step's call)."""
    name = f"'{metric.name}'"

    def reading(sql: str) -> Callable[[str], str]:
        value = sql.format(
            pos="g.pos", grades="g.grades", ideal="g.ideal", n="g.n", K="g.K", k="g.cut"
        )
        if bad_grade is not None:
            value = f"CASE WHEN {bad_grade[0]} THEN {bad_grade[1]} ELSE {value} END"
        if cast_truth:
            value = f"CASE WHEN g IS NULL THEN NULL ELSE {value} END"
        return lambda match: f"list_transform([{match}], lambda g: {value})[1]"

    choice = metric.choice if default_first else None
    per_row = _default_first(
        match, reading(metric.sql),
        None if choice is None else (choice, reading(choice.default_sql)),
    )
    rec, cut = ("r.rec", "r.cut") if bind_row else ("rec", f"duckrank_cutoff({name}, rec, k)")
    truth = "" if cast_truth else (" OR r.truth IS NULL" if bind_row else " OR truth IS NULL")
    checks = [
        *_option_checks(metric),
        (f"{rec} IS NULL{truth} OR {cut} IS NULL", "NULL"),
        *grade_checks,
    ]
    whens = " ".join(f"WHEN {condition} THEN {result}" for condition, result in checks)
    body = f"CASE {whens} ELSE {per_row} END"
    if not bind_row:
        return body
    row = f"struct_pack(rec := rec, truth := truth, cut := duckrank_cutoff({name}, rec, k))"
    return f"list_transform([{row}], lambda r: {body})[1]"


def _truth_grades_body(metric: Metric, native: bool, integer_keys: bool = False) -> str:
    """``inputs="grades"``: a graded metric over the grades that truth, a MAP item -> grade or a
    LIST (grade 1 each), gives rec's items (``integer_keys``: the MAP(BIGINT, DOUBLE) overload).
    The MAP form matches through the ``duckrank_graded_match`` helpers (``native_step_macros``:
    the native step where it is loaded), which also find a bad grade, n and the ideal list; the
    LIST form through the ``duckrank_matched`` helper (``_helper_macros``), which gives n with
    the hit positions: n counts distinct items as the match compares them (a collation
    included). Either way the text is the same with and without ``native``: a connection gets
    TEMP copies of the helpers only (a TEMP copy of ndcg's overloads was 40 KB of SQL to parse
    on every connect)."""
    name = f"'{metric.name}'"
    cut = f"duckrank_cutoff({name}, rec, k)"
    if metric.truth_type:  # a MAP: item -> grade
        helper = "duckrank_graded_match_int" if integer_keys else "duckrank_graded_match"
        return _body_over_graded_match(
            metric, match=f"{helper}(rec, truth, {cut})",
            bad_grade=bad_grade_at_sql(name, "truth", "g.bad"), bind_row=False, cast_truth=True,
            default_first=True,
        )
    # A LIST: grade 1 for each item; the hit positions and n come from one match of the row,
    # bound once by a lambda over a one-element list.
    match = (
        f"list_transform([duckrank_matched({name}, rec, truth, {cut})], "
        f"lambda m: {hits_graded_match_sql('m')})[1]"
    )
    return _body_over_graded_match(metric, match=match, bind_row=False)


def _given_grades_body(metric: Metric, native: bool) -> str:
    """``inputs="grade_lists"``, Hivemall's struct form: rec and truth are given as grades, so
    there is no matching step and ``native`` changes nothing."""
    top, truth = first_field_grades_sql("r.rec", "r.cut"), "CAST(r.truth AS DOUBLE[])"
    name = f"'{metric.name}'"
    return _body_over_graded_match(
        metric, match=top_grades_match_sql(top, truth, "r.cut"),
        grade_checks=(
            bad_list_grade_sql(name, top, "rec"), bad_list_grade_sql(name, truth, "truth")
        ),
    )


def _subtopics_body(metric: Metric, native: bool) -> str:
    """An intent-aware measure (``inputs="subtopics"``, duckrank.metrics.diversity): the row's
    match (``subtopics_sql``) and cut-off bound once by a lambda over a one-element list; the
    greedy ideal ranking only for the records that read ``{ideal}``. SQL only: the native step
    does not read subtopic qrels."""
    name = f"'{metric.name}'"
    cut = f"duckrank_cutoff({name}, rec, k)"
    value = metric.sql.format(
        N="sx.m.N", R="sx.m.R", pairs="sx.m.pairs", k="sx.k",
        ideal=ideal_gains_sql("sx.m.candidates", "sx.m.N", "alpha"),
    )
    match = subtopics_sql(name, "rec", "truth", "min_grade")
    checks = _option_checks(metric)
    whens = "".join(f"WHEN {condition} THEN {error} " for condition, error in checks)
    return (
        f"CASE {whens}WHEN rec IS NULL OR truth IS NULL OR {cut} IS NULL THEN NULL ELSE "
        f"list_transform([{{'m': {match}, 'k': {cut}}}], lambda sx: {value})[1] END"
    )


# The macro body of each input kind DuckDB runs in pure SQL (``InputKind.engine == "sql"``); a
# kind of that engine without a body here fails at import.
BODIES = {
    "hits": _hits_body, "grades": _truth_grades_body, "grade_lists": _given_grades_body,
    "graded_hits": _relevant_hits_body, "judged": _judged_body, "subtopics": _subtopics_body,
}
check_engine(__name__, "sql", BODIES)

# trec_eval's gm_map and gm_bpref: a per-query value (average_precision, bpref) averaged
# geometrically, each value first raised to trec_eval's floor MIN_GEO_MEAN (1e-5, trec_eval.h) so
# that a 0 does not make the mean 0. An aggregate macro: trec_geomean(bpref(rec, truth)).
GEOMEAN_MACRO = (
    "CREATE OR REPLACE MACRO trec_geomean(x, floor := 1e-5) AS "
    "exp(avg(ln(greatest(x, floor))))"
)


def _overloads(metric: Metric, native: bool) -> list[tuple[str, str]]:
    """(parameters, body) of the record's overload, and for a graded record over MAP truth of a
    second one for integer ids and MAP(BIGINT, DOUBLE) truth (``INTEGER_KEYS``): DuckDB would
    cast such a map to the MAP(VARCHAR, DOUBLE) parameter, a cost of several times the whole
    metric."""
    options = "".join(f", {o.name} := {o.sql_default()}" for o in metric.options)
    truth = f"truth {metric.truth_type}" if metric.truth_type else "truth"
    forms = [(f"rec, {truth}", BODIES[metric.inputs](metric, native))]
    if metric.kind.integer_keys and metric.truth_type:
        rec_type, truth_type = INTEGER_KEYS
        forms.append((
            f"rec {rec_type}, truth {truth_type}",
            _truth_grades_body(metric, native, integer_keys=True),
        ))
    return [(f"{args}, k := 'all'{options}", body) for args, body in forms]


def metric_macro(overloads: list[Metric], native: bool = False) -> str:
    """One CREATE MACRO for all the records that share a name."""
    forms = [form for m in overloads for form in _overloads(m, native)]
    name = overloads[0].name
    return f"CREATE OR REPLACE MACRO {name}" + ",\n  ".join(
        f"({args}) AS {body}" for args, body in forms
    )


def metric_comment(overloads: list[Metric]) -> str:
    """The text ``duckdb_functions()`` shows: each overload's summary, formula and NULL rule."""
    text = " | ".join(
        f"{'truth ' + m.truth_type + ': ' if m.truth_type else ''}{m.summary} {m.formula}. "
        f"{m.undefined}"
        for m in overloads
    )
    return f"COMMENT ON MACRO {overloads[0].name} IS {quote_literal(text)}"


def sql_statements(native: bool = False) -> list[str]:
    """Every statement duckrank runs to register its macros, in order: pure SQL, or with
    ``native`` (the native step must be loaded) matching natively where it can. The two differ
    in the helper macros only (``native_step_macros``, ``fusion.native_step_macros``): a
    connection gets TEMP copies of those, which shadow no function of another schema (the
    hivemall schema's names included)."""
    statements = [
        *_helper_macros(native),
        GEOMEAN_MACRO,
        *(m.strip() for m in (
            *ordered_list.MACROS, *trec.MACROS, *protocol.MACROS, *beyond_accuracy.MACROS,
            *fusion.MACROS, *off_policy.MACROS,
        )),
    ]
    by_name: dict[str, list[Metric]] = {}
    for metric in METRICS:
        if metric.kind.engine == "sql":
            by_name.setdefault(metric.name, []).append(metric)
    for overloads in by_name.values():
        statements += [metric_macro(overloads, native), metric_comment(overloads)]
    # After the metric macros: gauc calls auc and lauc, which DuckDB binds at creation.
    statements += pointwise.MACROS
    return statements


def render_sql_file() -> str:
    header = (
        "-- duckrank: ranking-evaluation macros for DuckDB, no Python needed.\n"
        "-- Generated by `python -m duckrank.render` from duckrank's metric definitions;\n"
        "-- do not edit by hand. Load with `.read sql/duckrank.sql` in the DuckDB shell.\n"
    )
    # The plain-SQL paired t-test goes in the file only: a connection registers the Python
    # aggregate of the same name (duckrank.engines.stats), whose numbers it gives (stats_sql).
    statements = [*sql_statements(), *stats_sql.MACROS]
    return header + "".join(f"\n{s};\n" for s in statements)

