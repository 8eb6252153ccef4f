"""What a duckrank statistical test *is*: one declarative record per test.

A test is an aggregate over the rows of a group (paired per-user values ``x`` and ``y``, or one
column ``x``). It runs in two steps, both named by its record:

* ``summary``: what SQL computes over the group, natively and on all of DuckDB's threads
  (counts and sums, or the group's values as one list), written once per kind of input
  (``MOMENTS``, ``DIFFERENCES``, ``VALUES`` below);
* ``kernel``: numpy over that summary, for the p-value or interval (no DuckDB here, so the math is
  tested on its own and any engine can call it).

The DuckDB registration (``duckrank.engines.stats``), the SQL signature and the reference part of
docs/compare.md (``duckrank.render.compare``) are derived from the records, and so are the
comparison report's tests (``InReport``: ``duckrank.compare``'s ``test=``, its legend, and
``duckrank compare --test``'s choices and help).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from duckrank.options import Option as OptionModel

_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Option(OptionModel):
    """A test's option (``duckrank.options.Option``: ``trials := 10000``, with its ``bounds``),
    read from the SQL text the aggregate gets."""

    def parse(self, function: str, text: str | None) -> int | float:
        """The option's value from its SQL text (the macros pass ``option::VARCHAR``, so a value
        of any SQL type arrives here and a wrong one is reported as the user wrote it). A whole
        number must be written as one: "2.0" is not a count of trials."""
        value: int | float | None = None
        if text is not None and self.bounds.whole:
            value = int(text) if _INTEGER.fullmatch(text.strip()) else None
        elif text is not None:
            with contextlib.suppress(ValueError):  # not a number: the error below says so
                value = float(text)
        if value is None or not self.bounds.accepts(value):
            raise ValueError(self.error_text(function, "NULL" if text is None else repr(text)))
        return value


@dataclass(frozen=True)
class Field:
    """One field of the STRUCT a test returns."""

    name: str
    sql_type: str  # "BIGINT" or "DOUBLE"; "DOUBLE[]" or "VARCHAR[]": one value per pair
    doc: str


@dataclass(frozen=True)
class Summary:
    """What SQL computes over a group for the kernel: ``aggregates`` are (kernel parameter, SQL
    aggregate over the placeholders ``{x}`` and ``{y}``, SQL type). Pairs with a NULL side are
    left out by every aggregate. ``per_group``: the kernel is called once per group with the
    group's values sorted (a canonical order whatever DuckDB's threads did to ``list()``);
    otherwise once per batch of groups, with one numpy array per aggregate."""

    arguments: tuple[str, ...]
    aggregates: tuple[tuple[str, str, str], ...]
    per_group: bool
    doc: str

    def sql(self, **arguments: str) -> list[str]:
        """The aggregates with the placeholders replaced (``x="x"``, ``y="y"`` in a macro)."""
        return [expression.format(**arguments) for _, expression, _ in self.aggregates]


MOMENTS = Summary(
    arguments=("x", "y"),
    aggregates=(
        ("n", "count({x} - {y})", "BIGINT"),
        ("sum_d", "sum({x} - {y})", "DOUBLE"),
        ("sum_d2", "sum(({x} - {y}) * ({x} - {y}))", "DOUBLE"),
        ("sum_x", "sum({x}) FILTER (WHERE {y} IS NOT NULL)", "DOUBLE"),
        # Its own sum: (sum_x - sum_d) cancels when x is much larger than y.
        ("sum_y", "sum({y}) FILTER (WHERE {x} IS NOT NULL)", "DOUBLE"),
    ),
    per_group=False,
    doc="one-pass sums of the differences d = x - y (count, sum, sum of squares) and the sums of "
    "x and of y over the pairs",
)

DIFFERENCES = Summary(
    arguments=("x", "y"),
    aggregates=(("values", "list({x} - {y}) FILTER (WHERE {x} - {y} IS NOT NULL)", "DOUBLE[]"),),
    per_group=True,
    doc="the differences d = x - y of the group's pairs, as one list",
)

# Many systems at once: every (value, system) row of the group, or (value, system, topic), as one
# list of structs (one aggregate, so the columns stay aligned whatever DuckDB's threads do). The
# labels are any type, compared as text. The kernel gets the values and the labels as codes
# (``LabelledRows``, built by the engine).
LABELLED = Summary(
    arguments=("x", "system"),
    aggregates=(("rows", "list({{'x': {x}, 's': {system}::VARCHAR}}) FILTER (WHERE {x} IS NOT "
                 "NULL AND {system} IS NOT NULL)", "STRUCT(x DOUBLE, s VARCHAR)[]"),),
    per_group=True,
    doc="the group's (x, system) rows with both non-NULL, as one list",
)

BLOCKED = Summary(
    arguments=("x", "system", "topic"),
    aggregates=(("rows", "list({{'x': {x}, 's': {system}::VARCHAR, 't': {topic}::VARCHAR}}) "
                 "FILTER (WHERE {x} IS NOT NULL AND {system} IS NOT NULL AND {topic} IS NOT "
                 "NULL)", "STRUCT(x DOUBLE, s VARCHAR, t VARCHAR)[]"),),
    per_group=True,
    doc="the group's (x, system, topic) rows with all three non-NULL, as one list",
)

# The arguments that are labels (any SQL type), not DOUBLE values.
LABELS = ("system", "topic")


@dataclass(frozen=True)
class LabelledRows:
    """One group's rows for a ``LABELLED`` or ``BLOCKED`` test: ``x`` the values, ``system``
    (and ``topic``) codes 0 .. k - 1 into ``systems`` (and ``topics``), the names sorted; the
    rows in the order DuckDB gathered them."""

    x: np.ndarray
    system: np.ndarray
    systems: tuple[str, ...]
    topic: np.ndarray | None = None
    topics: tuple[str, ...] = ()


VALUES = Summary(
    arguments=("x",),
    aggregates=(("values", "list({x}) FILTER (WHERE {x} IS NOT NULL)", "DOUBLE[]"),),
    per_group=True,
    doc="the group's non-NULL values of x, as one list",
)


@dataclass(frozen=True)
class InReport:
    """How the comparison report runs a paired test: a test whose record has one is a choice of
    ``duckrank.compare``'s ``test=`` and of ``duckrank compare --test`` (``duckrank.stats.
    REPORT_TESTS``). The report calls the test's aggregate over each (metric, pair of systems)
    with its options from the report's (``trials``, ``seed``); the comparisons' ``statistic``
    column shows the test's ``statistic`` field when it has one."""

    alias: str  # the value of test= and --test
    title: str  # the test's name in the report's legend
    help: str  # what --test's help says of it, in brackets after the alias
    # None: the report calls the SQL aggregate. Otherwise the report computes the test itself
    # from DuckDB's count, avg and var_samp of the differences (Welford: exact digits even when
    # the differences are constant, where the aggregate's one-pass sums refuse the whole query)
    # with this function of (n, mean, variance) -> (statistic, p_value), numpy arrays over the
    # comparisons; differences that are all equal then get neither.
    from_variance: Callable[[np.ndarray, np.ndarray, np.ndarray],
                            tuple[np.ndarray, np.ndarray]] | None = None
    # Why differences that are all equal have no p-value, after "every difference is <value>".
    constant: str = ""


@dataclass(frozen=True)
class StatTest:
    """One statistical test or interval, as a SQL aggregate returning a STRUCT.

    ``kernel`` takes the summary's aggregates as keyword arguments (numpy arrays over a batch
    of groups, or one group's sorted ``values``: see ``Summary.per_group``) and the options
    already parsed, and returns a dict with one value (or array) per field, NaN where a field is
    undefined (SQL gets NULL). Text fields are Markdown, for docs/compare.md.
    """

    name: str
    summary_text: str
    summary: Summary
    fields: tuple[Field, ...]
    null_hypothesis: str
    convention: str  # how the p-value (or the interval) is computed
    undefined: str  # NULL and small-n rules
    prefer: str
    source: str
    kernel: Callable[..., dict[str, np.ndarray | float]]
    options: tuple[Option, ...] = ()
    # The kernel takes ``stop``, called between blocks of its work, which raises to end it early
    # (a run of resampling trials that an interrupt must not wait for).
    interruptible: bool = False
    # How the comparison report runs it; None: the report does not offer it as a test.
    report: InReport | None = None

    def __post_init__(self) -> None:
        if self.report is not None and (self.summary.arguments != ("x", "y")
                                        or "p_value" not in self.field_names):
            raise ValueError(f"{self.name}: a test the comparison report runs is paired (x, y) "
                             "and returns a p_value")

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.options)

    @property
    def signature(self) -> str:
        """How the function is called in SQL: ``randomization_test(x, y, trials := 10000, ...)``."""
        options = "".join(f", {o.name} := {o.default!r}" for o in self.options)
        return f"{self.name}({', '.join(self.summary.arguments)}{options})"

    @property
    def returns(self) -> str:
        return "STRUCT(" + ", ".join(f"{f.name} {f.sql_type}" for f in self.fields) + ")"
