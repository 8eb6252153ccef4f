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

    def text(self) -> str:
        parts = ["a finite number"]
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
        invalid = " OR ".join(tests)
        return f"({option} IS NOT NULL AND ({invalid}))" if self.nullable else f"({invalid})"

    def accepts(self, value: object) -> bool:
        if value is None:
            return self.nullable
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            return False
        number = float(value)
        if not math.isfinite(number):
            return False
        if self.low is not None and (number <= self.low if self.open_low else number < self.low):
            return False
        return self.high is None or not (
            number >= self.high if self.open_high else number > self.high
        )


@dataclass(frozen=True)
class Option:
    """A named SQL parameter of a function (``gain := 'linear'``). A number option with
    ``bounds`` is checked by ``bounded_option_errors_sql`` and ``check_bounded_options``; the
    others (``choices``, or the graded metrics' numbers) by ``duckrank.metrics.graded``."""

    name: str
    default: str | int | float | None
    doc: str
    choices: tuple[str, ...] = ()
    bounds: Bounds | None = None

    def other_value(self) -> str | int | float:
        """A valid value other than the default, for tests that call every option away from
        its default: the last other choice, or the first of a few numbers the bounds accept."""
        if self.choices:
            return [c for c in self.choices if c != self.default][-1]
        start = 0.0 if self.default is None or isinstance(self.default, str) else self.default
        candidates = (start + 1.5, start / 2, 2.0, 0.5, start + 0.05)
        return next(v for v in candidates if v != self.default
                    and (self.bounds is None or self.bounds.accepts(v)))

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


def bounded_option_errors_sql(function: str, options: Iterable[Option]) -> list[tuple[str, str]]:
    """(condition, error) pairs for the options with ``bounds`` whose value is outside them."""
    checks = []
    for option in options:
        if option.bounds is None:
            continue
        message = (
            f"'{function}: {option.name} must be {option.bounds.text()}, got ' "
            f"|| coalesce({option.name}::VARCHAR, 'NULL')"
        )
        checks.append((option.bounds.invalid_sql(option.name), f"error({message})"))
    return checks


def check_bounded_options(function: str, options: Iterable[Option], values: dict) -> None:
    """The kernels' twin of ``bounded_option_errors_sql``: ValueError with the same text."""
    for option in options:
        if option.bounds is not None and not option.bounds.accepts(values[option.name]):
            raise ValueError(f"{function}: {option.name} must be {option.bounds.text()}, got "
                             f"{values[option.name]!r}")


@dataclass(frozen=True)
class Metric:
    """One ranking metric.

    ``inputs`` names the matching step that feeds ``sql`` and ``kernel``:

    * ``"hits"``: binary relevance. Placeholders in ``sql``: ``{pos}`` the 1-based positions of
      the hits in the top K (in no particular order), ``{K}`` = min(k, len(rec)), ``{k}`` the
      cut-off (len(rec) when omitted), ``{n}`` the number of distinct relevant items. ``kernel``
      receives a ``duckrank.matching.arrays.Hits``.
    * ``"grades"``: graded relevance. truth is a MAP(VARCHAR, DOUBLE) of item -> grade when
      ``truth_type`` says so, else a LIST (grade 1 for each item). Placeholders: ``{pos}`` the
      ascending ranks (1-based, within the top K) of the hits with a positive grade (first
      occurrences only), ``{grades}`` their grades in the same order, ``{ideal}`` the
      min(k, n) largest positive grades of truth, largest first, ``{n}`` the number of positive
      grades, ``{K}``, ``{k}`` as above; option parameters are referenced by name. ``kernel``
      receives a ``duckrank.matching.arrays.Grades`` from ``match_grades``.
    * ``"grade_lists"``: the same placeholders and ``Grades``, from grades given directly
      (Hivemall's graded form: rec a list of structs whose first field is the grade, truth a list
      of grades); numpy matching is ``duckrank.matching.arrays.match_grade_lists``.

    * ``"graded_hits"``: ``"hits"`` over a MAP truth (``truth_type``), relevant meaning grade >=
      the ``min_grade`` option (NULL: grade > 0; a negative grade never), derived from a
      ``"hits"`` record (``duckrank.metrics.trec_eval.graded_truth_overload``); ``kernel``
      receives the ``Hits`` of ``duckrank.matching.arrays.match_graded_hits``.
    * ``"judged"``: trec_eval's reading of a MAP truth (``duckrank.matching.sql``, judged
      truth). Placeholders: ``{top}`` the grades of the top K in rec order (NULL: not in truth,
      a repeat or a NULL item), ``{pos}``, ``{nonrel}``, ``{pool}`` the ascending ranks of its
      relevant, judged non-relevant (grade >= 0, not relevant) and negative-grade items, ``{n}``
      and ``{nn}`` the relevant and judged non-relevant items of truth, ``{ideal}`` truth's
      positive grades, largest first (not cut at k), ``{K}``, ``{k}``; records that read
      relevance take the ``min_grade`` option. ``kernel`` receives a
      ``duckrank.matching.arrays.Judged`` from ``match_judged``.

    * ``"preferences"``, ``"system_preferences"``, ``"ranked_grades"``: no pure-SQL form
      (``sql`` is empty); DuckDB runs the kernel as a Python UDF behind a TEMP macro
      (``duckrank.engines.python_udfs``); ``duckrank.matching.preferences`` turns the Arrow
      columns into the kernel's input, for DuckDB and Spark alike. ``preferences``:
      ``(rec, truth)`` with truth a list of (preferred, other) structs, kernel input
      ``duckrank.matching.preferences.PreferenceRows``; ``system_preferences``: the same with the
      system's output a list of preferences too (first argument ``system``); ``ranked_grades``:
      ``(rec, truth MAP)``, kernel input ``duckrank.matching.preferences.RankedGrades``. These
      functions take no ``k``.

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
