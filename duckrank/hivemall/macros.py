"""The ``hivemall`` schema: Hivemall's ranking-evaluation functions with Hivemall's numbers.

Apache Hivemall's evaluation functions are aggregates (UDAFs): each row of (rec, truth [, k])
gives one double and the function returns their mean. This module renders them as DuckDB
aggregate macros in the schema ``hivemall`` (a macro whose body holds an aggregate is an
aggregate), following Apache Hivemall's code exactly (apache/incubator-hivemall at commit
34079778, 2022-09-06; its evaluation classes are the same at v0.5.2 and v0.6.0-rc1) and its user
guide, "Evaluation of ranking problems". Where and why they differ from duckrank's main functions
is in docs/hivemall.md.

Shared per-row rules (Hivemall's list-based ranking UDAFs):

* rec NULL counts as an empty list; truth NULL skips the row; k omitted means len(rec).
* k must be an integer type; k < 0 or a NULL k is an error; K = min(len(rec), k).
* Matching is Hivemall's: every occurrence of a truth item in the top K is a hit (duplicates in
  rec are not removed), a NULL item matches a NULL in truth, |truth| counts duplicates. Hivemall
  never matches items of different types (Hive's int never equals bigint); DuckDB would cast
  them, so differing element types are an error here rather than Hivemall's silent zero.
* The mean adds the row values in double precision and divides once by the number of counted
  rows; a group with no counted row gives 0.0. NaN and infinities spread into the mean.

Dispatch by argument type happens at bind time through macro overloads with typed parameters:
``auc(score DOUBLE, label BIGINT)`` is the classification form and the untyped ``auc(rec,
truth)`` the list form; ``ndcg`` sees struct elements through the ``rec_parts`` chain below.
"""

from __future__ import annotations

from duckrank.render import ordered_list
from duckrank.render.quoting import quote_literal

SCHEMA = "hivemall"

# Helper macros live in the schema too; the prefix keeps them apart from Hivemall's names.
_HELPER = f"{SCHEMA}.duckrank_"

INTEGER_TYPES = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
    "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
)

# Element types of rec that are "primitive" in Hive's sense. Each typed overload below accepts
# every list that casts implicitly to its type (DOUBLE[] takes all numbers and a bare NULL,
# VARCHAR[] takes enums, TIMESTAMP[] takes dates and every timestamp precision). One typed
# overload per macro, chained, because two typed overloads that both accept NULL are ambiguous.
PRIMITIVE_LIST_TYPES = (
    "DOUBLE", "VARCHAR", "BOOLEAN", "TIMESTAMP", "TIMESTAMPTZ", "TIME", "INTERVAL", "UUID", "BLOB",
)


def _rec_parts_chain() -> list[str]:
    """``duckrank_rec_parts_<i>(shape, rec)``: {'items', 'relevances'} of a rec list.

    A primitive list gives its items as they are (relevances NULL). Anything else is taken as
    ndcg's graded form, a list of structs: items become an empty list (so the binary code still
    binds) and relevances the first field of each struct as DOUBLE. ``shape`` is rec again, passed
    once to be matched against the typed parameter (which casts it) and once to keep its type.
    """
    last = len(PRIMITIVE_LIST_TYPES)
    field0 = "struct_extract_at(e, 1)"
    graded = (
        f"{{'items': [], 'relevances': list_transform(rec, lambda e: CASE WHEN {field0} IS NULL "
        "THEN error('ndcg: Field 0 of a struct field is null: ' || coalesce(e::VARCHAR, 'NULL')) "
        f"ELSE {field0}::DOUBLE END)}}"
    )
    statements = [f"CREATE OR REPLACE MACRO {_HELPER}rec_parts_{last}(shape, rec) AS {graded}"]
    for level in reversed(range(last)):
        statements.append(
            f"CREATE OR REPLACE MACRO {_HELPER}rec_parts_{level}"
            f"(shape {PRIMITIVE_LIST_TYPES[level]}[], rec) AS "
            "{'items': rec, 'relevances': NULL::DOUBLE[]},\n"
            f"  (shape, rec) AS {_HELPER}rec_parts_{level + 1}(shape, rec)"
        )
    return statements


def _parts(rec: str) -> str:
    return f"{_HELPER}rec_parts_0({rec}, {rec})"


def _recommend_size(fn: str, k: str) -> str:
    """Hivemall's checks on the third argument (recommendSize), as the BIGINT k."""
    integer_types = ", ".join(f"'{t}'" for t in INTEGER_TYPES)
    return (
        f"(CASE WHEN typeof({k}) NOT IN ({integer_types}) "
        f"THEN error('{fn}: Unexpected type ''' || typeof({k}) || ''' is passed.')"
        f" WHEN {k} IS NULL THEN error('{fn}: the third argument `int recommendSize` is NULL "
        "(Hivemall fails with a NullPointerException)')"
        f" WHEN try_cast({k} AS BIGINT) < 0 THEN error('{fn}: The third argument "
        f"`int recommendSize` must be in greater than or equals to 0: ' || {k}::VARCHAR)"
        f" ELSE try_cast({k} AS BIGINT) END)"
    )


def hit_positions_sql(items: str, truth: str, top: str) -> str:
    """Hivemall's matching (Java equality, by linear search): 1-based positions i <= top whose
    item is in truth.

    Unlike the main matching step (``duckrank.matching``) every occurrence counts (a repeated
    hit is a hit again) and a NULL item is a hit when truth holds a NULL (list_position finds
    NULLs).
    """
    return (
        f"list_filter(range(1, {top} + 1), "
        f"lambda i: list_position({truth}, {items}[i]) IS NOT NULL)"
    )


def _item_type_mismatch(fn: str, items: str, truth: str) -> tuple[str, str]:
    """(condition, error): rec and truth items have different types. An empty or all-NULL
    literal list has item type "NULL" and goes with anything."""
    rec_type, truth_type = f"typeof({items}[1])", f"typeof({truth}[1])"
    return (
        f"{rec_type} <> {truth_type} AND {rec_type} <> '\"NULL\"' "
        f"AND {truth_type} <> '\"NULL\"'",
        f"error('{fn}: rec items are ' || {rec_type} || ' but truth items are ' || {truth_type} "
        "|| '; Hivemall never matches items of different types (every row would score as a "
        "miss): cast one side')",
    )


# Per-row value of each binary measure (Hivemall's BinaryResponsesMeasures). Placeholders: {pos}
# hit positions, {TP} = len(pos), {L} = len(rec), {T} = |truth| with duplicates, {K} = min(L, k),
# {k} raw k.
# DuckDB's / on integers is double division (0 / 0 is NaN, as in Java).
BINARY_MEASURES: dict[str, str] = {
    "recall_at": "CASE WHEN {T} = 0 THEN (CASE WHEN {L} = 0 THEN 1 ELSE 0 END)::DOUBLE "
    "ELSE {TP} / {T} END",
    "precision_at": "CASE WHEN {L} = 0 THEN (CASE WHEN {T} = 0 THEN 1 ELSE 0 END)::DOUBLE "
    "ELSE {TP} / {K} END",
    "average_precision": "CASE WHEN {T} = 0 THEN (CASE WHEN {L} = 0 THEN 1 ELSE 0 END)::DOUBLE "
    "WHEN {TP} = 0 THEN 0::DOUBLE "
    "ELSE list_sum(list_transform({pos}, lambda p, j: j / p)) / {TP} END",
    "mrr": "coalesce(1 / {pos}[1], 0)::DOUBLE",
    "hitrate": "(CASE WHEN {TP} > 0 THEN 1 ELSE 0 END)::DOUBLE",
    # 1 / log2(i + 1) with log2(x) = ln(x) / ln(2), added left to right, as Hivemall does.
    "ndcg": "CASE WHEN least({T}, {K}) = 0 THEN 0::DOUBLE "
    "ELSE coalesce(list_sum(list_transform({pos}, lambda p: 1 / (ln(p + 1) / ln(2)))), 0) "
    "/ list_sum(list_transform(range(1, least({T}, {K}) + 1), "
    "lambda i: 1 / (ln(i + 1) / ln(2)))) END",
    # Pairs on the raw k (Hivemall's ranking-mode auc). The hit with rank j at position p has
    # (K - p) - (TP - j) misses ranked below it; summed over the hits: TP * K - sum(p) - TP *
    # (TP - 1) / 2, an exact integer (TP * (TP - 1) is even).
    "auc": "CASE WHEN {TP} * ({k} - {TP}) = 0 THEN 0.5::DOUBLE "
    "ELSE ({TP} * {K} - list_sum({pos}) - {TP} * ({TP} - 1) // 2) / ({TP} * ({k} - {TP})) END",
}

SUMMARIES = {
    "recall_at": "Returns Recall (Hivemall): mean over rows of hits in the top K / |truth|.",
    "precision_at": "Returns Precision (Hivemall): mean over rows of hits / min(k, len(rec)).",
    "average_precision": "Returns MAP (Hivemall): mean over rows of the sum of precision at each "
    "hit in the top K divided by the number of hits found.",
    "mrr": "Returns MRR (Hivemall): mean over rows of 1 / position of the first hit in the top K.",
    "hitrate": "Returns HitRate (Hivemall): mean over rows of 1 if the top K holds a hit.",
    "ndcg": "Returns nDCG (Hivemall): binary (ideal DCG cut at min(|truth|, len(rec), k)) or "
    "graded when rec holds structs (field 0 = relevance, truth = relevances sorted descending).",
    "auc": "Returns AUC (Hivemall): auc(rec, truth [, k]) pairs (hit, miss) in the top K over "
    "hits * (k - hits); auc(score, label) is the ROC AUC of scores against 0/1 or -1/1 labels.",
}


def _mean(row_value: str) -> str:
    """Hivemall's aggregation (a running sum and row count): sum of the counted rows / their
    number, 0.0 if none.

    A row counts when its truth is not NULL (its value is then never NULL), so the count is
    count(truth): counting the value itself would compute every row's value twice.
    """
    return f"coalesce(sum({row_value}) / count(truth), 0::DOUBLE)"


def _binary_row(fn: str, rec: str, truth: str, k: str | None) -> str:
    """One row's value of a binary measure, NULL when truth is NULL (the row is skipped).

    A formula names the hit positions several times and DuckDB does not always share a
    repeated subexpression (not inside CASE branches): the positions are computed once and bound
    to the lambda parameter ``pos`` (``list_transform([positions], lambda pos: formula)[1]``).
    Measured on 100k rows of 20 items: average_precision 1.6x faster, the others unchanged.
    """
    items = f"coalesce({_parts(rec)}.items, [])"
    cut = f"len({items})" if k is None else _recommend_size(fn, k)
    top = f"least({cut}, len({items}))"
    value = BINARY_MEASURES[fn].format(
        pos="pos", TP="len(pos)", L=f"len({items})", T=f"len({truth})", K=top, k=cut,
    )
    value = f"list_transform([{hit_positions_sql(items, truth, top)}], lambda pos: {value})[1]"
    differs, mismatch_error = _item_type_mismatch(fn, items, truth)
    struct_check = (
        f"WHEN typeof({rec}) LIKE 'STRUCT(%' THEN error('{fn}: The first argument "
        f"`array rankItems` is invalid form: ' || typeof({rec})) "
        if fn != "ndcg"
        else ""
    )
    return (
        f"CASE WHEN {truth} IS NULL THEN NULL {struct_check}"
        f"WHEN {differs} THEN {mismatch_error} ELSE {value} END"
    )


def _graded_dcg(relevances: str, k: str) -> str:
    """Hivemall's graded DCG: sum over i <= min(len, k) of ((2^rel - 1) ln 2) / ln(i + 1)."""
    return (
        f"coalesce(list_sum(list_transform({relevances}[1:{k}], "
        "lambda rel, i: ((pow(2, rel) - 1) * ln(2)) / ln(i + 1))), 0)"
    )


def _graded_ndcg_row(rec: str, truth: str, k: str | None) -> str:
    """Graded nDCG (Hivemall's GradedResponsesMeasures): DCG(rec relevances, k) / DCG(truth as
    given, k), no zero guard."""
    relevances = f"coalesce({_parts(rec)}.relevances, [])"
    cut = f"len({relevances})" if k is None else _recommend_size("ndcg", k)
    grades = f"try_cast({truth} AS DOUBLE[])"
    return (
        f"CASE WHEN {truth} IS NULL THEN NULL "
        f"WHEN list_count({grades}) < len({truth}) THEN error('ndcg: Found null in the ground "
        f"truth: ' || {truth}::VARCHAR) "
        f"ELSE list_transform([{{'rels': {relevances}, 'k': {cut}}}], lambda g: "
        f"{_graded_dcg('g.rels', 'g.k')} / {_graded_dcg(grades, 'g.k')})[1] END"
    )


def _ndcg_row(rec: str, truth: str, k: str | None) -> str:
    return (
        f"CASE WHEN typeof({rec}) LIKE 'STRUCT(%' THEN {_graded_ndcg_row(rec, truth, k)} "
        f"ELSE {_binary_row('ndcg', rec, truth, k)} END"
    )


def _row(fn: str, k: str | None) -> str:
    if fn == "ndcg":
        return _ndcg_row("rec", "truth", k)
    return _binary_row(fn, "rec", "truth", k)


def _classification_auc() -> str:
    """auc(score, label) (Hivemall's classification auc) as an exact Mann-Whitney count.

    Hivemall walks rows in arrival order (callers sort by score descending) and sums ROC
    trapezoids, so equal consecutive scores share half credit. On sorted input that area is the
    number of (positive, negative) pairs with the positive scored higher plus half the tied pairs;
    it is computed here from two sorted label lists, so the order of the rows does not matter.
    With labels sorted by (score, label) ascending, sum(position of each positive) - P(P+1)/2
    counts the negatives at or below each positive's score; with label descending within a
    score, the negatives strictly below. Their mean is the trapezoid area, an exact integer or
    half-integer, divided once by P * N as Hivemall does.
    """
    counted = "score IS NOT NULL AND label IS NOT NULL"
    label01 = "(CASE WHEN label = 1 THEN 1 ELSE 0 END)"
    positives = f"count(*) FILTER (WHERE {counted} AND label = 1)"
    negatives = f"count(*) FILTER (WHERE {counted} AND label IN (0, -1))"

    def rank_sum(label_order: str) -> str:
        labels = f"list({label01} ORDER BY score, {label01} {label_order}) FILTER (WHERE {counted})"
        return f"list_sum(list_transform({labels}, lambda l, i: l * i::HUGEINT))"

    below_or_tied = f"({rank_sum('ASC')} - {positives} * ({positives} + 1) // 2)"
    below = f"({rank_sum('DESC')} - {positives} * ({positives} + 1) // 2)"
    bad_score = f"min(score) FILTER (WHERE {counted} AND NOT (score >= 0 AND score <= 1))"
    bad_label = f"min(label) FILTER (WHERE {counted} AND label NOT IN (0, 1, -1))"
    return (
        f"CASE WHEN {bad_score} IS NOT NULL THEN "
        f"error('auc: score value MUST be in range [0,1]: ' || {bad_score}::VARCHAR) "
        f"WHEN {bad_label} IS NOT NULL THEN "
        f"error('auc: label MUST be 0/1 or -1/1: ' || {bad_label}::VARCHAR) "
        f"WHEN {positives} = 0 OR {negatives} = 0 THEN error('auc: AUC score is not defined "
        "because there is only one class in `label`.') "
        f"ELSE (({below_or_tied} + {below})::DOUBLE / 2) / ({positives} * {negatives}) END"
    )


def _measure_macro(fn: str) -> str:
    overloads = [
        f"(rec, truth) AS {_mean(_row(fn, None))}",
        f"(rec, truth, k) AS {_mean(_row(fn, 'k'))}",
    ]
    if fn == "auc":
        overloads.insert(0, f"(score DOUBLE, label BIGINT) AS {_classification_auc()}")
    return f"CREATE OR REPLACE MACRO {SCHEMA}.{fn}" + ",\n  ".join(overloads)


# --- Hivemall's regression and classification measures (issue 28) ---------------------------
# LogarithmicLossUDAF, MeanAbsoluteErrorUDAF, MeanSquaredErrorUDAF, RootMeanSquaredErrorUDAF,
# R2UDAF, F1ScoreUDAF and FMeasureUDAF of hivemall/evaluation (same commit). The regression
# measures take (predicted, actual) in that order, skip a row where either is NULL, and give 0.0
# for a group without such a row; NaN and infinities spread into the value, as in Java.

_PAIR = "predicted IS NOT NULL AND actual IS NOT NULL"


def _regression(value: str) -> str:
    """0.0 without a counted row (Hivemall's terminate on a null partial), else ``value``."""
    return f"CASE WHEN count(*) FILTER (WHERE {_PAIR}) = 0 THEN 0::DOUBLE ELSE {value} END"


def _squared_sum() -> str:
    return f"sum(pow(predicted::DOUBLE - actual::DOUBLE, 2)) FILTER (WHERE {_PAIR})"


_COUNT = f"count(*) FILTER (WHERE {_PAIR})"
# Hivemall clips the prediction to [1e-15, 1 - 1e-15] and reads any actual as the label weight.
_LOG_TERM = (
    "actual::DOUBLE * ln(least(greatest(predicted::DOUBLE, 1e-15), 1 - 1e-15)) + (1 - "
    "actual::DOUBLE) * ln(1 - least(greatest(predicted::DOUBLE, 1e-15), 1 - 1e-15))"
)
# R2UDAF keeps every actual and sums their squared deviations from the mean in a second pass;
# a total of 0 gives 1.0 whatever the residuals.
_TOTAL = (
    f"list_sum(list_transform(list(actual::DOUBLE) FILTER (WHERE {_PAIR}), "
    f"lambda a: pow(a - avg(actual::DOUBLE) FILTER (WHERE {_PAIR}), 2)))"
)

REGRESSION_MEASURES: dict[str, str] = {
    "logloss": _regression(f"-1 * sum({_LOG_TERM}) FILTER (WHERE {_PAIR}) / {_COUNT}"),
    "mae": _regression(
        f"sum(abs(predicted::DOUBLE - actual::DOUBLE)) FILTER (WHERE {_PAIR}) / {_COUNT}"),
    "mse": _regression(f"{_squared_sum()} / {_COUNT}"),
    "rmse": _regression(f"sqrt({_squared_sum()} / {_COUNT})"),
    "r2": _regression(
        f"CASE WHEN {_TOTAL} = 0 THEN 1::DOUBLE ELSE 1 - {_squared_sum()} / {_TOTAL} END"),
}

REGRESSION_SUMMARIES = {
    "logloss": "Returns the logarithmic loss (Hivemall): logloss(predicted, actual), predicted "
    "clipped to [1e-15, 1 - 1e-15]; 0.0 without rows.",
    "mae": "Returns the mean absolute error (Hivemall): mae(predicted, actual); 0.0 without rows.",
    "mse": "Returns the mean squared error (Hivemall): mse(predicted, actual); 0.0 without rows.",
    "rmse": "Returns the root mean squared error (Hivemall): rmse(predicted, actual); 0.0 "
    "without rows.",
    "r2": "Returns the coefficient of determination (Hivemall): r2(predicted, actual); 1.0 when "
    "the actuals are constant, 0.0 without rows.",
}


def _null_list_error(fn: str, argument: str) -> str:
    return (f"error('{fn}: the argument `{argument}` is NULL (Hivemall fails with a "
            "NullPointerException)')")


def _list_counts(fn: str) -> str:
    """One row of a list form: {tp, actual, predicted}, tp the elements of predicted (each
    occurrence) found in actual (Java's List.contains, NULL found by a NULL)."""
    differs, mismatch = _item_type_mismatch(fn, "predicted", "actual")
    mismatch = mismatch.replace(": rec items are", ": predicted items are").replace(
        "but truth items", "but actual items")
    return (
        f"CASE WHEN actual IS NULL THEN {_null_list_error(fn, 'actual')} "
        f"WHEN predicted IS NULL THEN {_null_list_error(fn, 'predicted')} "
        f"WHEN {differs} THEN {mismatch} ELSE {{'tp': len(list_filter(predicted, lambda p: "
        "list_position(actual, p) IS NOT NULL)), 'actual': len(actual), "
        "'predicted': len(predicted)} END"
    )


def _f1score_macros() -> list[str]:
    """F1ScoreUDAF: f1score(actual, predicted) over integer lists, micro-averaged: the counts
    summed over the rows, then 2 P R / (P + R), -1 when P + R = 0, NULL without rows."""
    row = f"{_HELPER}f1score_row(actual, predicted)"
    tp, actual, predicted = (f"sum({row}.{f})" for f in ("tp", "actual", "predicted"))
    precision = f"(CASE WHEN {predicted} = 0 THEN 0::DOUBLE ELSE {tp} / {predicted} END)"
    recall = f"(CASE WHEN {actual} = 0 THEN 0::DOUBLE ELSE {tp} / {actual} END)"
    return [
        f"CREATE OR REPLACE MACRO {_HELPER}f1score_row(actual, predicted) AS "
        f"{_list_counts('f1score')}",
        f"CREATE OR REPLACE MACRO {SCHEMA}.f1score(actual, predicted) AS CASE WHEN count(*) = 0 "
        f"THEN NULL::DOUBLE WHEN {precision} + {recall} > 0 THEN 2 * {precision} * {recall} / "
        f"({precision} + {recall}) ELSE -1::DOUBLE END",
    ]


def _label(fn: str, value: str, argument: str) -> str:
    """Hivemall's asIntLabel: 1 -> 1, 0 and -1 -> 0, anything else an error."""
    return (
        f"CASE WHEN {value} IS NULL THEN {_null_list_error(fn, argument)} "
        f"WHEN {value} = 1 THEN 1 WHEN {value} IN (0, -1) THEN 0 "
        f"ELSE error('{fn}: Int label must be 1, 0 or -1: ' || {value}::VARCHAR) END"
    )


NO_OPTIONS = "''"


def _fmeasure_body(options: str) -> str:
    """fmeasure's aggregate for the options text ``options`` (a SQL expression): the options
    checked with Hivemall's messages, then the summed counts of the rows read by 'micro' or
    'binary' (``_fmeasure_macros``)."""
    fn = "fmeasure"
    beta_text = rf"regexp_extract({options}, '-beta\s+(\S+)', 1)"
    average_text = rf"regexp_extract({options}, '-average\s+(\S+)', 1)"
    beta = f"coalesce(try_cast(nullif({beta_text}, '') AS DOUBLE), 1.0)"
    average = f"coalesce(nullif({average_text}, ''), 'micro')"
    unknown = rf"trim(regexp_replace({options}, '-(beta|average)\s+\S+', '', 'g'))"
    row = f"{_HELPER}fmeasure_row_0(actual, predicted, {average})"
    tp, actual, predicted = (f"coalesce(sum({row}.{f}), 0)" for f in ("tp", "actual", "predicted"))
    return (
        f"CASE WHEN {options} IS NULL OR {unknown} <> '' THEN error('{fn}: unrecognized "
        f"options: ' || coalesce({options}, 'NULL')) "
        f"WHEN NOT ({beta} > 0) THEN error('{fn}: The third argument `double beta` must be "
        f"greater than 0.0: ' || {beta_text}) "
        f"WHEN {average} = 'macro' THEN error('{fn}: \"-average macro\" is not supported') "
        f"WHEN {average} NOT IN ('micro', 'binary') THEN error('{fn}: The third argument "
        f"`String average` must be one of the {{binary, micro, macro}}: ' || {average}) "
        f"ELSE {_HELPER}fmeasure_value({tp}, {actual}, {predicted}, {beta}, {average}) END"
    )


def _fmeasure_macros() -> list[str]:
    """FMeasureUDAF: fmeasure(actual, predicted [, '-beta b -average micro|binary']) over lists
    (micro only), integer labels or booleans. Each row gives {tp, actual, predicted} counts:
    a list's (as f1score); a label pair's as one-element lists, except that under 'binary' a 0
    label is an empty list. The counts are summed, then 'micro': (1 + b^2) tp / (b^2 actual +
    predicted); 'binary': (1 + b^2) P R / (b^2 P + R); 0.0 when the divisor is not > 0 (a group
    without rows included). The row form is chosen by typed overloads, chained so that a NULL
    literal binds to one of them (BOOLEAN, then BIGINT, then the lists)."""
    fn = "fmeasure"
    labels = (
        f"list_transform([{{'a': {_label(fn, 'actual', 'actual')}, "
        f"'p': {_label(fn, 'predicted', 'predicted')}}}], lambda l: "
        "CASE WHEN average = 'binary' THEN {'tp': (l.a = 1 AND l.p = 1)::INTEGER, "
        "'actual': l.a, 'predicted': l.p} ELSE {'tp': (l.a = l.p)::INTEGER, "
        "'actual': 1, 'predicted': 1} END)[1]"
    )
    lists = (
        f"CASE WHEN average = 'binary' THEN error('{fn}: \"-average binary\" is not "
        f"supported when `predict` is array') ELSE {_list_counts(fn)} END"
    )
    value = (
        "CASE WHEN average = 'micro' THEN CASE WHEN b * b * actual + predicted > 0 THEN "
        "(1 + b * b) * tp / (b * b * actual + predicted) ELSE 0::DOUBLE END ELSE "
        "list_transform([{'p': CASE WHEN predicted = 0 THEN 0::DOUBLE ELSE tp / predicted END, "
        "'r': CASE WHEN actual = 0 THEN 0::DOUBLE ELSE tp / actual END}], lambda x: CASE WHEN "
        "b * b * x.p + x.r > 0 THEN (1 + b * b) * x.p * x.r / (b * b * x.p + x.r) "
        "ELSE 0::DOUBLE END)[1] END"
    )
    return [
        f"CREATE OR REPLACE MACRO {_HELPER}fmeasure_row_1(actual BIGINT, predicted BIGINT, "
        f"average) AS {labels},\n  (actual, predicted, average) AS {lists}",
        f"CREATE OR REPLACE MACRO {_HELPER}fmeasure_row_0(actual BOOLEAN, predicted BOOLEAN, "
        f"average) AS {_HELPER}fmeasure_row_1(actual::INTEGER, predicted::INTEGER, average),\n"
        f"  (actual, predicted, average) AS {_HELPER}fmeasure_row_1(actual, predicted, average)",
        f"CREATE OR REPLACE MACRO {_HELPER}fmeasure_value(tp, actual, predicted, b, average) AS "
        f"{value}",
        f"CREATE OR REPLACE MACRO {SCHEMA}.{fn}(actual, predicted) AS {_fmeasure_body(NO_OPTIONS)},"
        f"\n  (actual, predicted, options) AS {_fmeasure_body('options')}",
    ]


CLASSIFICATION_SUMMARIES = {
    "f1score": "Returns the micro-averaged F1 (Hivemall): f1score(actual, predicted) over "
    "integer lists; -1 when precision + recall = 0.",
    "fmeasure": "Returns the F-measure (Hivemall): fmeasure(actual, predicted [, '-beta 1 "
    "-average micro|binary']) over lists, integer labels (1; 0 or -1) or booleans.",
}


def regression_and_classification_statements() -> list[str]:
    """The statements of Hivemall's regression measures, f1score and fmeasure."""
    statements = []
    for fn, body in REGRESSION_MEASURES.items():
        statements += [
            f"CREATE OR REPLACE MACRO {SCHEMA}.{fn}(predicted, actual) AS {body}",
            f"COMMENT ON MACRO {SCHEMA}.{fn} IS {quote_literal(REGRESSION_SUMMARIES[fn])}",
        ]
    statements += [*_f1score_macros(), *_fmeasure_macros()]
    statements += [f"COMMENT ON MACRO {SCHEMA}.{fn} IS {quote_literal(text)}"
                   for fn, text in CLASSIFICATION_SUMMARIES.items()]
    return statements


# --- Hive and Hivemall collection functions the guide's queries use -------------------------

STRUCT_MAX_FIELDS = 16


def _struct_macro() -> str:
    """Hive's ``struct(v1, ..., vn)``: a struct whose fields are named col1..coln."""
    overloads = []
    for n in range(1, STRUCT_MAX_FIELDS + 1):
        params = ", ".join(f"v{i}" for i in range(1, n + 1))
        fields = ", ".join(f"'col{i}': v{i}" for i in range(1, n + 1))
        overloads.append(f"({params}) AS {{{fields}}}")
    return f"CREATE OR REPLACE MACRO {SCHEMA}.struct" + ",\n  ".join(overloads)


# Hive's collect_set / collect_list skip NULLs and give [] (not NULL) for a group without values.
COLLECT_MACROS = (
    f"CREATE OR REPLACE MACRO {SCHEMA}.collect_set(x) AS "
    "coalesce(list(DISTINCT x) FILTER (WHERE x IS NOT NULL), [])",
    f"CREATE OR REPLACE MACRO {SCHEMA}.collect_list(x) AS "
    "coalesce(list(x) FILTER (WHERE x IS NOT NULL), [])",
)


def _to_ordered_map_macro() -> str:
    """Legacy ``to_ordered_map(key, value [, const boolean reverse | const int k])``.

    A sorted map keyed by ``key`` (NULL keys skipped, NULL values kept): ascending, descending
    with ``true``, the k largest keys descending with k > 0, the |k| smallest ascending with
    k < 0. Rows sharing a key collapse to one entry, which is what the guide warns about. Hivemall
    keeps the value of whichever row arrived last (arrival order is unspecified in Hive); here
    the rows arrive in (key, value) order, so the greatest value wins and the result is the
    same on every run.
    """
    fn = "to_ordered_map"
    pairs = "list_sort(coalesce(list({'k': key, 'v': value}) FILTER (WHERE key IS NOT NULL), []))"
    last_per_key = f"list_filter({pairs}, lambda e, i: i = len({pairs}) OR {pairs}[i + 1].k <> e.k)"
    to_map = "map_from_entries(list_transform({}, lambda e: {{'key': e.k, 'value': e.v}}))"
    option = "any_value(order_or_size)"
    size = f"try_cast({option} AS BIGINT)"
    sized = (
        f"CASE WHEN typeof({option}) = 'BOOLEAN' THEN "
        f"(CASE WHEN {option} THEN list_reverse({last_per_key}) ELSE {last_per_key} END) "
        f"WHEN typeof({option}) NOT IN ({', '.join(repr(t) for t in INTEGER_TYPES)}) THEN "
        f"error('{fn}: The third argument must be boolean or integer type: ' || typeof({option})) "
        f"WHEN {size} = 0 THEN error('{fn}: Map size must be nonzero: 0') "
        f"WHEN {size} > 0 THEN list_reverse({last_per_key})[1:{size}] "
        f"ELSE {last_per_key}[1:-{size}] END"
    )
    return (
        f"CREATE OR REPLACE MACRO {SCHEMA}.{fn}(key, value) AS {to_map.format(last_per_key)},\n"
        f"  (key, value, order_or_size) AS {to_map.format(sized)}"
    )


def sql_statements() -> list[str]:
    """Pure-SQL statements creating the hivemall schema and its macros, in dependency order."""
    statements = [f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}", *_rec_parts_chain()]
    for fn in BINARY_MEASURES:
        statements += [
            _measure_macro(fn),
            f"COMMENT ON MACRO {SCHEMA}.{fn} IS {quote_literal(SUMMARIES[fn])}",
        ]
    statements += [
        ordered_list.to_ordered_list_macro(f"{SCHEMA}.to_ordered_list"),
        _to_ordered_map_macro(),
        *COLLECT_MACROS,
        _struct_macro(),
        *regression_and_classification_statements(),
    ]
    return statements
