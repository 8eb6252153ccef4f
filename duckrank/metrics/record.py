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

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from duckrank.lazy import LazyModule
from duckrank.metrics.inputs import INPUT_KINDS, InputKind, input_kind
from duckrank.options import Bounds
from duckrank.options import Option as OptionModel

np = LazyModule("numpy")


@dataclass(frozen=True)
class Above(Bounds):
    """The domain of a number option that must exceed ``low``: finite, > low, never NULL. The
    graded metrics' options (base, max_grade, half_life); it says "a number > low" and writes
    its SQL test without the parentheses of ``Bounds``, as those options always did (their
    messages and the generated SQL are kept byte for byte)."""

    open_low: bool = True
    in_doc = False  # the options' docs say it already: the reference adds no "Must be"

    def text(self) -> str:
        return f"a number > {self.low}"

    def invalid_sql(self, option: str) -> str:
        return " OR ".join(self.tests_sql(option))


@dataclass(frozen=True)
class Combination:
    """A rule between an option and the others (base applies to discount 'jarvelin' only):
    ``sql(function)`` gives its (condition, error) pair, checked right after the option's own;
    ``check(function, values)`` raises the kernels' ValueError with the same text."""

    sql: Callable[[str], tuple[str, str]]
    check: Callable[[str, dict], None]


@dataclass(frozen=True)
class Option(OptionModel):
    """A metric's option (``duckrank.options.Option``: its domain, the SQL and kernel checks of
    a value) with ``combinations``: rules between it and the other options."""

    combinations: tuple[Combination, ...] = ()

    def errors_sql(self, function: str) -> list[tuple[str, str]]:
        """(condition, error) pairs: the value outside the domain, then the combinations."""
        if not self.checked:
            return []
        return [self.error_sql(function), *(c.sql(function) for c in self.combinations)]


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
