"""What a duckrank function *is*: one declarative record per metric.

Every adapter is derived from these records: the DuckDB macros (``duckrank.render.macros``), the
plain-SQL file in ``sql/``, the function reference in the docs, the CLI's ``-m ndcg@10`` parser
and the Spark registration. Adding a metric means adding one record (in a module of
``duckrank.metrics``) and its tests.

A metric is written twice, side by side in its record, over the *same* matched representation of
a row (see ``duckrank.matching``):

* ``sql``: a DuckDB SQL expression, used inside the generated macro. Native list functions scale
  with DuckDB's threads and avoid the Python call cost (see benchmarks/RESULTS.md).
* ``kernel``: a numpy function over a whole Arrow batch, used where there is no DuckDB (Spark,
  ``duckrank.evaluate`` on Arrow data) and as an independent check of the SQL in the tests.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from duckrank.metrics.inputs import INPUT_KINDS, InputKind, input_kind


@dataclass(frozen=True)
class Bounds:
    """The domain of a number option: finite, within [low, high] (an end is open when its flag
    says so; None: no bound there), and NULL only where ``nullable`` (the default then means
    something else, as min_grade's NULL means grade > 0)."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    nullable: bool = False
    whole: bool = False  # a whole number (a cut-off or a count), as 2.0 but not 2.5
    in_doc = True  # the reference adds "Must be <text>." to the option's doc

    def text(self) -> str:
        parts = ["a whole number" if self.whole else "a finite number"]
        if self.low is not None:
            parts.append(f"{'>' if self.open_low else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.open_high else '<='} {self.high:g}")
        text = " ".join(parts[:2]) + ("" if len(parts) < 3 else f" and {parts[2]}")
        return text + (" or NULL" if self.nullable else "")

    def invalid_sql(self, option: str) -> str:
        """True when the option's value is outside the domain (a non-number included)."""
        value = f"try_cast({option} AS DOUBLE)"
        tests = [f"{value} IS NULL", f"NOT isfinite({value})"]
        if self.low is not None:
            tests.append(f"{value} {'<=' if self.open_low else '<'} {self.low!r}")
        if self.high is not None:
            tests.append(f"{value} {'>=' if self.open_high else '>'} {self.high!r}")
        if self.whole:
            tests.append(f"{value} <> floor({value})")
        invalid = " OR ".join(tests)
        return f"({option} IS NOT NULL AND ({invalid}))" if self.nullable else f"({invalid})"

    def accepts(self, value: object) -> bool:
        if value is None:
            return self.nullable
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            return False
        number = float(value)
        if not math.isfinite(number) or (self.whole and number != math.floor(number)):
            return False
        if self.low is not None and (number <= self.low if self.open_low else number < self.low):
            return False
        return self.high is None or not (
            number >= self.high if self.open_high else number > self.high
        )


@dataclass(frozen=True)
class Above:
    """The domain of a number option that must exceed ``low``: finite, > low, never NULL. The
    graded metrics' options (base, max_grade, half_life); it says "a number > low" and writes
    its SQL test without the parentheses of ``Bounds``, as those options always did (their
    messages and the generated SQL are kept byte for byte)."""

    low: int | float
    nullable = False
    in_doc = False  # the options' docs say it already: the reference adds no "Must be"

    def text(self) -> str:
        return f"a number > {self.low}"

    def invalid_sql(self, option: str) -> str:
        value = f"try_cast({option} AS DOUBLE)"
        return f"{value} IS NULL OR NOT isfinite({value}) OR {value} <= {self.low}"

    def accepts(self, value: object) -> bool:
        return (
            isinstance(value, numbers.Real)
            and not isinstance(value, bool)
            and bool(np.isfinite(value))
            and value > self.low
        )


@dataclass(frozen=True)
class Combination:
    """A rule between an option and the others (base applies to discount 'jarvelin' only):
    ``sql(function)`` gives its (condition, error) pair, checked right after the option's own;
    ``check(function, values)`` raises the kernels' ValueError with the same text."""

    sql: Callable[[str], tuple[str, str]]
    check: Callable[[str, dict], None]


@dataclass(frozen=True)
class Option:
    """A named SQL parameter of a function (``gain := 'linear'``) and its domain: one of
    ``choices`` (text), or a number within ``bounds`` (``Bounds``, or ``Above`` for the graded
    metrics' numbers), with ``combinations``: rules between it and the other options. The SQL
    checks (``option_errors_sql``) and the kernels' (``check_options``) are derived from it,
    with the same text. An option with neither choices nor bounds is not checked here (the
    preference metrics' options: their kernels check them)."""

    name: str
    default: str | int | float | None
    doc: str
    choices: tuple[str, ...] = ()
    bounds: Bounds | Above | None = None
    combinations: tuple[Combination, ...] = ()

    @property
    def checked(self) -> bool:
        return bool(self.choices) or self.bounds is not None

    def requirement(self) -> str:
        """What a valid value is, as the error says it: "one of 'a', 'b'", "a number > 1"."""
        if self.choices:
            return "one of " + ", ".join(f"'{c}'" for c in self.choices)
        assert self.bounds is not None, f"option {self.name} has no domain"
        return self.bounds.text()

    def errors_sql(self, function: str) -> list[tuple[str, str]]:
        """(condition, error) pairs: the value outside the domain, then the combinations."""
        if not self.checked:
            return []
        text = f"{self.name}::VARCHAR"
        if self.choices:
            allowed = ", ".join(f"'{c}'" for c in self.choices)
            invalid = f"{text} IS NULL OR {text} NOT IN ({allowed})"
        else:
            invalid = self.bounds.invalid_sql(self.name)
        requirement = self.requirement().replace("'", "''")
        message = (f"'{function}: {self.name} must be {requirement}, got ' "
                   f"|| coalesce({text}, 'NULL')")
        return [(invalid, f"error({message})"), *(c.sql(function) for c in self.combinations)]

    def check(self, function: str, value: object) -> None:
        """The kernels' twin of the first pair of ``errors_sql``: ValueError, same text."""
        if not self.checked:
            return
        ok = value in self.choices if self.choices else self.bounds.accepts(value)
        if not ok:
            raise ValueError(f"{function}: {self.name} must be {self.requirement()}, "
                             f"got {value!r}")

    def sql_default(self) -> str:
        if self.default is None:
            return "NULL"
        if isinstance(self.default, str):
            return "'" + self.default.replace("'", "''") + "'"
        return repr(self.default)


@dataclass(frozen=True)
class Choice:
    """An option whose value a record's ``sql`` chooses a form by, with a CASE on the option
    (``duckrank.metrics.graded.choose_sql``), and ``default_sql``: the same SQL with the
    default's form written in place of that CASE. The macros' native path takes
    ``default_sql`` when the option is at its default (``is_default_sql``, a test DuckDB folds
    outside the per-row lambda; ``duckrank.render.macros._default_first``): inside that lambda
    DuckDB evaluates even a CASE on a constant for every row, which cost the default path
    10-20% (docs/conventions.md)."""

    option: Option
    default_sql: str

    def is_default_sql(self) -> str:
        return f"{self.option.name}::VARCHAR = {self.option.sql_default()}"


def option_errors_sql(function: str, options: Iterable[Option]) -> list[tuple[str, str]]:
    """(condition, error) pairs, in order, for option values outside their domain: what every
    SQL form of a function checks first (the DuckDB macros, trec_eval's formula macros, the
    Spark SQL forms)."""
    return [pair for option in options for pair in option.errors_sql(function)]


def check_options(function: str, options: Iterable[Option], values: dict) -> None:
    """The kernels' twin of ``option_errors_sql``: ValueError with the same text; each value
    against its domain, then the combinations."""
    options = tuple(options)
    for option in options:
        option.check(function, values[option.name])
    for option in options:
        if option.name in values:
            for combination in option.combinations:
                combination.check(function, values)


@dataclass(frozen=True)
class Metric:
    """One ranking metric.

    ``inputs`` names the matching step that feeds ``sql`` and ``kernel``: an input kind of
    ``duckrank.metrics.inputs.INPUT_KINDS`` (``kind``), which says what the step gives the
    record's ``sql`` (its placeholders) and ``kernel``, and how every engine matches it. An
    unknown name is refused when the record is made. The kinds without a pure-SQL form
    (``engine="python"``: ``preferences``, ``system_preferences``, ``ranked_grades``) have an
    empty ``sql``; DuckDB runs their kernel as a Python UDF behind a TEMP macro
    (``duckrank.engines.python_udfs``). These functions take no ``k``.

    A ``kernel`` takes the matched batch and the record's options as keyword arguments.

    ``truth_type`` is the SQL type of the truth parameter ("" = untyped, for LISTs of any id type).
    Records that share a ``name`` become overloads of one macro, told apart by ``truth_type``.
    """

    name: str
    summary: str
    formula: str
    undefined: str
    sql: str
    kernel: Callable[..., np.ndarray] | None
    inputs: str = "hits"
    truth_type: str = ""
    aliases: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    peers: str = ""
    source: str = ""
    cutoff: bool = True  # False: the function takes no k
    first_argument: str = "rec"
    result_type: str = "DOUBLE"  # the SQL type of the value; a VARCHAR kernel returns objects
    choice: Choice | None = None  # the option ``sql`` chooses a form by, if any

    def __post_init__(self) -> None:
        input_kind(self.inputs)  # an unknown kind fails here, at import

    @property
    def kind(self) -> InputKind:
        """The description of ``inputs``: how each engine matches this record."""
        return INPUT_KINDS[self.inputs]

    @property
    def cli_names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def signature(self) -> str:
        """How the function is called in SQL: ``ndcg(rec, truth [, k], gain := 'exponential')``."""
        truth = f"truth {self.truth_type}" if self.truth_type else "truth"
        k = " [, k]" if self.cutoff else ""
        options = "".join(f", {o.name} := {o.sql_default()}" for o in self.options)
        return f"{self.name}({self.first_argument}, {truth}{k}{options})"
