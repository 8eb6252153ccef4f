"""Score a run against judgments: the one implementation behind ``duckrank.evaluate`` and the
``duckrank evaluate`` command line.

A *run* is a long table with one row per (query, item, score); *qrels* (judgments) one row per
(query, item, grade). A query is whatever the lists are ranked for: a search query or a user.
Per query, the run becomes a ranked list with ``to_ordered_list(item, score, '-reverse')`` (every
tied item kept; ties in score broken by item, descending, which is trec_eval's order) and the
qrels become the truth, then each requested metric is the SQL function of the same name. When
every metric has a cut-off and the lists are long, only each query's top K is ranked (the same
list cut at the largest cut-off; see ``_ranked_sql``).

Metric requests are written ``name[(option=value, ...)][@k]`` (``ndcg@10``, ``map@100``,
``ndcg(gain=linear)@10``); a list or range of cut-offs is one request per cut-off
(``ndcg@1,5,10``, ``recall@1..100``, ``expand_metric``). Names, aliases, options and their
choices come from the metric records (``duckrank.metrics``), so every metric in the registry
is available without code here; two options belong to the evaluation itself:
``relevance=binary|graded`` (which reading of graded qrels) and ``min_grade=G`` (relevant means
grade >= G in the binary reading). Beyond-accuracy requests (``arp@10``, ``catalog_coverage@10``;
docs/beyond-accuracy.md) are computed by ``duckrank.engines.beyond_accuracy.beyond_values`` from
the same run and qrels and the side tables given (``SideInputs``), and added as columns.

Memory stays flat in the number of queries: the query ids are split into ranges of about
``ROWS_PER_BUCKET`` input rows (from a sample of the run; a query ranked by its top K counts as
``TOP_K_ROW_WEIGHT`` * K rows) and the lists are built, matched and summed one range at a time;
the run and qrels are scanned once per range instead of being held whole (Parquet sorted by query
skips the row groups outside a range).

Everything the caller supplies (paths, column names, metric names, k, option values) reaches SQL
as a query parameter, a quoted identifier, or a name checked against the registry: never as SQL
text.
"""

from __future__ import annotations

import math
import re
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from duckrank.engines.beyond_accuracy import (
    SIDE_TABLES,
    Request,
    RunColumns,
    beyond_values,
    parse_request,
)
from duckrank.files.runs import (
    QUERY_COLUMNS,
    Columns,
    file_format,
    is_number_type,
    literal_patterns,
    read_file,
)
from duckrank.files.trec import file_paths
from duckrank.matching.sql import INTEGER_TYPES, NATIVE_SIGNED_TYPES
from duckrank.metrics import METRICS, by_name
from duckrank.metrics.record import Metric, Option
from duckrank.render.beyond_accuracy import RECORDS as BEYOND_RECORDS
from duckrank.render.quoting import quote_identifier
from duckrank.render.spelling import PYTHON, Spelling

if TYPE_CHECKING:
    import pandas
    import polars

COUNT_COLUMNS = ("scored", "unjudged", "unranked", "dropped")

# How ids are compared: as they are typed (the kinds must match), or both sides as text.
ID_MODES = ("typed", "varchar")

# The columns each file can name, role -> what it holds.
RUN_ROLES = ("query", "item", "score", "rank")
QRELS_ROLES = ("query", "item", "grade")

# Input rows (run + qrels) per range of query ids: each range's lists are built and scored in one
# query, so this bounds the memory. At 3,000,000 the peak is about 310 to 360 MB from 1,000,000
# to 10,000,000 users of 13 rows each, where DuckDB's plain scan of the same Parquet file takes
# 190 MB (benchmarks/bench_long_memory.py); half as many rows take 60 MB less and one more scan
# of the inputs per range.
ROWS_PER_BUCKET = 3_000_000
# Run rows sampled to place the range boundaries (a reservoir: constant memory).
SAMPLE_ROWS = 20_000


class DroppedRows(UserWarning):
    """Rows of the run or qrels were left out (a NULL query, item, score or rank)."""


class UnrankedQueries(UserWarning):
    """Judged queries have no list in the run: scored as empty lists (duckrank's convention) or
    left out of the means (trec_eval's)."""


class ShortLists(UserWarning):
    """Lists shorter than a precision request's k: precision_at divided by the items returned."""


class UngradedQrels(UserWarning):
    """Qrels without a grade column (every row relevant) have number columns that are not read."""


# --- metric requests ------------------------------------------------------------------------------

_REQUEST = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?:\((?P<options>[^()]*)\))?\s*(?:@\s*(?P<k>\S+))?\s*$"
)


# Input kinds whose untyped truth is a LIST of relevant item ids (other untyped truths are
# preferences or Hivemall's lists of grades, which qrels cannot give).
LIST_TRUTH_INPUTS = ("hits", "grades")

# Options of the evaluation, not of a SQL function: how graded qrels are read.
RELEVANCE = Option(
    "relevance", "", "binary: the items of grade > 0 (or >= min_grade) as a LIST; graded: the "
    "grades as a MAP item -> grade", choices=("binary", "graded"),
)
# (Its default only marks it as a number: without min_grade, relevant means grade > 0.)
MIN_GRADE = Option("min_grade", 1, "relevant means grade >= min_grade (binary reading)")

# Options that change a graded value but not a binary one (2^1 - 1 = 1): a label names them when
# graded qrels are read as grades, so that ndcg@10 over graded qrels cannot pass for the binary
# ndcg@10 or for trec_eval's linear-gain one.
GRADED_LABEL_OPTIONS = ("gain",)
# Options whose default is a guess about the data, named in every label that leaves them out:
# err's max_grade (4, Chapelle's 0..4 scale) scales every value, binary ones too (a hit is worth
# (2^1 - 1) / 2^4), whatever grades the qrels hold.
LABEL_OPTIONS = ("max_grade",)


@dataclass(frozen=True)
class Convention:
    """How an evaluation reads what the metrics leave open (docs/trec_eval.md sets duckrank's
    and trec_eval's side by side).

    ``options``: option values per function where the request sets none; ``undefined_as_zero``:
    a judged query whose value is undefined (NULL: no relevant item, an empty list) scores 0 and
    counts in the mean, instead of being left out of it; ``float_scores``: scores compared as
    single-precision floats (trec_eval keeps a C float: scores equal in their first 7 digits
    tie, then the item id decides); ``relevant``: the binary reading's test of a grade ``g``
    without ``min_grade``; ``full_ideal``: functions whose ideal ranking, without a cut-off,
    holds every relevant item (trec_eval's ndcg) rather than as many as the list is long;
    ``score_unranked``: a judged query the run has no list for is scored as an empty list and
    counts in the means (a recommender that returned nothing for a user failed that user, as
    RecTools and ``compare`` count it), instead of being left out of them (trec_eval without
    ``-c``)."""

    name: str
    options: Mapping[str, Mapping[str, str]]
    undefined_as_zero: bool = False
    float_scores: bool = False
    relevant: str = "g > 0"
    full_ideal: tuple[str, ...] = ()
    score_unranked: bool = True


CONVENTIONS = {
    "duckrank": Convention("duckrank", {}),
    "trec_eval": Convention(
        "trec_eval",
        {"precision_at": {"denominator": "k"}, "ndcg": {"gain": "linear"},
         "dcg": {"gain": "linear"}},
        undefined_as_zero=True, float_scores=True, relevant="g >= 1", full_ideal=("ndcg",),
        score_unranked=False,
    ),
}
# C's FLT_MAX: a larger score is an infinite float (DuckDB's cast to FLOAT refuses it).
FLT_MAX = 3.4028234663852886e38


def convention_named(name: str, spelling: Spelling = PYTHON) -> Convention:
    """The convention called ``name``; an unknown name is an error naming the argument."""
    if name not in CONVENTIONS:
        raise ValueError(f"{spelling.argument('convention', name)}: the conventions are "
                         f"{', '.join(CONVENTIONS)}")
    return CONVENTIONS[name]


def float_score_sql(score: str) -> str:
    """``score`` as trec_eval keeps it: a C float (beyond FLT_MAX, an infinite one)."""
    return (f"CASE WHEN {score} > {FLT_MAX!r} THEN 'inf'::FLOAT "
            f"WHEN {score} < -{FLT_MAX!r} THEN '-inf'::FLOAT ELSE CAST({score} AS FLOAT) END")


def _truth_form(metric: Metric) -> str | None:
    """'list' for a LIST of relevant item ids, 'map' for a MAP item -> grade, None for a truth
    that qrels cannot give."""
    if metric.truth_type == "" and metric.inputs in LIST_TRUTH_INPUTS:
        return "list"
    if metric.truth_type.upper().startswith("MAP"):
        return "map"
    return None


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _option_text(value: str | int | float) -> str:
    return value if isinstance(value, str) else _number_text(value)


@dataclass(frozen=True)
class MetricRequest:
    """One metric to compute. ``label`` is the request as written; the output column's name is
    ``column(graded)``, which adds what graded qrels made of it."""

    label: str
    name: str
    k: int | None
    options: tuple[tuple[str, str | int | float], ...]
    overloads: tuple[Metric, ...]
    relevance: str | None = None
    min_grade: int | float | None = None
    written_name: str = ""
    written_options: tuple[tuple[str, str], ...] = ()
    written_k: str | None = None

    def forms(self) -> set[str]:
        """The truth forms of the overloads that take the options given."""
        given = {name for name, _ in self.options}
        return {
            form for m in self.overloads
            if given <= {o.name for o in m.options} and (form := _truth_form(m)) is not None
        }

    def truth_form(self, graded: bool) -> str:
        """Which truth to pass: 'map' (item -> grade) or 'list' (the relevant items). Graded
        qrels go as grades to the functions that take them unless the binary reading is asked
        for (``relevance=binary`` or ``min_grade``); binary qrels and binary-only functions get
        the list."""
        forms = self.forms()
        if self.relevance == "graded":
            wanted = "map"
        elif self.relevance == "binary" or self.min_grade is not None:
            wanted = "list"
        else:
            wanted = "map" if "map" in forms and (graded or "list" not in forms) else "list"
        if wanted not in forms:
            reading = "graded" if wanted == "map" else "binary"
            raise ValueError(
                f"metric {self.label!r}: no form of {self.name} takes these options with a "
                f"{reading} truth"
            )
        return wanted

    def with_defaults(self, defaults: Mapping[str, str]) -> MetricRequest:
        """The request with ``defaults`` (option -> value) for the options it does not set and
        its function takes."""
        known = {o.name: o for m in self.overloads for o in m.options}
        given = {name for name, _ in self.options}
        added = tuple((name, _option_value(self.label, known[name], value))
                      for name, value in defaults.items() if name in known and name not in given)
        return replace(self, options=self.options + added) if added else self

    def rewritten(self, **changes: str) -> str:
        """The request as written with options added or replaced (``max_grade='5'``)."""
        options = dict(self.written_options) | changes
        text = self.written_name
        if options:
            text += "(" + ",".join(f"{n}={v}" for n, v in options.items()) + ")"
        return text + (f"@{self.written_k}" if self.written_k is not None else "")

    def column(self, graded: bool) -> str:
        """The output column's name: the request as written, plus the values in force of the
        options in ``LABEL_OPTIONS`` and, when graded qrels are read as grades, of those in
        ``GRADED_LABEL_OPTIONS`` (``ndcg@10`` -> ``ndcg(gain=exponential)@10``, ``err@5`` ->
        ``err(max_grade=4)@5``)."""
        form = self.truth_form(graded)
        shown = {*LABEL_OPTIONS, *(GRADED_LABEL_OPTIONS if graded and form == "map" else ())}
        # The value in force: the request's, a convention's, or the function's default.
        written, values = dict(self.written_options), dict(self.options)
        added = {
            o.name: _option_text(values.get(o.name, o.default))
            for m in self.overloads if _truth_form(m) == form
            for o in m.options if o.name in shown and o.name not in written
        }
        return self.rewritten(**added) if added else self.label

    def reads_gains(self) -> bool:
        """Whether its MAP truth goes to a gain function (``inputs='grades'``: ndcg, dcg, err,
        half_life_utility), which refuses a negative grade; the other MAP functions read the
        grades as given (trec_eval's measures: a negative grade is in the pool but unjudged)."""
        return any(m.inputs == "grades" for m in self.overloads if _truth_form(m) == "map")


def known_metric_names() -> list[str]:
    """Every name and alias of the metrics that a run and qrels can feed, sorted."""
    usable = {m.name for m in METRICS if _truth_form(m) is not None}
    return sorted({n for m in METRICS if m.name in usable for n in m.cli_names})


def _option_value(label: str, option: Option, text: str) -> str | int | float:
    text = text.strip()
    if option.choices:
        if text not in option.choices:
            raise ValueError(
                f"metric {label!r}: option {option.name} must be one of "
                f"{', '.join(option.choices)}, got {text!r}"
            )
        return text
    if isinstance(option.default, str):
        return text
    try:
        value = int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
    except ValueError:
        raise ValueError(
            f"metric {label!r}: option {option.name} must be a number, got {text!r}"
        ) from None
    if not math.isfinite(value):
        raise ValueError(f"metric {label!r}: option {option.name} must be a finite number, got "
                         f"{text!r}")
    return value


# The most cut-offs one request may expand to (``recall@1..1000`` is 1,000 columns).
MAX_CUTOFFS = 10_000
_CUTOFF_ITEM = re.compile(r"^(?P<low>\d+)(?:\.\.(?P<high>\d+))?$")


def expand_metric(text: str) -> list[str]:
    """One request per cut-off: ``ndcg@1,5,10`` -> ``ndcg@1``, ``ndcg@5``, ``ndcg@10`` and
    ``recall@1..100`` -> ``recall@1`` ... ``recall@100`` (items combine: ``P@1,5..7``), in the
    order written; options are kept as written (``ndcg(gain=linear)@5,10``). Any other request
    is returned as it is."""
    match = _REQUEST.match(text)
    if match is None or match["k"] is None or not re.search(r",|\.\.", match["k"]):
        return [text]
    prefix = text[:match.start("k")]
    cutoffs: list[int] = []
    seen: set[int] = set()
    for item in match["k"].split(","):
        found = _CUTOFF_ITEM.match(item)
        if found is None:
            raise ValueError(
                f"metric {text!r}: cannot read the cut-off {item!r}; write a list of positive "
                "integers and ranges, e.g. ndcg@1,5,10 or recall@1..100"
            )
        low = int(found["low"])
        high = low if found["high"] is None else int(found["high"])
        if low < 1 or high < low:
            raise ValueError(
                f"metric {text!r}: the cut-off {item!r} is not a positive integer or a range "
                "low..high with 1 <= low <= high"
            )
        if len(cutoffs) + high - low + 1 > MAX_CUTOFFS:
            raise ValueError(f"metric {text!r}: more than {MAX_CUTOFFS:,} cut-offs")
        for k in range(low, high + 1):
            if k in seen:
                raise ValueError(f"metric {text!r}: the cut-off {k} is given twice")
            seen.add(k)
            cutoffs.append(k)
    return [f"{prefix}{k}" for k in cutoffs]


def parse_metrics(texts: Sequence[str],
                  convention: Convention = CONVENTIONS["duckrank"]) -> list[MetricRequest]:
    """``parse_metric`` of every request after ``expand_metric``, repeated requests once, with
    the ``convention``'s option values where a request sets none."""
    requests = (parse_metric(one) for text in texts for one in expand_metric(text))
    return list({r.label: r.with_defaults(convention.options.get(r.name, {}))
                 for r in requests}.values())


_BEYOND_NAMES = frozenset(m.name for m in BEYOND_RECORDS)


def is_beyond(text: str) -> bool:
    """Whether ``text`` requests a beyond-accuracy metric (``arp@10``, ``rbo(p=0.8)@10``: a name
    of ``docs/beyond-accuracy.md``), which ``beyond_values`` computes instead of a SQL function
    over (rec, truth)."""
    match = _REQUEST.match(text)
    return match is not None and match["name"].lower() in _BEYOND_NAMES


def split_metrics(texts: Sequence[str], convention: Convention = CONVENTIONS["duckrank"]
                  ) -> tuple[list[MetricRequest], list[Request]]:
    """The accuracy requests (``parse_metrics``) and the beyond-accuracy ones
    (``duckrank.engines.beyond_accuracy.parse_request``), each after ``expand_metric``
    (``arp@5,10`` is two requests) and once."""
    expanded = [one for text in texts for one in expand_metric(text)]
    beyond = {text.strip(): parse_request(text) for text in expanded if is_beyond(text)}
    accuracy = parse_metrics([text for text in expanded if not is_beyond(text)], convention)
    return accuracy, list(beyond.values())


# What an evaluation calls besides its metrics: the ranking and the TREC file readers.
_EVALUATION_FUNCTIONS = ("to_ordered_list", "read_trec_run", "read_trec_qrels")


def needed_functions(metrics: Sequence[str], convention: str = "duckrank") -> list[str] | None:
    """The duckrank SQL functions that evaluating ``metrics`` calls, for ``connect(functions=...)``
    (which registers them and their helpers in a tenth of the time of every function); None when
    a request or the convention does not parse: then every function is registered and the
    evaluation names the error."""
    try:
        accuracy, beyond = split_metrics(metrics, convention_named(convention))
    except ValueError:
        return None
    names = [*(request.name for request in accuracy), *(request.metric.name for request in beyond)]
    return [*_EVALUATION_FUNCTIONS, *dict.fromkeys(names)]


def parse_metric(text: str) -> MetricRequest:
    """Parse ``name[(option=value, ...)][@k]`` against the metric records."""
    match = _REQUEST.match(text)
    if match is None:
        raise ValueError(
            f"cannot read metric {text!r}: write name[@k] or name(option=value, ...)[@k], "
            "e.g. ndcg@10 or ndcg(gain=linear)@10"
        )
    try:
        record = by_name(match["name"])
    except KeyError:
        raise ValueError(
            f"unknown metric {match['name']!r}; known metrics: {', '.join(known_metric_names())}; "
            f"beyond-accuracy metrics (docs/beyond-accuracy.md): "
            f"{', '.join(sorted(_BEYOND_NAMES))}"
        ) from None
    overloads = tuple(m for m in METRICS if m.name == record.name)
    forms = {_truth_form(m) for m in overloads} - {None}
    if not forms:
        kinds = ", ".join(sorted({m.inputs for m in overloads}))
        raise ValueError(
            f"metric {text!r}: {record.name} cannot be computed from a run and qrels (it takes "
            f"{kinds}, not a list or map of judged items)"
        )

    k = None
    if match["k"] is not None and not all(m.cutoff for m in overloads):
        raise ValueError(f"metric {text!r}: {record.name} takes no cut-off (@k)")
    if match["k"] is not None and match["k"].lower() != "all":
        if not re.fullmatch(r"\d+", match["k"]) or int(match["k"]) < 1:
            raise ValueError(
                f"metric {text!r}: the cut-off after @ must be a positive integer or 'all', "
                f"got {match['k']!r}"
            )
        k = int(match["k"])

    # relevance picks between two readings, so only functions with both forms take it;
    # min_grade applies wherever there is a binary reading.
    known = {o.name: o for m in overloads for o in m.options}
    if forms == {"list", "map"}:
        known["relevance"] = RELEVANCE
    if "list" in forms:
        known["min_grade"] = MIN_GRADE
    written: dict[str, str] = {}
    values: dict[str, str | int | float] = {}
    for assignment in filter(str.strip, (match["options"] or "").split(",")):
        name, equals, value = assignment.partition("=")
        name = name.strip().lower()
        if not equals or name not in known:
            takes = ", ".join(sorted(known)) or "none"
            raise ValueError(
                f"metric {text!r}: unknown option {assignment.strip()!r}; "
                f"{record.name} takes: {takes}"
            )
        if name in written:
            raise ValueError(f"metric {text!r}: option {name} is given twice")
        written[name] = value.strip()
        values[name] = _option_value(text, known[name], value)

    relevance = values.pop("relevance", None)
    min_grade = values.pop("min_grade", None)
    if relevance == "graded" and min_grade is not None:
        raise ValueError(f"metric {text!r}: min_grade sets what counts as relevant in the binary "
                         "reading; it does not go with relevance=graded")
    return MetricRequest(
        label=text.strip(), name=record.name, k=k, options=tuple(values.items()),
        overloads=overloads, relevance=relevance, min_grade=min_grade,
        written_name=match["name"], written_options=tuple(written.items()),
        written_k=match["k"],
    )


# --- column names ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ColumnNames:
    """Which column of each file plays which role (``RUN_ROLES``, ``QRELS_ROLES``); a role left
    out takes its default (see ``evaluate``)."""

    run: Mapping[str, str]
    qrels: Mapping[str, str]


def column_names(
    shared: Mapping[str, str | None],
    run: Mapping[str, str] | None = None,
    qrels: Mapping[str, str] | None = None,
    spelling: Spelling = PYTHON,
) -> ColumnNames:
    """Merge the names given for both files (``query_column=``, ...; None = not given) with the
    per-file ones (``run_columns=``, ``qrels_columns=``), which win."""
    files = {}
    for kind, roles, given in (("run", RUN_ROLES, run), ("qrels", QRELS_ROLES, qrels)):
        merged = {role: name for role, name in shared.items() if role in roles and name}
        for role, name in (given or {}).items():
            if role not in roles:
                raise ValueError(
                    f"{spelling.argument(kind + '_columns')}: unknown role {role!r}; the "
                    f"{kind} roles are: {', '.join(roles)}"
                )
            if not isinstance(name, str) or not name:
                raise ValueError(f"{spelling.argument(kind + '_columns')}: the {role} column "
                                 f"must be a column name, got {name!r}")
            merged[role] = name
        files[kind] = merged
    if "score" in files["run"] and "rank" in files["run"]:
        raise ValueError(
            f"the run is ranked by a score column or by a rank column, not both: got score "
            f"{files['run']['score']!r} and rank {files['run']['rank']!r} (drop "
            f"{spelling.argument('score_column')} or {spelling.argument('rank_column')})"
        )
    return ColumnNames(run=files["run"], qrels=files["qrels"])


def reader_columns(roles: Mapping[str, str]) -> Columns:
    """What ``read_file`` needs to know of a file's columns: its query and item columns (read as
    text from CSV) and the column that must hold numbers (the run's rank or score, the grade)."""
    return Columns(query=roles.get("query"), item=roles.get("item", "item"),
                   score=roles.get("rank", roles.get("score", "score")), grade=roles.get("grade"))


# --- inputs ---------------------------------------------------------------------------------------

def as_relation(
    con: duckdb.DuckDBPyConnection, table: Any, kind: str, roles: Mapping[str, str],
    registered: list[str], glob: bool = False,
) -> duckdb.DuckDBPyRelation:
    """``table`` (a path, a DuckDB relation, or a pandas / polars / Arrow table or reader) as a
    relation of ``con``. ``kind`` ('run' or 'qrels') and ``roles`` (role -> column) tell a file's
    reader what to read; views registered for in-memory tables are appended to ``registered``
    (the caller unregisters them)."""
    if isinstance(table, str | Path):
        return read_file(con, table, kind, columns=reader_columns(roles), glob=glob)
    if isinstance(table, duckdb.DuckDBPyRelation):
        return table
    if isinstance(table, pa.RecordBatchReader):
        # The evaluation scans its inputs several times (checks, then once per range of query
        # ids); a reader can be read only once.
        table = table.read_all()
    # pandas, polars, pyarrow tables and datasets: DuckDB scans them in place (no copy) through a
    # registered view.
    name = f"duckrank_{kind}_{uuid.uuid4().hex}"
    con.register(name, table)
    registered.append(name)
    return con.table(name)


def is_polars(table: Any) -> bool:
    """Whether ``table`` is a polars object (told without importing polars)."""
    return type(table).__module__.split(".")[0] == "polars"


def _id_kind(sql_type: str) -> str:
    return "an integer" if sql_type in INTEGER_TYPES else sql_type


class _Table:
    """A relation and a case-insensitive view of its column names."""

    def __init__(self, relation: duckdb.DuckDBPyRelation, kind: str):
        self.relation = relation
        self.kind = kind
        self.types = {c.lower(): (c, str(t)) for c, t in zip(relation.columns, relation.types,
                                                            strict=True)}

    def has(self, name: str) -> bool:
        return name.lower() in self.types

    def column(self, name: str, role: str, hint: str) -> str:
        if not self.has(name):
            raise ValueError(
                f"the {self.kind} has no {role} column {name!r}; its columns are: "
                f"{', '.join(self.relation.columns)} ({hint})"
            )
        return self.types[name.lower()][0]

    def type_of(self, name: str) -> str:
        return self.types[name.lower()][1]


@dataclass(frozen=True)
class _Columns:
    """The SQL expressions the evaluation reads (quoted columns, casts)."""

    run_query: str
    run_item: str
    run_key: str  # what to_ordered_list sorts by, descending
    run_key_column: str  # the quoted score or rank column run_key reads
    qrels_query: str
    qrels_item: str
    grade: str
    query_type: str  # the SQL type of run_query (range boundaries are cast to it)
    item_type: str  # the SQL type of run_item (ties are broken by its text form)
    query_name: str  # the query column's name in the per-query output
    by: tuple[str, ...]  # run columns, as the run spells them
    item_name: str  # the run's item column, as the run spells it
    key_name: str  # the run's score or rank column, as the run spells it

    @property
    def by_select(self) -> str:
        """The by columns, quoted, each followed by a comma (empty without by)."""
        return "".join(f"{quote_identifier(name)}, " for name in self.by)

    @property
    def group_by(self) -> str:
        return f" GROUP BY {self.by_select[:-2]}" if self.by else ""


def _role_hint(kind: str, role: str, spelling: Spelling) -> str:
    if role in ("query", "item"):
        return (f"name it with {spelling.argument(role + '_column')}, or "
                f"{spelling.columns(kind, role)} for the {kind} only")
    return f"name it with {spelling.argument(role + '_column')}"


def _query_names(run: _Table, qrels: _Table, names: ColumnNames,
                 spelling: Spelling) -> tuple[str, str]:
    run_given, qrels_given = names.run.get("query"), names.qrels.get("query")
    if run_given is None and qrels_given is None:
        for name in QUERY_COLUMNS:
            if run.has(name) and qrels.has(name):
                return run.column(name, "", ""), qrels.column(name, "", "")
        raise ValueError(
            "no query column: neither 'query' nor 'user' is in both tables; name it with "
            f"{spelling.argument('query_column')} (or {spelling.columns('run', 'query')} and "
            f"{spelling.columns('qrels', 'query')} when the names differ). The run has: "
            f"{', '.join(run.relation.columns)}; the qrels have: "
            f"{', '.join(qrels.relation.columns)}"
        )

    def pick(table: _Table, given: str | None, other: str | None) -> str:
        if given is not None:
            return table.column(given, "query", _role_hint(table.kind, "query", spelling))
        candidates = [n for n in (other, *QUERY_COLUMNS) if n is not None]
        found = next((n for n in candidates if table.has(n)), candidates[0])
        return table.column(found, "query", _role_hint(table.kind, "query", spelling))

    return pick(run, run_given, qrels_given), pick(qrels, qrels_given, run_given)


def _ids(run: _Table, qrels: _Table, role: str, run_name: str, qrels_name: str, ids: str,
         spelling: Spelling) -> tuple[str, str]:
    """The two sides' id expressions, cast to text with ids='varchar'; otherwise ids of
    different kinds are an error, as is UHUGEINT against a signed type, which DuckDB would
    compare as DOUBLE (two different ids could be equal)."""
    run_sql, qrels_sql = quote_identifier(run_name), quote_identifier(qrels_name)
    if ids == "varchar":
        return f"CAST({run_sql} AS VARCHAR)", f"CAST({qrels_sql} AS VARCHAR)"
    run_type, qrels_type = run.type_of(run_name), qrels.type_of(qrels_name)
    types = {run_type, qrels_type}
    inexact = "UHUGEINT" in types and bool(types & set(NATIVE_SIGNED_TYPES))
    if _id_kind(run_type) != _id_kind(qrels_type) or inexact:
        raise ValueError(
            f"the {role} ids are {run_type} in the run ({run_name!r}) but {qrels_type} in the "
            f"qrels ({qrels_name!r}): compare them as text with "
            f"{spelling.argument('ids', 'varchar')}, or cast one side"
        )
    return run_sql, qrels_sql


def _warn_ungraded(qrels: _Table, ids: Sequence[str], spelling: Spelling) -> None:
    """Qrels without a grade column count every row as relevant: say so when they have number
    columns besides the ids (a ``rating`` or ``relevance`` column is not read as a grade by its
    name alone; only ``grade``, or the one named, is)."""
    unread = [name for name, sql_type in qrels.types.values()
              if name not in ids and is_number_type(sql_type, "grade")]
    if unread:
        listed = ", ".join(map(repr, unread))
        warnings.warn(
            f"the qrels have no grade column (grade): every row counts as relevant (grade 1), "
            f"and their column{'s' if len(unread) > 1 else ''} {listed} "
            f"{'are' if len(unread) > 1 else 'is'} not read; to grade by one, name it: "
            f"{spelling.argument('grade_column', unread[0])}", UngradedQrels, stacklevel=6)


def _columns(run: _Table, qrels: _Table, names: ColumnNames, by: Sequence[str], ids: str,
             spelling: Spelling) -> _Columns:
    run_query, qrels_query = _query_names(run, qrels, names, spelling)
    run_item = run.column(names.run.get("item", "item"), "item",
                          _role_hint("run", "item", spelling))
    qrels_item = qrels.column(names.qrels.get("item", "item"), "item",
                              _role_hint("qrels", "item", spelling))
    query_sql = _ids(run, qrels, "query", run_query, qrels_query, ids, spelling)
    item_sql = _ids(run, qrels, "item", run_item, qrels_item, ids, spelling)

    role = "rank" if "rank" in names.run else "score"
    key = run.column(names.run.get(role, "score"), role, _role_hint("run", role, spelling))
    if not is_number_type(run.type_of(key), "score"):
        raise ValueError(f"the run's {role} column {key!r} is {run.type_of(key)}: it must be "
                         "numeric (ids and labels are not scores)")
    # A rank ascends (1 = best): sorting its negation descending keeps one rule for ties (by
    # item, descending) for scores and ranks alike.
    run_key = (f"-CAST({quote_identifier(key)} AS DOUBLE)" if role == "rank"
               else quote_identifier(key))

    if "grade" in names.qrels or qrels.has("grade"):
        grade_name = qrels.column(names.qrels.get("grade", "grade"), "grade",
                                  _role_hint("qrels", "grade", spelling))
        grade_type = qrels.type_of(grade_name)
        if not is_number_type(grade_type, "grade"):
            raise ValueError(f"the qrels' grade column {grade_name!r} is {grade_type}: it must "
                             "be numeric (or BOOLEAN: true = 1)")
        grade = quote_identifier(grade_name)
        if grade_type == "BOOLEAN":
            grade = f"CAST({grade} AS TINYINT)"
    else:
        grade = "1"
        _warn_ungraded(qrels, (qrels_query, qrels_item), spelling)

    by_names = tuple(run.column(name, "by", f"{spelling.argument('by')} names a run column")
                     for name in by)
    if run_query.lower() in (name.lower() for name in by_names):
        raise ValueError(f"{spelling.argument('by', run_query)}: that is the query column; for "
                         f"one row per query use {spelling.argument('per_user', True)}")
    return _Columns(
        run_query=query_sql[0], run_item=item_sql[0], run_key=run_key,
        run_key_column=quote_identifier(key),
        qrels_query=query_sql[1], qrels_item=item_sql[1], grade=grade,
        query_type="VARCHAR" if ids == "varchar" else run.type_of(run_query),
        item_type="VARCHAR" if ids == "varchar" else run.type_of(run_item),
        query_name=run_query, by=by_names, item_name=run_item, key_name=key,
    )


# --- checks before anything is computed -----------------------------------------------------------

@dataclass(frozen=True)
class _Qrels:
    """What the qrels profile found (one streaming pass)."""

    rows: int
    dropped: int
    graded: bool
    largest: float | None
    smallest: float | None


def _kept(c: _Columns) -> str:
    return f"{c.qrels_query} IS NOT NULL AND {c.qrels_item} IS NOT NULL"


def _judgment(con: duckdb.DuckDBPyConnection, view: str, c: _Columns, condition: str,
              params: dict[str, Any] | None = None) -> str:
    """'query q, item i' of the first kept qrels row meeting ``condition``, for a message (a
    second look: building this text for every row would cost the check its speed)."""
    row = con.execute(
        f"SELECT {c.qrels_query}::VARCHAR, {c.qrels_item}::VARCHAR FROM {view} "
        f"WHERE {_kept(c)} AND {condition} LIMIT 1", params,
    ).fetchall()
    return f"query {row[0][0]}, item {row[0][1]}" if row else "?"


def _profile_qrels(con: duckdb.DuckDBPyConnection, view: str, c: _Columns) -> _Qrels:
    """Count the qrels and their dropped rows, check the grades and tell whether they are graded
    (a grade other than 0 and 1)."""
    kept = _kept(c)
    rows, dropped, null_grades, non_binary, high, low = con.execute(f"""
        SELECT count(*), count(*) FILTER (WHERE NOT ({kept})),
               count(*) FILTER (WHERE {kept} AND g IS NULL),
               count(*) FILTER (WHERE {kept} AND g NOT IN (0, 1)),
               max(g) FILTER (WHERE {kept}), min(g) FILTER (WHERE {kept})
        FROM (SELECT *, {c.grade} AS g FROM {view})""").fetchall()[0]
    if null_grades:
        first = _judgment(con, view, c, f"{c.grade} IS NULL")
        raise ValueError(f"the qrels have {null_grades} NULL grades (first: {first})")
    return _Qrels(
        rows=rows, dropped=dropped, graded=non_binary > 0,
        largest=None if high is None else float(high),
        smallest=None if low is None else float(low),
    )


def _check_grades(con: duckdb.DuckDBPyConnection, view: str, c: _Columns,
                  requests: Sequence[MetricRequest], qrels: _Qrels, spelling: Spelling) -> None:
    """Grades a graded metric cannot read are an error here, before any output, with the fix in
    the caller's own syntax (the SQL functions' messages speak SQL: ``max_grade := 5``)."""
    for request in requests:
        form = request.truth_form(qrels.graded)
        options = {o.name: o.default for m in request.overloads for o in m.options}
        if "max_grade" not in options or qrels.largest is None:
            continue
        limit = float(dict(request.options).get("max_grade", options["max_grade"]))
        grade = qrels.largest if form == "map" else 1.0
        if grade > limit:
            where = (f" ({_judgment(con, view, c, f'{c.grade} = $g', {'g': grade})})"
                     if form == "map" else "")
            raise ValueError(
                f"metric {request.label!r}: the qrels have grade {_number_text(grade)}{where} "
                f"above {request.name}'s max_grade {_number_text(limit)}; raise it: "
                f"{spelling.metric(request.rewritten(max_grade=_number_text(math.ceil(grade))))}"
            )


def _check_conflicts(con: duckdb.DuckDBPyConnection, view: str, c: _Columns,
                     bucket: _Bucket) -> int:
    """Raise when one (query, item) has two grades in this range; return its judged queries."""
    where = f"{_kept(c)} AND {bucket.where(c.qrels_query, c.query_type)}"
    # Only a query with two different grades can give them to one item: grouping by query alone
    # costs a tenth of grouping every (query, item), which then reads only those queries (none
    # for qrels of one grade).
    per_query = (f"SELECT {c.qrels_query} AS q, min({c.grade}) AS low, max({c.grade}) AS high "
                 f"FROM {view} WHERE {where} GROUP BY q")
    judged, mixed_queries = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE low <> high) FROM ({per_query})",
        bucket.params).fetchall()[0]
    if not mixed_queries:
        return judged
    where += f" AND {c.qrels_query} IN (SELECT q FROM ({per_query}) WHERE low <> high)"
    conflicts = con.execute(f"""
        SELECT count(*) FROM (
          SELECT {c.qrels_query} AS q FROM {view} WHERE {where}
          GROUP BY q, {c.qrels_item} HAVING min({c.grade}) <> max({c.grade}))""",
        bucket.params).fetchall()[0][0]
    if conflicts:
        example = con.execute(f"""
            SELECT q::VARCHAR, i::VARCHAR FROM (
              SELECT {c.qrels_query} AS q, {c.qrels_item} AS i FROM {view} WHERE {where}
              GROUP BY q, i HAVING min({c.grade}) <> max({c.grade}) LIMIT 1)""",
            bucket.params).fetchall()[0]
        raise ValueError(f"the qrels give two different grades to query {example[0]}, item "
                         f"{example[1]}")
    return judged


# --- ranges of query ids --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Bucket:
    """One range of query ids: lo < id <= hi (no bound = open)."""

    lo: str | None
    hi: str | None

    @property
    def params(self) -> dict[str, str]:
        bounds = {"duckrank_lo": self.lo, "duckrank_hi": self.hi}
        return {name: value for name, value in bounds.items() if value is not None}

    def where(self, expression: str, sql_type: str) -> str:
        # The bounds travel as text and are cast back to the ids' type: exact for every id
        # type DuckDB can cast to and from VARCHAR.
        parts = ["true"]
        if self.lo is not None:
            parts.append(f"{expression} > CAST($duckrank_lo AS {sql_type})")
        if self.hi is not None:
            parts.append(f"{expression} <= CAST($duckrank_hi AS {sql_type})")
        return " AND ".join(parts)


def _buckets(con: duckdb.DuckDBPyConnection, view: str, c: _Columns, rows: int) -> list[_Bucket]:
    """Ranges of query ids holding about ROWS_PER_BUCKET rows each, their bounds taken from a
    sample of the run's query ids in the ids' own order."""
    count = math.ceil(rows / ROWS_PER_BUCKET)
    if count <= 1:
        return [_Bucket(None, None)]
    sample = con.execute(f"""
        SELECT CAST(q AS VARCHAR) FROM (
          SELECT q FROM (SELECT {c.run_query} AS q FROM {view} WHERE {c.run_query} IS NOT NULL)
          USING SAMPLE reservoir({SAMPLE_ROWS} ROWS) REPEATABLE (20240609))
        ORDER BY q""").fetchall()
    bounds: list[str] = []
    for j in range(1, count):
        value = sample[j * len(sample) // count][0] if sample else None
        if value is not None and (not bounds or bounds[-1] != value):
            bounds.append(value)
    edges: list[str | None] = [None, *bounds, None]
    return [_Bucket(lo, hi) for lo, hi in zip(edges, edges[1:], strict=False)]


# --- the query ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Metric:
    request: MetricRequest
    column: str  # the output column's name
    truth: str  # the judged CTE's column it reads


@dataclass(frozen=True)
class _Truth:
    """One truth column of the judged CTE: the MAP of grades (``gains``: with a negative grade
    as 0, for the gain functions, which refuse one), or the LIST of the items with grade > 0
    (``min_grade`` None) or grade >= min_grade."""

    name: str
    graded: bool
    min_grade: int | float | None = None
    gains: bool = False
    # Every kept qrels row passes the relevance test: the LIST is every judged item, built
    # without the test's FILTER (which costs the truth lists about a third more).
    all_relevant: bool = False


def _plan_metrics(
    requests: Sequence[MetricRequest], graded: bool
) -> tuple[list[_Metric], list[_Truth]]:
    """The output columns (one per distinct name) and only the truth forms they read: a MAP of
    every judgment costs memory for nothing when no metric takes grades."""
    truths: dict[tuple[bool, int | float | None, bool], _Truth] = {}
    metrics: dict[str, _Metric] = {}
    for request in requests:
        is_map = request.truth_form(graded) == "map"
        key = (is_map, None if is_map else request.min_grade, is_map and request.reads_gains())
        truth = truths.setdefault(key, _Truth(f"duckrank_truth{len(truths)}", *key))
        column = request.column(graded)
        metrics.setdefault(column, _Metric(request, column, truth.name))
    return list(metrics.values()), list(truths.values())


# --- ranking: whole lists or the top K ------------------------------------------------------------

# Metrics with a cut-off read only rec[1:k] (and K = min(k, len(rec)), the same on the list cut at
# the largest k), so when every requested metric has one, each query needs only its top K. The
# native step's aggregate duckrank_top_k (matching/native/topk.c) keeps those in a heap of at most
# K pairs per query, grown as rows arrive: at K = 10 over 100-row lists half the CPU of DuckDB's
# max(x, n) and a quarter of to_ordered_list's, and no slower on short lists. Without it (not
# loaded, or item or key types it does not take exactly), DuckDB's max(x, n) keeps the heap: half
# the CPU of to_ordered_list at K = 10, level at K = 50, and slower with more memory (the heap
# reserves its n places per query) when the lists are not much longer than K (measured in one run,
# benchmarks/bench_long.py); hence that heap only where the lists average at least TOP_K_RATIO * K
# rows.
TOP_K_RATIO = 4
# The item types duckrank_top_k takes, and the key types it reads exactly through a cast to BIGINT
# or DOUBLE (a key of any other type, DECIMAL or HUGEINT, could tie or order differently there).
NATIVE_TOP_K_ITEMS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                      "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "VARCHAR")
NATIVE_TOP_K_KEYS = {
    **dict.fromkeys(("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                     "UINTEGER"), "BIGINT"),
    "FLOAT": "DOUBLE", "DOUBLE": "DOUBLE",
}
# Memory of a query's heap, in input rows (ranges are sized in rows, ROWS_PER_BUCKET).
TOP_K_ROW_WEIGHT = 4
# The largest K duckrank_top_k takes (its heap counts in 32 bits).
NATIVE_TOP_K_LIMIT = 2**32 - 1


def _all_relevant(con: duckdb.DuckDBPyConnection, truth: _Truth, qrels: _Qrels,
                  convention: Convention) -> _Truth:
    """``truth`` marked all_relevant when every kept qrels row passes its binary relevance test:
    each test is a lower bound on the grade (``g > 0``, ``g >= 1``, ``g >= min_grade``), so the
    smallest grade decides, tested by the same SQL."""
    if truth.graded or qrels.smallest is None:
        return truth
    test, params = convention.relevant, {"g": qrels.smallest}
    if truth.min_grade is not None:
        test, params["m"] = "g >= $m", truth.min_grade
    passes = con.execute(f"SELECT {test} FROM (SELECT $g AS g)", params).fetchall()[0][0]
    return replace(truth, all_relevant=bool(passes))


def _top_k(metrics: Sequence[_Metric]) -> int | None:
    """The largest cut-off when every metric has one; None when some metric reads the whole
    list."""
    cutoffs = [m.request.k for m in metrics]
    if not cutoffs or None in cutoffs:
        return None
    return max(k for k in cutoffs if k is not None)


def _native_top_k_key(con: duckdb.DuckDBPyConnection, run_view: str, item: str,
                      key: str) -> str | None:
    """The type to cast the keys to for duckrank_top_k, or None when it cannot rank these rows:
    not loaded in ``con``'s database (asked of DuckDB's aggregates: a macro of that name is not
    it), or an item or key type it does not take exactly."""
    item_type, key_type = (str(t) for t in con.sql(f"SELECT {item}, {key} FROM {run_view}").types)
    if item_type not in NATIVE_TOP_K_ITEMS:
        return None
    # Integer ids rank with its overloads of four arguments (ties by the id's text, see
    # _ranked_sql), the others with those of three.
    arguments = 4 if item_type in INTEGER_TYPES else 3
    loaded = con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = 'duckrank_top_k' "
        "AND function_type = 'aggregate' AND len(parameters) = $arguments",
        {"arguments": arguments}).fetchall()
    if loaded == [(0,)]:
        return None
    return NATIVE_TOP_K_KEYS.get(key_type)


def _ranked_sql(item: str, item_type: str, key: str, top_k: int | None,
                native_key: str | None) -> str:
    """The aggregate that ranks a query's rows: ``to_ordered_list``, or its first ``top_k``
    items: duckrank_top_k's where ``native_key`` names the cast its keys need, else ``max`` over
    structs. Each orders by key, descending, then by the item's text form, descending (byte
    order, trec_eval's), and keeps tied and repeated rows, so the top K is the whole list cut
    at K (tests/test_evaluate.py checks it row by row). Ties go by the text form whatever the
    id's type: a file read with integer ids (Parquet) and the same file read with text ids (CSV)
    give one order (between integers, 9 comes before 10: '9' > '10'). Integer ids rank natively
    with ``duckrank_top_k(item, key, k, 'text')``, which compares two ids' decimal texts only
    when their keys tie (without writing them out); the other ids of NATIVE_TOP_K_ITEMS (floats)
    rank as their text, cast back."""
    if item_type == "VARCHAR":
        text, order = item, key
    else:
        text = f"CAST({item} AS VARCHAR)"
        order = f"{{'k': {key}, 't': {text}}}"
    if top_k is None:
        return f"to_ordered_list({item}, {order}, '-reverse')"
    if native_key is not None:
        if item_type in INTEGER_TYPES:
            return f"duckrank_top_k({item}, CAST({key} AS {native_key}), {int(top_k)}, 'text')"
        ranked = f"duckrank_top_k({text}, CAST({key} AS {native_key}), {int(top_k)})"
        # The text of an id of NATIVE_TOP_K_ITEMS casts back to that id.
        return (ranked if item_type == "VARCHAR"
                else f"list_transform({ranked}, lambda e: CAST(e AS {item_type}))")
    fields = f"'k': {key}, 'v': {item}" if item_type == "VARCHAR" else (
        f"'k': {key}, 't': {text}, 'v': {item}")
    return f"list_transform(max({{{fields}}}, {int(top_k)}), lambda e: e.v)"


def _rank_key(c: _Columns, convention: Convention) -> str:
    """What the run's rows are ranked by, descending: the score (a C float under trec_eval's
    convention) or the negated rank."""
    if convention.float_scores and not c.run_key.startswith("-"):
        return float_score_sql(c.run_key)
    return c.run_key


def _scored_sql(run_view: str, qrels_view: str, c: _Columns, metrics: Sequence[_Metric],
                truths: Sequence[_Truth], bucket: _Bucket, convention: Convention,
                top_k: int | None, native_key: str | None,
                groups: str | None) -> tuple[str, dict[str, Any]]:
    """The CTEs ranked, judged and scored of one range of query ids, and their parameters
    (``top_k``: rank only each query's top K, with duckrank_top_k where ``native_key`` is set;
    see ``_ranked_sql``). ``scored`` has a row per ranked query and, when the convention scores
    unranked queries, per judged query the run did not rank (per ``by`` group: ``groups``, the
    table of the run's groups), with ``duckrank_judged``, ``duckrank_ranked``, the list and the
    metrics ``duckrank_m0``, ``duckrank_m1``, ... (NULL for unjudged queries)."""
    params: dict[str, Any] = dict(bucket.params)

    def parameter(value: Any) -> str:
        name = f"p{len(params)}"
        params[name] = value
        return f"${name}"

    judged = []
    for truth in truths:
        if truth.gains:
            # The gain functions refuse a negative grade (TREC's -2 for spam): gain 0, as in
            # trec_eval's ndcg.
            sql = "map_from_entries(list({'key': i, 'value': greatest(g, 0)::DOUBLE}))"
        elif truth.graded:
            # As given: trec_eval's measures read a negative grade as in the pool but unjudged.
            sql = "map_from_entries(list({'key': i, 'value': g::DOUBLE}))"
        elif truth.all_relevant:
            sql = "list(i)"
        else:
            relevant = (convention.relevant if truth.min_grade is None
                        else f"g >= {parameter(truth.min_grade)}")
            sql = f"coalesce(list(i) FILTER (WHERE {relevant}), list(i)[1:0])"
        judged.append(f",\n         {sql} AS {truth.name}")
    if convention.score_unranked:
        judged.append(",\n         list(i) AS duckrank_items")
    graded = {truth.name: truth.graded for truth in truths}
    # A MAP takes each item once; a LIST truth is read as a set, so a repeated judgment (the
    # same grade twice: _check_conflicts refused two grades) needs no hash of every qrels row.
    distinct = "DISTINCT " if any(graded.values()) else ""
    calls = []
    for index, metric in enumerate(metrics):
        request = metric.request
        named = ([("k", request.k)] if request.k is not None else []) + list(request.options)
        options = [f"{quote_identifier(name)} := {parameter(value)}" for name, value in named]

        def call(rec: str, metric: _Metric = metric, options: list[str] = options) -> str:
            arguments = [rec, metric.truth, *options]
            if metric.request.k is None and metric.request.name in convention.full_ideal:
                size = "cardinality" if graded[metric.truth] else "len"
                arguments.append(f"k := greatest(len({rec}), {size}({metric.truth}))")
            sql = f"{quote_identifier(metric.request.name)}({', '.join(arguments)})"
            return f"coalesce({sql}, 0)" if convention.undefined_as_zero else sql

        value = call("duckrank_rec")
        if convention.score_unranked:
            # An unranked query is an empty list: its value, or 0 where the empty list leaves
            # the metric undefined but a list could not (precision's 0 / 0); a metric that the
            # query's judged items, ranked, leave undefined (no relevant item) stays NULL, as
            # it is for a query the run ranks.
            unranked = call("duckrank_items[1:0]")
            if all(m.result_type != "VARCHAR" for m in request.overloads):  # not relstring
                unranked = (f"coalesce({unranked}, "
                            f"CASE WHEN {call('duckrank_items')} IS NOT NULL THEN 0 END)")
            value = f"CASE WHEN duckrank_ranked THEN {value} ELSE {unranked} END"
        calls.append(f"CASE WHEN duckrank_judged THEN {value} END AS duckrank_m{index}")

    by = [quote_identifier(name) for name in c.by]
    if convention.score_unranked:
        # Every judged query of the range, in every group of the run.
        judged_side = (f"(SELECT * FROM {groups} CROSS JOIN judged)" if c.by else "judged")
        join = "FULL JOIN"
        by_select = "".join(f"coalesce(r.{name}, j.{name}) AS {name}, " for name in by)
    else:
        judged_side, join = "judged", "LEFT JOIN"
        by_select = "".join(f"r.{name}, " for name in by)
    same_group = "".join(f" AND r.{name} IS NOT DISTINCT FROM j.{name}" for name in by
                         if convention.score_unranked)
    ranked = _ranked_sql(c.run_item, c.item_type, _rank_key(c, convention), top_k, native_key)
    sql = f"""
WITH ranked AS (
  SELECT {c.by_select}{c.run_query} AS duckrank_query, {ranked} AS duckrank_rec
  FROM {run_view}
  WHERE {c.run_query} IS NOT NULL AND {c.run_item} IS NOT NULL AND {c.run_key} IS NOT NULL
    AND {bucket.where(c.run_query, c.query_type)}
  GROUP BY ALL
),
judged AS (
  SELECT q AS duckrank_query, true AS duckrank_in_qrels{''.join(judged)}
  FROM (SELECT {distinct}{c.qrels_query} AS q, {c.qrels_item} AS i, {c.grade} AS g
        FROM {qrels_view}
        WHERE {c.qrels_query} IS NOT NULL AND {c.qrels_item} IS NOT NULL
          AND {bucket.where(c.qrels_query, c.query_type)})
  GROUP BY q
),
scored AS (
  SELECT {by_select}coalesce(r.duckrank_query, j.duckrank_query) AS duckrank_query,
         j.duckrank_in_qrels IS NOT NULL AS duckrank_judged,
         r.duckrank_query IS NOT NULL AS duckrank_ranked, len(duckrank_rec) AS duckrank_length,
         {', '.join(calls)}
  FROM ranked r {join} {judged_side} j
    ON r.duckrank_query = j.duckrank_query{same_group}
)"""
    return sql, params


# --- beyond-accuracy metrics ----------------------------------------------------------------------

@dataclass(frozen=True)
class SideInputs:
    """What beyond-accuracy requests read besides the run and the qrels (docs/beyond-accuracy.md):
    ``other``, a second system's run (``overlap_at``, ``jaccard_at``, ``rbo``), read with the
    run's columns; the side tables ``SIDE_TABLES``, each a Parquet or CSV path, a relation of the
    connection, or a pandas / polars / Arrow table, with the user and item columns named as the
    run's; and ``catalog_size``. None: not given."""

    other: Any = None
    train: Any = None
    catalog: Any = None
    catalog_size: int | None = None
    embeddings: Any = None
    categories: Any = None
    propensities: Any = None

    def given(self, name: str) -> bool:
        return getattr(self, name) is not None


# Inputs of which a metric needs one when its record takes both as options (its macro refuses
# a call without either).
_ONE_OF = (("catalog", "catalog_size"), ("propensities", "train"))


def side_relation(con: duckdb.DuckDBPyConnection, table: Any, name: str, ids: Sequence[str],
                  registered: list[str], spelling: Spelling = PYTHON) -> duckdb.DuckDBPyRelation:
    """The side table given as argument ``name``: a Parquet or CSV path, a DuckDB relation, or
    anything DuckDB scans (``as_relation``). In CSV files the ``ids`` columns (user, item) are
    text, as ``duckrank.files`` reads run and qrels CSVs."""
    if not isinstance(table, str | Path):
        return as_relation(con, table, "side", {}, registered)
    fmt = file_format(table)
    if fmt not in ("parquet", "csv"):
        raise ValueError(f"{spelling.argument(name, str(table))}: give a Parquet or CSV file")
    try:
        files = file_paths(con, table, name)
    except ValueError as error:
        raise ValueError(f"{spelling.argument(name, str(table))}: {error}") from None
    # the one file of that name (DuckDB's readers would take `*`, `?` and `[` as a pattern)
    path = literal_patterns(con, files)
    if fmt == "parquet":
        return con.read_parquet(path)
    text = {name: "VARCHAR" for name in con.read_csv(path).columns if name in ids}
    return con.read_csv(path, dtype=text)


def _evaluate_error(spelling: Spelling, message: str) -> ValueError:
    """A ValueError naming ``evaluate`` from Python (the command line names its command)."""
    return ValueError(message if spelling.cli else f"evaluate: {message}")


def _check_beyond(requests: Sequence[Request], side: SideInputs, per_user: bool,
                  spelling: Spelling) -> None:
    """Before anything is read: beyond-accuracy values are means (over the run, or a ``by``
    group), and every input a request reads is given."""
    for request in requests:
        metric = request.metric
        if per_user:
            refused = f"it cannot be given {spelling.argument('per_user', True)}"
            raise _evaluate_error(spelling, (
                f"{request.text!r} is one value for the whole run; {refused}"
                if metric.kind == "catalogue" else
                f"{request.text!r} is given as a mean over the run's users; {refused} (one "
                f"value per user: the {metric.name} macro in SQL, docs/beyond-accuracy.md)"))
        optional = {p.name for p in metric.parameters if p.default is not None}
        needed = [(p.name,) for p in metric.parameters
                  if p.default is None and p.name in SIDE_TABLES]
        needed += [group for group in _ONE_OF if set(group) <= optional]
        if metric.kind == "pair":
            needed.append(("other",))
        for group in needed:
            if not any(side.given(name) for name in group):
                wanted = " or ".join(spelling.argument(name) for name in group)
                raise _evaluate_error(spelling, f"{request.text!r}: {metric.name} needs {wanted}, "
                                      "which is not given")


def _beyond_table(
    con: duckdb.DuckDBPyConnection, requests: Sequence[Request], side: SideInputs,
    views: tuple[str, str], c: _Columns, convention: Convention, names: ColumnNames,
    objects: tuple[list[str], list[str]], spelling: Spelling, glob: bool,
) -> str:
    """A temp table of the beyond-accuracy values: one row per ``by`` group of the run (one row
    without ``by``), the ``by`` columns then ``duckrank_b0``, ``duckrank_b1``, ... in the order of
    ``requests``. Each group's values are ``beyond_values`` of its rows, ranked as the evaluation
    ranks them (the same key and ties; the rows the evaluation drops left out), with the qrels'
    relevant items (as the binary reading has them) and ``side``. ``objects``: the lists of
    objects to drop and views to unregister after the evaluation."""
    run_view, qrels_view = views
    dropped, registered = objects
    query, item = quote_identifier(c.query_name), quote_identifier(c.item_name)
    key = _rank_key(c, convention)
    columns = RunColumns(c.query_name, c.item_name, "duckrank_score", grade="duckrank_grade")

    def lists_input(view: str) -> str:
        return (f"SELECT {c.run_query} AS {query}, {c.run_item} AS {item}, {key} AS "
                f"duckrank_score FROM {view} WHERE {c.run_query} IS NOT NULL AND "
                f"{c.run_item} IS NOT NULL AND {c.run_key_column} IS NOT NULL")

    def view_of(relation: duckdb.DuckDBPyRelation, kind: str) -> str:
        name = quote_identifier(f"duckrank_{kind}_view_{uuid.uuid4().hex}")
        dropped.append(f"VIEW IF EXISTS {name}")
        relation.create_view(name[1:-1])
        return name

    other = None
    if side.given("other"):
        relation = as_relation(con, side.other, "run", names.run, registered, glob)
        table = _Table(relation, "other run")
        for name, role in ((c.query_name, "query"), (c.item_name, "item"),
                           (c.key_name, "rank" if "rank" in names.run else "score")):
            table.column(name, role, f"{spelling.argument('other')} is read with the run's "
                         "columns")
        other = con.sql(lists_input(view_of(relation, "other")))
    qrels = None
    if any(p.name == "truth_col" for r in requests for p in r.metric.parameters):
        qrels = con.sql(
            f"SELECT {c.qrels_query} AS {query}, {c.qrels_item} AS {item}, "
            f"CAST(({convention.relevant}) AS TINYINT) AS duckrank_grade "
            f"FROM (SELECT *, {c.grade} AS g FROM {qrels_view}) WHERE {_kept(c)}")
    tables = {
        name: side_relation(con, getattr(side, name), name, (c.query_name, c.item_name),
                            registered, spelling)
        for name in SIDE_TABLES if side.given(name)
    }

    groups = quote_identifier(f"duckrank_groups_{uuid.uuid4().hex}")
    values = quote_identifier(f"duckrank_beyond_{uuid.uuid4().hex}")
    dropped += [f"TABLE IF EXISTS {groups}", f"TABLE IF EXISTS {values}"]
    con.execute(f"CREATE TEMP TABLE {groups} AS " + (
        f"SELECT row_number() OVER () AS duckrank_group, * FROM (SELECT DISTINCT "
        f"{c.by_select[:-2]} FROM {run_view})" if c.by else "SELECT 1 AS duckrank_group"))
    nulls = ", ".join(f"NULL::DOUBLE AS duckrank_b{n}" for n in range(len(requests)))
    casts = ", ".join(f"CAST($b{n} AS DOUBLE)" for n in range(len(requests)))
    con.execute(f"CREATE TEMP TABLE {values} AS SELECT {c.by_select}{nulls} FROM {groups} "
                "LIMIT 0")
    count = con.execute(f"SELECT count(*) FROM {groups}").fetchall()[0][0]
    for group in range(1, count + 1):
        # NULL is a group of its own, as in the evaluation's GROUP BY.
        match = "".join(f" AND {name} IS NOT DISTINCT FROM (SELECT {name} FROM {groups} "
                        f"WHERE duckrank_group = {group})"
                        for name in map(quote_identifier, c.by))
        found = beyond_values(con, con.sql(lists_input(run_view) + match),
                              [r.text for r in requests], qrels=qrels, other=other,
                              tables=tables, catalog_size=side.catalog_size, columns=columns,
                              spelling=spelling)
        con.execute(f"INSERT INTO {values} SELECT {c.by_select}{casts} FROM {groups} "
                    f"WHERE duckrank_group = {group}",
                    {f"b{n}": found[r.text] for n, r in enumerate(requests)})
    return values


@dataclass
class Result:
    """The evaluation's output: ``columns`` and its rows, computed one range of query ids at a
    time as they are read (inside the ``evaluation`` block). ``queries`` gives each range's SQL
    and parameters, in output order."""

    columns: list[str]
    connection: duckdb.DuckDBPyConnection
    queries: Callable[[], Iterator[tuple[str, dict[str, Any]]]]

    def rows(self, batch_size: int = 10_000) -> Iterator[tuple[Any, ...]]:
        for sql, params in self.queries():
            yield from self.connection.sql(sql, params=params).iter_rows(batch_size=batch_size)

    def df(self, polars: bool = False) -> pandas.DataFrame | polars.DataFrame:
        """One DataFrame (pandas, or polars with ``polars``), converted once by DuckDB
        (DataFrames of the ranges apart could differ in dtype: a text column all NULL in one
        range is ``object`` there)."""
        def convert(relation: duckdb.DuckDBPyRelation) -> Any:
            return relation.pl() if polars else relation.df()

        queries = list(self.queries())
        if len(queries) == 1:
            return convert(self.connection.sql(queries[0][0], params=queries[0][1]))
        table = quote_identifier(f"duckrank_rows_{uuid.uuid4().hex}")
        try:
            for index, (sql, params) in enumerate(queries):
                prefix = f"CREATE TEMP TABLE {table} AS" if index == 0 else f"INSERT INTO {table}"
                self.connection.execute(f"{prefix} {sql}", params)
            return convert(self.connection.table(table[1:-1]))
        finally:
            self.connection.execute(f"DROP TABLE IF EXISTS {table}")


def _warn_dropped(run_dropped: int, qrels_dropped: int, run_key: str) -> None:
    if not run_dropped and not qrels_dropped:
        return
    key = "rank" if run_key.startswith("-") else "score"
    warnings.warn(
        f"left out {run_dropped} run rows with a NULL query, item or {key} and {qrels_dropped} "
        "qrels rows with a NULL query or item (counted in the 'dropped' column)",
        DroppedRows, stacklevel=5,  # the caller of evaluate()
    )


# A group's judged queries without a list in its run: every judged query but the scored ones
# (each group is scored against all the qrels), over the partials' rows of the group.
_UNRANKED = "$judged - sum(scored)"


def _short_list_requests(metrics: Sequence[_Metric]) -> list[_Metric]:
    """The requests of precision_at with a cut-off that divide by the items returned (its
    default): a list shorter than k gives hits / len(list) there, hits / k in every peer."""
    return [m for m in metrics if m.request.name == "precision_at" and m.request.k is not None
            and dict(m.request.options).get("denominator", "returned") == "returned"]


def _warn_scoring(con: duckdb.DuckDBPyConnection, partials: str, c: _Columns, judged: int,
                  short: Sequence[_Metric], convention: Convention) -> None:
    """Say what the numbers hold that the labels cannot: judged queries without a list (how
    many, and whether they were scored or left out), and precision over lists shorter than k.
    Counted from the partials (per ``by`` group), before any row is returned."""
    names = [f"duckrank_short{j}" for j in range(len(short))]
    per_group = "".join(f", sum({name}) AS {name}" for name in names)
    totals = "".join(f", coalesce(sum({name}), 0)" for name in names)
    unranked, scored, *counts = con.execute(
        f"SELECT coalesce(sum(u), 0), coalesce(sum(s), 0){totals} FROM ("
        f"SELECT {_UNRANKED} AS u, sum(scored) AS s{per_group} FROM {partials}{c.group_by})",
        {"judged": judged}).fetchall()[0]
    groups = " (over the by groups)" if c.by else ""
    if unranked:
        if convention.score_unranked:
            done = ("each is scored as an empty list (0 where the metric is defined) and counted "
                    "in the means (convention='trec_eval' leaves them out, as trec_eval does "
                    "without -c)")
        else:
            done = ("they are left out of the means, as trec_eval does without -c (the default "
                    "convention, 'duckrank', scores them 0)")
        warnings.warn(f"{unranked} judged queries{groups} have no list in the run: {done}; the "
                      "'unranked' column counts them", UnrankedQueries, stacklevel=5)
    for metric, count in zip(short, counts, strict=True):
        if count:
            k = metric.request.k
            warnings.warn(
                f"{metric.column}: {count} of the {scored} ranked lists{groups} are shorter than "
                f"{k}, where precision divides by the items returned (denominator=returned); "
                f"trec_eval, ranx and RecTools divide by {k}: "
                f"{metric.request.rewritten(denominator='k')} gives their number",
                ShortLists, stacklevel=5)


@contextmanager
def evaluation(
    con: duckdb.DuckDBPyConnection,
    run: Any,
    qrels: Any,
    metrics: Sequence[str],
    by: Sequence[str] = (),
    per_user: bool = False,
    names: ColumnNames = ColumnNames({}, {}),
    ids: str = "typed",
    spelling: Spelling = PYTHON,
    glob: bool = False,
    convention: str = "duckrank",
    side: SideInputs = SideInputs(),
    ranked: bool = False,
) -> Iterator[Result]:
    """The evaluation on ``con`` (which must have duckrank registered), valid inside the
    ``with`` block: one row per ``by`` group (one row in all without ``by``) with the counts of
    queries scored, unjudged (in the run, not in the qrels), unranked (in the qrels, not in the
    run), the input rows dropped, and the mean of each metric over the scored queries where it
    is defined, then the beyond-accuracy requests' values (``_beyond_table``; they read
    ``side``); with ``per_user``, one row per scored query instead, ordered by query. ``run``
    and ``qrels``: file paths, relations of ``con``, or pandas, polars or Arrow tables. With
    ``per_user`` and ``ranked``, each row ends with a column ``duckrank_ranked``: whether the run
    ranked the query (False: a judged query scored as an empty list; ``compare`` counts them).
    Every check (columns, ids, grades) runs before the first row is computed. The views and
    tables it makes on ``con`` are dropped after."""
    if ids not in ID_MODES:
        raise ValueError(f"{spelling.argument('ids')} must be one of {', '.join(ID_MODES)}, got "
                         f"{ids!r}")
    rules = convention_named(convention, spelling)
    requests, beyond = split_metrics(metrics, rules)
    if not requests and not beyond:
        raise ValueError("no metric requested: name at least one, e.g. ndcg@10")
    _check_beyond(beyond, side, per_user, spelling)
    registered: list[str] = []
    dropped_objects: list[str] = []
    try:
        views = []
        tables = []
        for table, kind, roles in ((run, "run", names.run), (qrels, "qrels", names.qrels)):
            relation = as_relation(con, table, kind, roles, registered, glob)
            view = f"duckrank_{kind}_view_{uuid.uuid4().hex}"
            relation.create_view(view)
            views.append(quote_identifier(view))
            dropped_objects.append(f"VIEW IF EXISTS {views[-1]}")
            tables.append(_Table(relation, kind))
        run_view, qrels_view = views
        c = _columns(*tables, names, by, ids, spelling)

        profile = _profile_qrels(con, qrels_view, c)
        _check_grades(con, qrels_view, c, requests, profile, spelling)
        metric_columns, truths = _plan_metrics(requests, profile.graded)
        truths = [_all_relevant(con, truth, profile, rules) for truth in truths]
        beyond_table = None
        if beyond:
            beyond_table = _beyond_table(con, beyond, side, (run_view, qrels_view), c, rules,
                                         names, (dropped_objects, registered), spelling, glob)

        # Per run group: its rows, its queries (when the top K may serve: an estimate, for the
        # lists' mean length), and in rows of their own the rows dropped (a NULL query, item,
        # score or rank): a filter of IS NULL tests goes into the scan, where Parquet's
        # statistics skip the row groups without NULLs instead of reading three columns.
        top_k = _top_k(metric_columns)
        short = _short_list_requests(metric_columns)
        queries = f"approx_count_distinct({c.run_query})" if top_k else "NULL::BIGINT"
        empty_sums = "".join(f", NULL::DOUBLE AS duckrank_s{i}, 0::BIGINT AS duckrank_n{i}"
                             for i in range(len(metric_columns)))
        empty_sums += "".join(f", 0::BIGINT AS duckrank_short{j}" for j in range(len(short)))
        partials = quote_identifier(f"duckrank_partials_{uuid.uuid4().hex}")
        dropped_objects.append(f"TABLE IF EXISTS {partials}")
        con.execute(f"""
            CREATE TEMP TABLE {partials} AS
            SELECT {c.by_select}count(*) AS duckrank_rows, {queries} AS duckrank_queries,
                   0::BIGINT AS dropped, 0::BIGINT AS scored, 0::BIGINT AS unjudged{empty_sums}
            FROM {run_view}{c.group_by}""")
        con.execute(f"""
            INSERT INTO {partials} BY NAME
            SELECT {c.by_select}count(*) AS dropped FROM {run_view}
            WHERE {c.run_query} IS NULL OR {c.run_item} IS NULL OR {c.run_key_column} IS NULL
            {c.group_by}""")
        run_rows, run_dropped, run_queries = con.execute(
            f"SELECT coalesce(sum(duckrank_rows), 0), coalesce(sum(dropped), 0), "
            f"coalesce(sum(duckrank_queries), 0) FROM {partials}"
        ).fetchall()[0]
        _warn_dropped(run_dropped, profile.dropped, c.run_key)
        groups = None
        if c.by and rules.score_unranked:
            # The run's groups (a group whose every row was dropped too): each scores the judged
            # queries it did not rank.
            groups = quote_identifier(f"duckrank_groups_{uuid.uuid4().hex}")
            dropped_objects.append(f"TABLE IF EXISTS {groups}")
            con.execute(f"CREATE TEMP TABLE {groups} AS SELECT DISTINCT {c.by_select[:-2]} "
                        f"FROM {partials}")

        if top_k:
            # No list is longer than the run: cut there, it is the whole list, and any k (the
            # metrics still read the k asked for) reaches the heaps below.
            top_k = min(top_k, max(run_rows, 1))
        native_key = (_native_top_k_key(con, run_view, c.run_item, _rank_key(c, rules))
                      if top_k and top_k <= NATIVE_TOP_K_LIMIT else None)
        if top_k and (native_key or run_rows >= TOP_K_RATIO * top_k * max(run_queries, 1)):
            state_rows = min(run_rows, run_queries * top_k * TOP_K_ROW_WEIGHT)
        else:
            top_k, native_key, state_rows = None, None, run_rows
        buckets = _buckets(con, run_view, c, state_rows + profile.rows)
        judged_queries = sum(_check_conflicts(con, qrels_view, c, b) for b in buckets)

        def scored_sql(bucket: _Bucket) -> tuple[str, dict[str, Any]]:
            return _scored_sql(run_view, qrels_view, c, metric_columns, truths, bucket, rules,
                               top_k, native_key, groups)

        # The lists shorter than each precision request's k (scored lists only).
        shorter = [f"duckrank_ranked AND duckrank_length < {int(m.request.k or 0)}"
                   for m in short]
        labels = [m.column for m in metric_columns]
        if per_user:
            # Each range's values go to a table first: the warnings (how many queries were
            # unranked, how many lists short) are known before the first row is returned.
            values = quote_identifier(f"duckrank_values_{uuid.uuid4().hex}")
            dropped_objects.append(f"TABLE IF EXISTS {values}")
            kept = "duckrank_judged" + ("" if rules.score_unranked else " AND duckrank_ranked")
            flags = "".join(f", {test} AS duckrank_short{j}" for j, test in enumerate(shorter))
            for index, bucket in enumerate(buckets):
                sql, params = scored_sql(bucket)
                head = (f"CREATE TEMP TABLE {values} AS" if index == 0
                        else f"INSERT INTO {values}")
                con.execute(f"{head} {sql}\nSELECT {index} AS duckrank_bucket, * EXCLUDE "
                            f"(duckrank_judged, duckrank_length){flags} FROM scored WHERE {kept}",
                            params)
            counts = "".join(f", count(*) FILTER (WHERE duckrank_short{j}) AS duckrank_short{j}"
                             for j in range(len(short)))
            con.execute(f"INSERT INTO {partials} BY NAME SELECT {c.by_select}count(*) FILTER "
                        f"(WHERE duckrank_ranked) AS scored{counts} FROM {values}{c.group_by}")
            _warn_scoring(con, partials, c, judged_queries, short, rules)

            query_label = quote_identifier(c.query_name)
            metric_select = ", ".join(
                f"duckrank_m{i} AS {quote_identifier(m.column)}"
                for i, m in enumerate(metric_columns)
            )
            order = ", ".join([str(len(c.by) + 1), *(str(i + 1) for i in range(len(c.by)))])
            flag = ["duckrank_ranked"] if ranked else []

            def queries() -> Iterator[tuple[str, dict[str, Any]]]:
                for index in range(len(buckets)):
                    yield (f"SELECT {c.by_select}duckrank_query AS {query_label}, "
                           f"{', '.join([metric_select, *flag])} FROM {values} "
                           f"WHERE duckrank_bucket = {index} ORDER BY {order}", {})

            yield Result([*c.by, c.query_name, *labels, *flag], con, queries)
            return

        sums = "".join(
            f", fsum(duckrank_m{i}) AS duckrank_s{i}, count(duckrank_m{i}) AS duckrank_n{i}"
            for i in range(len(metric_columns))
        )
        sums += "".join(f", count(*) FILTER (WHERE duckrank_judged AND {test}) AS "
                        f"duckrank_short{j}" for j, test in enumerate(shorter))
        for bucket in buckets:
            sql, params = scored_sql(bucket)
            con.execute(
                f"INSERT INTO {partials} BY NAME {sql}\n"
                f"SELECT {c.by_select}count(*) FILTER (WHERE duckrank_judged AND duckrank_ranked) "
                f"AS scored, count(*) FILTER (WHERE NOT duckrank_judged) AS unjudged{sums} "
                f"FROM scored{c.group_by}", params,
            )
        _warn_scoring(con, partials, c, judged_queries, short, rules)
        scored, unjudged, unranked, dropped = (quote_identifier(n) for n in COUNT_COLUMNS)
        means = "".join(
            f", fsum(duckrank_s{i}) / nullif(sum(duckrank_n{i}), 0) AS {quote_identifier(m)}"
            for i, m in enumerate(labels)
        )
        summary = (
            f"SELECT {c.by_select}sum(scored)::BIGINT AS {scored}, "
            f"sum(unjudged)::BIGINT AS {unjudged}, "
            f"({_UNRANKED})::BIGINT AS {unranked}, "
            f"(sum(dropped) + $qrels_dropped)::BIGINT AS {dropped}{means} FROM {partials}"
            f"{c.group_by}"
        )
        if beyond_table is not None:
            same_group = " AND ".join(f"s.{name} IS NOT DISTINCT FROM b.{name}"
                                      for name in map(quote_identifier, c.by)) or "true"
            appended = "".join(f", b.duckrank_b{n} AS {quote_identifier(r.text)}"
                               for n, r in enumerate(beyond))
            summary = (f"SELECT s.*{appended} FROM ({summary}) s "
                       f"LEFT JOIN {beyond_table} b ON {same_group}")
        summary += " ORDER BY ALL" if c.by else ""
        params = {"judged": judged_queries, "qrels_dropped": profile.dropped}
        columns = [*c.by, *COUNT_COLUMNS, *labels, *(r.text for r in beyond)]
        yield Result(columns, con, lambda: iter([(summary, params)]))
    finally:
        for name in dropped_objects:
            con.execute(f"DROP {name}")
        for name in registered:
            con.unregister(name)


def evaluate(
    run: Any,
    qrels: Any,
    metrics: Sequence[str] | str,
    by: str | Sequence[str] | None = None,
    *,
    per_user: bool = False,
    query_column: str | None = None,
    item_column: str | None = None,
    score_column: str | None = None,
    rank_column: str | None = None,
    grade_column: str | None = None,
    run_columns: Mapping[str, str] | None = None,
    qrels_columns: Mapping[str, str] | None = None,
    ids: str = "typed",
    glob: bool = False,
    convention: str = "duckrank",
    other: Any = None,
    train: Any = None,
    catalog: Any = None,
    catalog_size: int | None = None,
    embeddings: Any = None,
    categories: Any = None,
    propensities: Any = None,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> pandas.DataFrame | polars.DataFrame:
    """Score ``run`` against ``qrels`` and return a pandas DataFrame with one column per metric
    (a polars DataFrame when ``run`` or ``qrels`` is one: polars users need no pandas).

    ``run``: a table with one row per (query, item, score); ``qrels``: one row per (query, item,
    grade). Either may be a pandas or polars DataFrame, a pyarrow Table / Dataset / RecordBatch
    reader (DuckDB reads them in place; a reader is read into memory first), a DuckDB relation of
    ``connection``, or the path of a Parquet, CSV or TREC file. ``metrics``: requests such as
    ``"ndcg@10"``, ``"map@100"`` or ``"ndcg(gain=linear)@10"`` (see ``parse_metric``). ``by``:
    column(s) of the run to report one row per group of (a system, a segment). ``per_user``: one
    row per query instead of means.

    Columns default to ``query`` (or ``user``), ``item``, ``score`` and ``grade``;
    ``query_column=`` ... ``grade_column=`` name them for both files, ``run_columns=`` /
    ``qrels_columns=`` (``{'query': 'user_id'}``; roles ``RUN_ROLES`` / ``QRELS_ROLES``) for one
    file. ``rank_column=`` ranks the run by an ascending rank (1 = best) instead of a score. A
    qrels table without a grade column counts every row as relevant. ``ids='varchar'`` compares
    query and item ids as text when the two files type them differently. A path names one file
    (``*``, ``?`` and ``[`` are part of its name); ``glob=True`` reads every file matching it.

    Graded qrels (a grade other than 0 or 1) are passed as a MAP item -> grade to the metrics
    that take one, and the column says so (``ndcg@10`` -> ``ndcg(gain=exponential)@10``);
    ``ndcg(relevance=binary)@10`` or ``ndcg(min_grade=2)@10`` ask for the binary reading. Binary
    metrics get the items with grade > 0 (or >= ``min_grade``).

    ``convention="trec_eval"`` reads what the metrics leave open as trec_eval does
    (``CONVENTIONS``; docs/trec_eval.md): precision divides by k, ndcg gains are the grades, a
    judged query whose value is undefined (no relevant item) scores 0 and counts in the mean,
    scores tie when equal as single-precision floats, relevant means grade >= 1, and ndcg
    without a cut-off ranks every relevant item in its ideal list.

    Beyond-accuracy requests (``catalog_coverage@10``, ``arp@10``, ``rbo(p=0.8)@10``,
    ``ips_recall@10``, ...; docs/beyond-accuracy.md) come after the accuracy columns, named as
    written, computed by ``duckrank.engines.beyond_accuracy.beyond_values`` (the numbers of
    ``duckrank.reports.beyond_accuracy.beyond_accuracy``) from the run's lists as ranked here
    (rows with a NULL query, item or score left out) over every user of the run, judged or not:
    catalogue metrics one value, per-user ones averaged over the users (undefined values
    skipped), list similarities over the users both runs have; ``serendipity`` and ``ips_*``
    read the qrels' relevant items (grade > 0; grade >= 1 under trec_eval's convention). With
    ``by``, one value per group, from the group's rows alone; with ``per_user=True`` they are an
    error (a per-user value is the metric's SQL table macro). What they read: ``other``, a
    second system's run with the run's columns (``overlap_at``, ``jaccard_at``, ``rbo``), and
    the side tables ``train`` (user, item), ``catalog`` (item) or ``catalog_size``,
    ``embeddings`` (item, embedding), ``categories`` (item, category), ``propensities`` (item,
    propensity; else estimated from ``train``), whose user and item columns are named as the
    run's; each a Parquet or CSV path, a relation of ``connection``, or a data frame. A request
    whose input is not given is an error naming the argument.
    """
    from duckrank.engines.duckdb import connect, register

    if isinstance(metrics, str):
        metrics = [metrics]
    if isinstance(by, str):
        by = [by]
    names = column_names(
        {"query": query_column, "item": item_column, "score": score_column,
         "rank": rank_column, "grade": grade_column},
        run_columns, qrels_columns,
    )
    con = (register(connection) if connection is not None
           else connect(functions=needed_functions(metrics, convention)))
    try:
        side = SideInputs(other, train, catalog, catalog_size, embeddings, categories,
                          propensities)
        with evaluation(con, run, qrels, metrics, by or (), per_user, names, ids,
                        glob=glob, convention=convention, side=side) as result:
            return result.df(polars=is_polars(run) or is_polars(qrels))
    finally:
        if connection is None:
            con.close()
