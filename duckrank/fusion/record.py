"""What a rank-fusion method *is*: one declarative record per method and per score normalisation.

The DuckDB table macros (``duckrank.render.fusion``), docs/fusion.md's tables, ``duckrank.fuse``
and the ``duckrank fuse`` command are derived from these records. A method is written once, as
SQL over the rows of one normalised system list:

* ``value``: what one system gives one item it returned (over the columns listed in
  ``COLUMNS``), and ``absent``: what it gives a candidate it did not return (None: nothing, the
  system does not count for that item);
* ``combine``: the aggregate of those values over the systems, per (query, item).

A parameter's numeric domain is a ``duckrank.options.Bounds``, the model every option of
duckrank reads; ``Parameter`` adds what is fusion's own: the per-system MAPs and a default
written as SQL text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from duckrank.options import Bounds

# The columns a normalisation's or a method's SQL may read, one row per (system, query, item) a
# system returned (or, under the Borda normalisation, every candidate of the query):
COLUMNS = {
    "score": "the system's score for the item (DOUBLE; NULL for a candidate the system did not "
             "return, under the Borda normalisation only)",
    "s_min": "the least score of the system's list for the query",
    "s_max": "the greatest score of that list",
    "s_sum": "the sum of its scores",
    "s_mean": "their mean",
    "s_sd": "their population standard deviation",
    "s_count": "the number of items in the list (after the Borda normalisation: candidates)",
    "position": "the item's 1-based position in the list, ordered by normalised score "
                "descending, then original score descending, then item text descending",
    "candidates": "the number of distinct items any system returned for the query",
    "value": "(methods only) the item's normalised score",
    "weight": "(methods with weights only) the system's weight",
    "trained": "(supervised methods only) what the system learnt: a LIST of DOUBLE by position "
               "or segment, or one DOUBLE",
}

# The score ranx gives an item a system did not return in BayesFuse: log(0.001 / 0.999).
MIN_LOG_ODDS = "ln(0.001 / 0.999)"


@dataclass(frozen=True)
class Parameter:
    """A parameter of a fusion macro: ``k := 60``. ``kind`` is ``'number'`` (a finite number in
    [low, high]), ``'integer'`` (a whole number in [low, high]), ``'per_system'`` (a MAP system
    -> DOUBLE: weights, MAP values) or ``'per_position'`` (a MAP system -> LIST of DOUBLE: the
    probabilities or log-odds a supervised method learnt). ``default`` is its SQL text, None
    for a parameter that must be given (a positional argument of the macro)."""

    name: str
    kind: str
    doc: str
    default: str | None = None
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        assert self.kind in ("number", "integer", "per_system", "per_position"), self.kind

    @property
    def per_system(self) -> bool:
        return self.kind in ("per_system", "per_position")

    @property
    def bounds(self) -> Bounds:
        """The domain of a number parameter, said "in [low, high]" as fusion's messages do."""
        return Bounds(self.low, self.high, whole=self.kind == "integer", interval=True)

    def domain(self) -> str:
        """The domain in words, as errors and docs say it."""
        if self.kind == "per_system":
            return "a MAP from every system name to a finite number"
        if self.kind == "per_position":
            return "a MAP from every system name to a LIST of finite numbers"
        return self.bounds.text()

    def invalid_sql(self) -> str:
        """True when a number parameter is outside its domain (NULL and non-numbers included).
        Per-system parameters are checked against the systems of the input (``render.fusion``)."""
        tests = self.bounds.tests_sql(self.name)
        if self.kind == "integer":  # wholeness before the ends: the macros' SQL kept byte for byte
            tests.insert(2, tests.pop())
        return " OR ".join(tests)

    def accepts(self, value: object) -> bool:
        """The Python form of ``invalid_sql`` for a number (``duckrank.fuse`` checks before SQL)."""
        return self.bounds.accepts(value)


@dataclass(frozen=True)
class Normalisation:
    """A per-(system, query) score normalisation applied before fusing. ``sql`` reads the
    ``COLUMNS`` of the system's list; ``reorders``: the normalised order can differ from the
    original one (the position is then taken after normalising)."""

    name: str  # duckrank's spelling: the value of ``norm :=`` / ``--norm``
    ranx: str  # ranx's spelling of the same normalisation (``ranx.fuse(norm=...)``)
    title: str
    formula: str
    sql: str
    notes: str = ""
    reorders: bool = False
    adds_candidates: bool = False  # Borda: every system gets a score for every candidate
    # SQL over the list's statistics that holds where ``sql`` is a number: scores near the
    # double's limits overflow a sum or a spread, and a list where it fails is an error (both
    # forms of the macros would otherwise give NaN, infinities or a silent 0).
    defined: str = ""


@dataclass(frozen=True)
class FusionMethod:
    """One fusion method (docs/fusion.md): its macro ``fuse_<name>`` returns (query, item,
    score, rank) over the candidates of every query."""

    name: str  # the method's name in ranx (``ranx.fuse(method=...)``) and duckrank
    title: str  # as papers spell it
    summary: str
    formula: str
    parameters: tuple[Parameter, ...] = ()
    value: str = "value"
    absent: str | None = None  # per (system, query) SQL, over s_count, candidates, weight, trained
    combine: str = "sum(value)"
    missing: str = "an item a system did not return gets nothing from that system"
    form: str = "combine"  # or "pairwise" (Condorcet: majority vote between every pair)
    supervised: bool = False  # needs values learnt from qrels (``duckrank.fuse(..., qrels=)``)
    source: str = ""
    ranx_notes: str = "same fused scores"
    trained: str | None = None  # the per-system parameter a supervised method learns

    sql_name: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sql_name", f"fuse_{self.name}")
        assert self.form in ("combine", "pairwise"), self.form

    @property
    def weighted(self) -> bool:
        return any(p.name == "weights" for p in self.parameters)

    def parameter(self, name: str) -> Parameter:
        for parameter in self.parameters:
            if parameter.name == name:
                return parameter
        raise KeyError(name)

    @property
    def required(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.default is None)

    @property
    def optional(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.default is not None)
