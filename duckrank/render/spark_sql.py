"""Spark SQL text from the metric records: the binary metrics as Spark's own expressions.

A ``hits`` record's ``sql`` is DuckDB SQL over the placeholders ``{pos}``, ``{K}``, ``{k}``,
``{n}`` (``duckrank.metrics.record``). ``translate`` rewrites that text, token by token, into
Spark SQL: DuckDB's list functions become Spark's array functions and higher-order functions
(``list_transform`` -> ``transform``, ``list_sum`` -> ``aggregate``, ``x[i]`` ->
``try_element_at``), DuckDB's 1-based lambda indexes become Spark's 0-based ones plus one, and
decimal literals become DOUBLE (Spark reads ``1.0`` as a DECIMAL, whose division rounds). A
record that uses anything outside ``_FUNCTIONS`` raises ``Untranslatable`` and keeps its Arrow
UDF (``duckrank.engines.spark``); nothing is written twice per metric.

``metric_sql`` fills a translated record with Spark's matching step (``placeholders_sql`` below:
the hits of the top K, with the conventions of ``duckrank.matching``), the cut-off (a per-row k
checked by DuckDB's own ``cutoff_sql``, translated, so a bad k fails with DuckDB's text through
``raise_error``), the option values as literals (checked in Python with the kernels' errors; the
CASE on each option is decided here) and the NULL rule. The result is one
Spark SQL expression: it runs in the JVM, in Spark's generated code and higher-order function
interpreter, with no Python worker. Pure text: this module does not import pyspark.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from duckrank.matching.sql import cutoff_sql
from duckrank.metrics import METRICS
from duckrank.metrics.record import Metric, Option, check_options, option_errors_sql


class Untranslatable(ValueError):
    """DuckDB SQL that ``translate`` has no Spark form for."""


# --- tokens --------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s+
    | (?P<string>'(?:[^']|'')*')
    | (?P<placeholder>\{\w+\})
    | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
    | (?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)
    | (?P<operator>::|//|\|\||<>|<=|>=|!=|[-+*/%=<>(),\[\]:])
    """,
    re.VERBOSE,
)


def _tokens(sql: str) -> list[str]:
    tokens, at = [], 0
    while at < len(sql):
        match = _TOKEN.match(sql, at)
        if match is None:
            raise Untranslatable(f"cannot read {sql[at:at + 20]!r} in {sql!r}")
        if not match.group().isspace():
            tokens.append(match.group())
        at = match.end()
    return tokens


# --- functions -----------------------------------------------------------------------------------

def _list_sum(args: list[str]) -> str:
    # DuckDB's list_sum of an empty list is NULL, not 0: start from NULL and add from the first.
    return f"aggregate({args[0]}, CAST(NULL AS DOUBLE), (acc__, x__) -> coalesce(acc__ + x__, x__))"


def _range(args: list[str]) -> str:
    # DuckDB's range(a, b) is [a, b), empty when b <= a; Spark's sequence(a, b) counts down then.
    start, stop = args
    return (f"slice(sequence({start}, greatest({start}, ({stop}) - 1)), 1, "
            f"greatest(({stop}) - ({start}), 0))")


def _renamed(spark_name: str, arity: int | None = None) -> Callable[[list[str]], str]:
    def call(args: list[str]) -> str:
        if arity is not None and len(args) != arity:
            raise Untranslatable(f"{spark_name} with {len(args)} arguments")
        return f"{spark_name}({', '.join(args)})"

    return call


_FUNCTIONS: dict[str, Callable[[list[str]], str]] = {
    "len": _renamed("size", 1),
    "list_transform": _renamed("transform", 2),
    "list_filter": _renamed("filter", 2),
    "list_sort": _renamed("array_sort", 1),
    "list_min": _renamed("array_min", 1),
    "list_max": _renamed("array_max", 1),
    "list_contains": _renamed("array_contains", 2),
    "list_position": _renamed("array_position", 2),
    "list_sum": _list_sum,
    "list_count": lambda args: f"size(array_compact({args[0]}))",
    "range": _range,
    "error": _renamed("raise_error", 1),
    # NULL stays NULL, as DuckDB's isfinite gives it.
    # DuckDB's trunc of a DOUBLE is a DOUBLE; Spark has none for numbers.
    "trunc": lambda args: f"(({args[0]}) - ({args[0]}) % 1)",
    "isfinite": lambda args: f"(NOT isnan({args[0]}) AND abs({args[0]}) < double('inf'))",
    **{name: _renamed(name) for name in (
        "coalesce", "least", "greatest", "log2", "ln", "log", "sqrt", "power", "pow", "abs",
        "floor", "ceil", "exp", "nullif", "try_cast", "isnan",
    )},
}

_TYPES = {"VARCHAR": "STRING", "DOUBLE": "DOUBLE", "BIGINT": "BIGINT", "INTEGER": "INT"}
_KEYWORDS = {"CASE", "WHEN", "THEN", "ELSE", "END", "AND", "OR", "NOT", "IS", "NULL", "IN",
             "BETWEEN", "AS", "TRUE", "FALSE", "LIKE"}


def _is_operand(part: str) -> bool:
    """Whether a ``[`` after this translated piece subscripts it (else it opens a list)."""
    return part[-1] in ")]}" or (
        re.fullmatch(r"[A-Za-z_][\w.]*", part) is not None and part.upper() not in _KEYWORDS
    )


class _Translator:
    """A recursive descent over the tokens: each call consumes one comma-separated argument (an
    expression up to a ``,``, ``)``, ``]``, ``:`` or CASE keyword at its own depth) and returns
    its Spark text. ``indexes`` maps the 1-based index parameter of an enclosing DuckDB lambda to
    its Spark form (Spark's index parameter counts from 0). ``constants`` maps option names to
    their Spark literals: a CASE branch whose condition compares two literals is decided here, so
    that only the chosen option's formula reaches Spark (whose analyzer is slow on big trees)."""

    def __init__(self, tokens: list[str], constants: dict[str, str]) -> None:
        self.tokens = tokens
        self.constants = constants
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token.upper() != expected):
            raise Untranslatable(f"expected {expected!r}, got {token!r}")
        self.at += 1
        return token

    def at_end(self) -> bool:
        token = self.peek()
        return token is None or token in (",", ")", "]", ":") or token.upper() in _CASE_PARTS

    def expression(self, indexes: dict[str, str]) -> str:  # noqa: C901
        parts: list[str] = []
        while not self.at_end():
            token = self.take()
            if token == "lambda":
                self.at -= 1
                parts.append(self.lambda_(indexes))
            elif token.upper() == "CASE":
                parts.append(self.case(indexes))
            elif token == "(":
                parts.append(f"({', '.join(self.items(')', indexes))})")
            elif token == "[":
                items = self.items("]", indexes)
                if parts and _is_operand(parts[-1]):
                    parts.append(self.subscript(parts.pop(), items))
                else:
                    parts.append(f"array({', '.join(items)})")
            elif token == "::":
                type_name = self.take().upper()
                if type_name not in _TYPES:
                    raise Untranslatable(f"cast to {type_name}")
                parts.append(f"::{_TYPES[type_name]}")
            elif token == "//":
                parts.append("div")
            elif token.startswith("'"):
                parts.append(_literal(token[1:-1].replace("''", "'")))
            elif re.fullmatch(r"[\d.]", token[0]):
                parts.append(token + "D" if re.search(r"[.eE]", token) else token)
            elif self.peek() == "(" and re.fullmatch(r"[A-Za-z_]\w*", token) and (
                    token.upper() not in _KEYWORDS):
                self.take("(")
                args = self.items(")", indexes)
                function = _FUNCTIONS.get(token.lower())
                if function is None:
                    raise Untranslatable(f"DuckDB function {token}")
                parts.append(function(args))
            elif token in indexes:
                parts.append(indexes[token])
            elif token in self.constants:
                parts.append(self.constants[token])
            elif token.upper() in _TYPES and parts and parts[-1].upper() == "AS":
                parts.append(_TYPES[token.upper()])
            else:
                parts.append(token)
        return " ".join(parts).replace(" ::", "::")

    def case(self, indexes: dict[str, str]) -> str:
        """A searched CASE, its branches with constant conditions decided."""
        whens: list[tuple[str, str]] = []
        otherwise = None
        while self.peek() is not None and self.peek().upper() == "WHEN":
            self.take("WHEN")
            condition = self.expression(indexes)
            self.take("THEN")
            whens.append((condition, self.expression(indexes)))
        if self.peek() is not None and self.peek().upper() == "ELSE":
            self.take("ELSE")
            otherwise = self.expression(indexes)
        self.take("END")
        kept: list[tuple[str, str]] = []
        for condition, value in whens:
            decided = _constant_condition(condition)
            if decided is True:
                otherwise = value
                break
            if decided is None:
                kept.append((condition, value))
        if not kept:
            return f"({otherwise or 'NULL'})"
        branches = "".join(f"WHEN {c} THEN {v} " for c, v in kept)
        return f"CASE {branches}{'' if otherwise is None else f'ELSE {otherwise} '}END"

    def items(self, close: str, indexes: dict[str, str]) -> list[str]:
        """Comma-separated arguments up to ``close``; a ``:`` inside is a slice bound."""
        items: list[str] = []
        while self.peek() != close:
            item = self.expression(indexes)
            if self.peek() == ":":
                self.take(":")
                item = f"{item} : {self.expression(indexes)}"
            items.append(item)
            if self.peek() == ",":
                self.take(",")
            elif self.peek() != close:
                raise Untranslatable(f"expected {close!r}, got {self.peek()!r}")
        self.take(close)
        return items

    @staticmethod
    def subscript(target: str, items: list[str]) -> str:
        if len(items) != 1:
            raise Untranslatable(f"subscript {items}")
        if " : " in items[0]:
            start, stop = items[0].split(" : ")
            return f"slice({target}, {start}, greatest(({stop}) - ({start}) + 1, 0))"
        # DuckDB's list[0] and out-of-range indexes are NULL; Spark's try_element_at errs on 0
        # and takes an INT (try_cast: an index beyond INT is beyond the list too).
        return f"try_element_at({target}, try_cast(nullif({items[0]}, 0) AS INT))"

    def lambda_(self, indexes: dict[str, str]) -> str:
        self.take("LAMBDA")
        names = [self.take()]
        while self.peek() == ",":
            self.take(",")
            names.append(self.take())
        self.take(":")
        inner = dict(indexes)
        if len(names) == 2:
            inner[names[1]] = f"({names[1]}__ + 1)"
            names[1] += "__"
        elif len(names) != 1:
            raise Untranslatable(f"lambda with parameters {names}")
        body = self.expression(inner)
        params = names[0] if len(names) == 1 else f"({', '.join(names)})"
        return f"{params} -> {body}"


_CASE_PARTS = {"WHEN", "THEN", "ELSE", "END"}
_STRING = r"'((?:[^'\\]|\\.)*)'"


def _constant_condition(condition: str) -> bool | None:
    """The value of a condition that compares two string literals (an option, once its value is
    substituted, against a choice: what ``choose_sql`` writes), else None."""
    match = re.fullmatch(rf"{_STRING}(?:::STRING)? (=|<>) {_STRING}", condition)
    if match is None:
        return None
    return (match.group(1) == match.group(3)) == (match.group(2) == "=")


def translate(sql: str, constants: dict[str, str] | None = None) -> str:
    """Spark SQL for a DuckDB expression of the subset the records use (placeholders such as
    ``{pos}`` are kept), with the names in ``constants`` replaced by the given Spark literals.
    Raises ``Untranslatable`` for anything else."""
    translator = _Translator(_tokens(sql), constants or {})
    text = translator.expression({})
    if translator.peek() is not None:
        raise Untranslatable(f"unexpected {translator.peek()!r} in {sql!r}")
    return text


# --- the matching step in Spark SQL ---------------------------------------------------------------

def placeholders_sql(rec: str, truth: str, cut: str) -> dict[str, str]:
    """Spark SQL for each placeholder of a ``hits`` record, with the conventions of
    ``duckrank.matching``: K = min(k, size(rec)); pos the 1-based positions of the hits in the top
    K, a hit being a non-NULL item of the top K that is in truth, at its first position in rec (a
    repeat is a miss); n the number of distinct non-NULL truth items; and ``hits``, the number of
    hits (what the records' ``len({pos})`` reads, ``metric_sql`` substitutes it). The hits are
    ``array_intersect`` of the top K and truth: one hash of each (O(K + T)), each common item
    once, in Spark's generated code; ``array_position`` gives an item's first position in rec,
    which is within the top K because the item is. Only ``pos`` needs a lambda."""
    top = f"least({cut}, size({rec}))"
    hits = f"array_intersect(array_compact(slice({rec}, 1, {top})), {truth})"
    return {
        "K": top,
        "k": cut,
        "n": f"size(array_compact(array_distinct({truth})))",
        "hits": f"size({hits})",
        "pos": f"transform({hits}, x__ -> array_position({rec}, x__))",
    }


# --- metrics -------------------------------------------------------------------------------------

def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"option value {value!r} is neither a string nor a number")
    return repr(float(value)) + "D" if isinstance(value, float) else str(value)


def _option_checks(metric: Metric) -> list[tuple[str, str]]:
    # The DuckDB macros' checks (duckrank.render.macros._option_checks), translated.
    return option_errors_sql(metric.name, metric.options)


def _check_in_python(metric: Metric, values: dict[str, object]) -> None:
    """The numpy kernels' option checks: a bad constant fails when the expression is built."""
    check_options(metric.name, metric.options, values)


@cache
def _translated(metric: Metric, constants: tuple[tuple[str, str], ...]) -> tuple[str, str]:
    """The record's value over the placeholders, and its option checks as a CASE prefix of
    ``WHEN condition THEN raise_error(...)`` (the checks that do not fold away), for these
    option literals."""
    values = dict(constants)
    value = translate(metric.sql, values)
    whens = ""
    for condition, error in _option_checks(metric):
        condition = translate(condition, values)
        decided = _constant_condition(condition)
        if decided is not False:
            whens += f"WHEN {condition} THEN {translate(error, values)} "
    return value, whens


def _defaults(metric: Metric) -> tuple[tuple[str, str], ...]:
    return tuple((o.name, _literal(o.default)) for o in metric.options)


def spark_sql_records() -> dict[str, Metric]:
    """The ``hits`` records (binary, LIST truth) whose SQL translates, by name."""
    records = {}
    for metric in METRICS:
        if metric.inputs != "hits" or metric.truth_type:
            continue
        try:
            _translated(metric, _defaults(metric))
        except Untranslatable:
            continue
        records[metric.name] = metric
    return records


# A placeholder a formula reads more than this many times is computed once and bound by a lambda
# over a one-element array: ``n`` (a hash set of truth) and the hits (another, with the top K).
_BIND_ABOVE = 1


def _bound(value: str, sql: dict[str, str]) -> str:
    """``value`` (a translated formula) over the placeholders ``sql``, with the hits and ``n``
    bound once each when it reads them more than ``_BIND_ABOVE`` times. Spark evaluates every
    occurrence of an expression inside a CASE branch again: ndcg read ``n`` three times (its
    NULL check and the ideal DCG's table index and fallback) and the hits twice, which made it
    2.2x the CPU of MLlib's ``RankingEvaluator`` (benchmarks/RESULTS.md, Spark)."""
    # len({pos}) needs no positions, only their count (translated: size({pos})).
    value = value.replace("size({pos})", "{hits}")
    names: dict[str, str] = {}
    if value.count("{pos}") + value.count("{hits}") > _BIND_ABOVE:
        names |= {"pos": "pos__", "hits": "size(pos__)"}
    if value.count("{n}") > _BIND_ABOVE:
        names["n"] = "n__"
    text = value.format(**sql | names)
    if "pos" in names:
        text = f"transform(array({sql['pos']}), pos__ -> {text})[0]"
    if "n" in names:
        text = f"transform(array({sql['n']}), n__ -> {text})[0]"
    return text


def metric_sql(name: str, rec: str, truth: str, k: int | str | None = None,
               **options: object) -> str:
    """Spark SQL of the binary metric ``name`` over the Spark SQL expressions ``rec`` and
    ``truth``. ``k``: a positive integer, None or ``'all'`` (the whole of rec), or any other
    string, a Spark SQL expression holding a per-row k (checked per row, as in DuckDB, with
    DuckDB's error text). Options are Python constants (defaults otherwise), checked here with
    the kernels' errors. NULL when rec, truth or k is NULL, or where the record says."""
    records = spark_sql_records()
    if name not in records:
        raise ValueError(f"{name}: no Spark SQL form; metrics with one: {', '.join(records)}")
    metric = records[name]
    known: dict[str, Option] = {o.name: o for o in metric.options}
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"{name}: unknown option {unknown[0]}; options: {', '.join(known)}")
    values = {o: options.get(o, known[o].default) for o in known}
    _check_in_python(metric, values)
    value, checks = _translated(metric, tuple((o, _literal(v)) for o, v in values.items()))
    if k is None or k == "all":
        cut = f"size({rec})"
    elif isinstance(k, bool) or not isinstance(k, int | str):
        raise TypeError(f"{name}: k must be an integer, 'all' or a SQL expression, got {k!r}")
    elif isinstance(k, int):
        if k < 1:
            raise ValueError(f"{name}: k must be a positive integer or 'all', got {k}")
        cut = str(k)
    else:
        cut = "c__"  # a per-row k, validated once per row and bound by a lambda (below)
    per_row = _bound(value, placeholders_sql(rec, truth, cut))
    body = (
        f"CASE {checks}WHEN ({rec}) IS NULL OR ({truth}) IS NULL OR ({cut}) IS NULL THEN NULL "
        f"ELSE {per_row} END"
    )
    if cut != "c__":
        return f"({body})"
    k_sql = translate(cutoff_sql(f"'{name}'", "rec__", "k__"), {"rec__": rec, "k__": f"({k})"})
    return f"transform(array({k_sql}), c__ -> {body})[0]"
