"""One model of a function's options: a metric's (``ndcg(rec, truth, gain := 'linear')``), a
statistical test's (``randomization_test(x, y, trials := 10000)``) and a fusion method's
parameters (``fuse_rrf(runs, k := 60)``).

An option is a name, a default, a doc and a domain: one of ``choices`` (text), or a number within
``Bounds``. Every check of a value is derived from the domain, with the same error text: the SQL
test the macros run (``Bounds.invalid_sql``, ``Option.error_sql``) and its Python twin
(``Bounds.accepts``, ``Option.check``), as ir_measures checks every measure's parameters with
its one ``ParamInfo`` (ir_measures, ``ir_measures/measures/base.py``). The records add only
what is theirs: rules between a metric's options (``duckrank.metrics.record``), a test's
reading of its options' SQL text (``duckrank.stats.record``), a fusion method's per-system
parameters (``duckrank.fusion.record``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass


@dataclass(frozen=True)
class Bounds:
    """The domain of a number option: finite, within [low, high] (an end is open when its flag
    says so; None: no bound there), whole where ``whole``, and NULL only where ``nullable``
    (the default then means something else, as min_grade's NULL means grade > 0)."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    nullable: bool = False
    whole: bool = False  # a whole number (a cut-off or a count), as 2.0 but not 2.5
    # Infinity accepted (NaN never): an estimator's clipping constant, where infinity means
    # no clipping (obp's lambda_).
    finite: bool = True
    # How ``text`` says two ends: "in [0, 1]" (the fusion methods' messages) rather than
    # ">= 0 and <= 1" (the metrics'); each family's messages read as they always did.
    interval: bool = False
    # The domain in the words of messages that do not spell its ends ("a positive integer":
    # the statistical tests'); what is accepted is still decided by the fields above.
    words: str = ""
    in_doc = True  # the metrics' reference adds "Must be <text>." to the option's doc

    def text(self) -> str:
        """What a valid value is, as errors say it: "a finite number >= 0 and <= 1"."""
        if self.words:
            return self.words
        noun = ("a whole number" if self.whole else
                "a finite number" if self.finite else "a number")
        if self.interval and self.low is not None and self.high is not None:
            ends = (f"in {'(' if self.open_low else '['}{self.low:g}, "
                    f"{self.high:g}{')' if self.open_high else ']'}")
            text = f"{noun} {ends}"
        else:
            limits = []
            if self.low is not None:
                limits.append(f"{'>' if self.open_low else '>='} {self.low:g}")
            if self.high is not None:
                limits.append(f"{'<' if self.open_high else '<='} {self.high:g}")
            text = " ".join([noun, *limits[:1]]) + "".join(f" and {s}" for s in limits[1:])
        return text + (" or NULL" if self.nullable else "")

    def tests_sql(self, option: str) -> list[str]:
        """SQL tests of the option's value, one of them true when the value is outside the
        domain (NULL and a non-number included: ``try_cast``); ``nullable`` is not applied."""
        value = f"try_cast({option} AS DOUBLE)"
        tests = [f"{value} IS NULL",
                 f"NOT isfinite({value})" if self.finite else f"isnan({value})"]
        if self.low is not None:
            tests.append(f"{value} {'<=' if self.open_low else '<'} {sql_number(self.low)}")
        if self.high is not None:
            tests.append(f"{value} {'>=' if self.open_high else '>'} {sql_number(self.high)}")
        if self.whole:
            tests.append(f"{value} <> floor({value})")
        return tests

    def invalid_sql(self, option: str) -> str:
        """True when the option's value is outside the domain: the SQL twin of ``accepts``."""
        invalid = " OR ".join(self.tests_sql(option))
        return f"({option} IS NOT NULL AND ({invalid}))" if self.nullable else f"({invalid})"

    def accepts(self, value: object) -> bool:
        if value is None:
            return self.nullable
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        # An integer is whole and finite as it is: compared exactly, never turned into a float
        # (a test's seed may be 2^64 - 1).
        if not isinstance(value, numbers.Integral) and (
                math.isnan(value) or (self.finite and math.isinf(value))
                or (self.whole and value != math.floor(value))):
            return False
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        return self.high is None or not (
            value >= self.high if self.open_high else value > self.high)


@dataclass(frozen=True)
class Option:
    """A named SQL parameter of a function (``gain := 'linear'``) and its domain: one of
    ``choices`` (text), or a number within ``bounds``. An option with neither is not checked
    here (the preference metrics' options: their kernels check them)."""

    name: str
    default: str | int | float | None
    doc: str
    choices: tuple[str, ...] = ()
    bounds: Bounds | None = None
    boolean: bool = False  # true or false, never NULL (a CASE would read NULL as false)

    @property
    def checked(self) -> bool:
        return bool(self.choices) or self.bounds is not None or self.boolean

    def requirement(self) -> str:
        """What a valid value is, as the error says it: "one of 'a', 'b'", "a number > 1"."""
        if self.boolean:
            return "true or false"
        if self.choices:
            return "one of " + ", ".join(f"'{c}'" for c in self.choices)
        assert self.bounds is not None, f"option {self.name} has no domain"
        return self.bounds.text()

    def error_text(self, function: str, got: str) -> str:
        """The error of a value outside the domain, the value shown as ``got``."""
        return f"{function}: {self.name} must be {self.requirement()}, got {got}"

    def error_sql(self, function: str, *, named_by: str | None = None) -> tuple[str, str]:
        """(condition, error): the value outside the domain, and the SQL error that says so.
        ``named_by``: SQL giving the function's name instead of ``function`` (a helper macro's
        parameter that its callers fill with their own names)."""
        text = f"{self.name}::VARCHAR"
        if self.boolean:  # a value that is not a boolean fails DuckDB's own cast, naming it
            invalid = f"{self.name} IS NULL"
        elif self.choices:
            allowed = ", ".join(f"'{c}'" for c in self.choices)
            invalid = f"{text} IS NULL OR {text} NOT IN ({allowed})"
        else:
            invalid = self.bounds.invalid_sql(self.name)
        if named_by is None:
            message = "'" + self.error_text(function, "").replace("'", "''") + "'"
        else:
            message = f"{named_by} || '" + self.error_text("", "").replace("'", "''") + "'"
        return invalid, f"error({message} || coalesce({text}, 'NULL'))"

    def check(self, function: str, value: object) -> None:
        """The Python twin of ``error_sql``: ValueError, same text."""
        if not self.checked:
            return
        ok = (isinstance(value, bool) if self.boolean else
              value in self.choices if self.choices else self.bounds.accepts(value))
        if not ok:
            raise ValueError(self.error_text(function, repr(value)))

    def sql_default(self) -> str:
        if self.default is None:
            return "NULL"
        if isinstance(self.default, str):
            return "'" + self.default.replace("'", "''") + "'"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return sql_number(self.default) if isinstance(self.default, float) else repr(self.default)


def sql_number(value: float) -> str:
    """A number (never a user's text) as SQL that DuckDB and Spark read: infinities included."""
    if math.isinf(value):
        return "'infinity'::DOUBLE" if value > 0 else "'-infinity'::DOUBLE"
    return repr(value)


# Domains shared by families, in the words of their messages and docs.
POSITIVE_INTEGER = Bounds(1, whole=True, words="a positive integer")
NON_NEGATIVE_INTEGER = Bounds(0, whole=True, words="a non-negative integer")
PROPORTION = Bounds(0, 1, open_low=True, open_high=True, words="a number in (0, 1)")
