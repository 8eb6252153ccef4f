"""The metric-request language and the peer conventions: what an evaluation is asked to compute.

Metric requests are written ``name[(option=value, ...)][@k]`` (``ndcg@10``, ``map@100``,
``ndcg(gain=linear)@10``); a list or range of cut-offs is one request per cut-off
(``ndcg@1,5,10``, ``recall@1..100``, ``expand_metric``). Names, aliases, options and their
choices come from the metric records (``duckrank.metrics``), so every metric in the registry
is available without code here; three options belong to the evaluation itself:
``relevance=binary|graded`` (which reading of graded qrels), ``min_grade=G`` (relevant means
grade >= G in the binary reading) and ``gains={grade: gain, ...}`` (the grades mapped before a
graded metric reads them: ir_measures' nDCG gains=). The intent-aware measures read the qrels'
subtopic judgments (truth form 'subtopics'). Beyond-accuracy requests (``arp@10``,
``rbo(p=0.8)@10``) are told apart here (``split_metrics``) and parsed by
``duckrank.engines.beyond_accuracy``.

A peer's measure name is translated first (``duckrank.evaluation.peer_names``): ir_measures'
names as it spells them (``nDCG@10``, ``P(rel=2)@5``, ``AP``, ``Judged@10``, ...) and ranx's
``f1`` and ``hits`` mean what they mean there, whatever the convention. The recommender
libraries' names (``HR@10``, ``MIUF@10``, ``rectools:NDCG@10``: ``duckrank.evaluation.aliases``)
are read before everything else, and a name that is no one's gets the closest known names
("did you mean").

A ``Convention`` says how an evaluation reads what the metrics leave open: duckrank's own,
trec_eval's or ir_measures' (``CONVENTIONS``; docs/trec_eval.md, docs/conventions.md).
"""

from __future__ import annotations

import difflib
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from duckrank.engines.beyond_accuracy import Request, parse_request
from duckrank.evaluation.aliases import (
    PEERS,
    SHORTHANDS,
    aliases_of,
    by_spelling,
    reading_list,
    request_text,
    shared_readings,
    split_qualifier,
)
from duckrank.evaluation.peer_names import (
    IR_MEASURES,
    IR_MEASURES_ALIASES,
    RANX,
    parse_gains,
    peer_measure,
    split_assignments,
    translate,
)
from duckrank.metrics import METRICS, by_name
from duckrank.metrics.inputs import INPUT_KINDS
from duckrank.metrics.record import Metric, Option
from duckrank.render.beyond_accuracy import RECORDS as BEYOND_RECORDS
from duckrank.render.spelling import PYTHON, Spelling

# --- metric requests ------------------------------------------------------------------------------

# A name is a word (``[^\W\d]\w*``: ir_measures' ``α_nDCG`` included).
_REQUEST = re.compile(
    r"^\s*(?P<name>[^\W\d]\w*)\s*(?:\((?P<options>[^()]*)\))?\s*(?:@\s*(?P<k>\S+))?\s*$"
)


# Input kinds whose untyped truth is a LIST of relevant item ids (other untyped truths are
# preferences or Hivemall's lists of grades, which qrels cannot give).
LIST_TRUTH_INPUTS = tuple(name for name, kind in INPUT_KINDS.items() if kind.list_truth)

# The input kind (and truth form) of the intent-aware measures (duckrank.metrics.diversity).
SUBTOPICS = "subtopics"

# Options of the evaluation, not of a SQL function: how graded qrels are read.
RELEVANCE = Option(
    "relevance", "", "binary: the items of grade > 0 (or >= min_grade) as a LIST; graded: the "
    "grades as a MAP item -> grade", choices=("binary", "graded"),
)
# (Its default only marks it as a number: without min_grade, relevant means grade > 0.)
REQUEST_MIN_GRADE = Option("min_grade", 1, "relevant means grade >= min_grade (binary reading)")
# ir_measures' nDCG gains=, for the functions of a gain curve (a ``gain`` option: ndcg, dcg,
# ndcg's judged-only form, graded_rbp): the grades mapped before the MAP truth is built.
REQUEST_GAINS = Option("gains", "", "a map {grade: gain, ...} applied to the qrels' grades "
                       "before the metric reads them (graded reading; a grade not in it keeps "
                       "its value)")

# Options that change a graded value but not a binary one (2^1 - 1 = 1): a label names them when
# graded qrels are read as grades, so that ndcg@10 over graded qrels cannot pass for the binary
# ndcg@10 or for trec_eval's linear-gain one.
GRADED_LABEL_OPTIONS = ("gain",)
# Options whose default is a guess about the data, named in every label that leaves them out:
# err's max_grade (4, Chapelle's 0..4 scale) scales every value, binary ones too (a hit is worth
# (2^1 - 1) / 2^4), whatever grades the qrels hold; the C/W/L measures' max_rel (1: binary
# qrels) clips every grade above it to gain 1.
LABEL_OPTIONS = ("max_grade", "max_rel")


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
    # NIST's trec_eval 10.0 (what `duckrank trec_eval` prints by default): scores compared as
    # doubles, interpolated precision's recall cut-off rounded.
    "trec_eval": Convention(
        "trec_eval",
        {"precision_at": {"denominator": "k"}, "ndcg": {"gain": "linear"},
         "dcg": {"gain": "linear"}, "iprec_at_recall": {"rounding": "nearest"},
         "eleven_point_ap": {"rounding": "nearest"}},
        undefined_as_zero=True, relevant="g >= 1", full_ideal=("ndcg",), score_unranked=False,
    ),
    # trec_eval 9.0.8's code, as pytrec-eval-terrier runs it (`duckrank trec_eval --compat
    # 9.0.8`): scores compared as C floats, the recall cut-off truncated after adding 0.9.
    "pytrec_eval": Convention(
        "pytrec_eval",
        {"precision_at": {"denominator": "k"}, "ndcg": {"gain": "linear"},
         "dcg": {"gain": "linear"}},
        undefined_as_zero=True, float_scores=True, relevant="g >= 1", full_ideal=("ndcg",),
        score_unranked=False,
    ),
    # ir_measures' reading: trec_eval's (its pytrec_eval provider), except that every judged
    # query counts: one the run has no list for scores its measure's DEFAULT, 0
    # (ir_measures/providers/base.py, Evaluator.iter_calc), as an empty list does here. Its
    # measure names translate to their functions and options under every convention
    # (duckrank.evaluation.peer_names).
    "ir_measures": Convention(
        "ir_measures",
        {"precision_at": {"denominator": "k"}, "ndcg": {"gain": "linear"},
         "dcg": {"gain": "linear"}},
        undefined_as_zero=True, float_scores=True, relevant="g >= 1", full_ideal=("ndcg",),
        score_unranked=True,
    ),
}


class PeerConventionWarning(UserWarning):
    """A peer's measure name (``nDCG@10``) evaluated under duckrank's convention: its per-query
    values are the peer's, its mean may not be."""


class AmbiguousNameWarning(PeerConventionWarning):
    """A name the libraries compute differently (``NDCG@10``, ``MAP@10``) read as ir_measures'
    measure; the message names each recommender library's form (``rectools:NDCG@10``)."""


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
    """'list' for a LIST of relevant item ids, 'map' for a MAP item -> grade, 'subtopics' for
    the subtopic judgments (a LIST of STRUCT(subtopic, item, grade): qrels with a subtopic
    column), None for a truth that qrels cannot give."""
    if metric.inputs == SUBTOPICS:
        return SUBTOPICS
    if metric.truth_type == "" and metric.kind.list_truth:
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
    peer: str = ""  # the library whose measure name was written ("ir_measures", "ranx")
    gains: tuple[tuple[float, float], ...] = ()  # (grade, gain) pairs: REQUEST_GAINS

    def forms(self) -> set[str]:
        """The truth forms of the overloads that take the options given."""
        given = {name for name, _ in self.options}
        return {
            form for m in self.overloads
            if given <= {o.name for o in m.options} and (form := _truth_form(m)) is not None
        }

    def truth_form(self, graded: bool) -> str:
        """Which truth to pass: 'map' (item -> grade) or 'list' (the relevant items), or
        'subtopics' for the intent-aware measures. Graded qrels go as grades to the functions
        that take them unless the binary reading is asked for (``relevance=binary`` or
        ``min_grade``); binary qrels and binary-only functions get the list."""
        forms = self.forms()
        if SUBTOPICS in forms:
            return SUBTOPICS
        if self.relevance == "graded" or self.gains:
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
        """Whether its MAP truth goes to a gain function (``InputKind.reads_gains``, inputs
        'grades': ndcg, dcg, err, half_life_utility), which refuses a negative grade; the other
        MAP functions read the grades as given (trec_eval's measures: a negative grade is in the
        pool but unjudged)."""
        return any(m.kind.reads_gains for m in self.overloads if _truth_form(m) == "map")


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
    rest = split_qualifier(text)[1]  # rectools:NDCG@5,10 is expanded as NDCG@5,10
    match = _REQUEST.match(rest)
    if match is None or match["k"] is None or not re.search(r",|\.\.", match["k"]):
        return [text]
    prefix = text[:len(text) - len(rest) + match.start("k")]
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
    requests = list({r.label: r.with_defaults(convention.options.get(r.name, {}))
                     for r in (parse_metric(one) for text in texts
                               for one in expand_metric(text))}.values())
    _ambiguous_warning(requests)
    peers = [r.label for r in requests if r.peer == "ir_measures"]
    if peers and convention.name == "duckrank":
        warnings.warn(
            f"{', '.join(peers)}: ir_measures' measures, each query's value as ir_measures "
            "computes it where it is defined; where a judged query has no relevant item it is "
            "NULL and left out of the mean here, 0 and counted there (and nDCG without a "
            "cut-off ranks every relevant item in its ideal list there, as many as the list "
            "is long here): convention='ir_measures' reads these as ir_measures does",
            PeerConventionWarning, stacklevel=4)
    return requests


_BEYOND_NAMES = frozenset(m.name for m in BEYOND_RECORDS)


def is_beyond(text: str) -> bool:
    """Whether ``text`` requests a beyond-accuracy metric (``arp@10``, ``rbo(p=0.8)@10``: a name
    of ``docs/beyond-accuracy.md``), which ``beyond_values`` computes instead of a SQL function
    over (rec, truth)."""
    try:
        resolved, _ = _resolve(text)
    except ValueError:  # parse_metric says why
        return False
    match = _REQUEST.match(resolved)
    return match is not None and match["name"].lower() in _BEYOND_NAMES


# --- the libraries' names and "did you mean" ------------------------------------------------------

# duckrank's own names as it spells them (lower case): never another library's.
_OWN_NAMES = frozenset(n for m in METRICS for n in m.cli_names)


def _resolve(text: str) -> tuple[str, str]:
    """(the request to read, the library whose name it is: a key of ``aliases.PEERS``,
    "ir_measures" when qualified so, "" otherwise). A name is duckrank's when spelt as duckrank
    spells it, else ir_measures' or ranx's when theirs (``peer_names``), else a recommender
    library's when spelt as that library spells it, else duckrank's again (its names are read
    without case): ``ndcg`` is duckrank's, ``NDCG`` ir_measures', ``PAP`` RecTools'."""
    library, rest = split_qualifier(text)
    match = _REQUEST.match(rest)
    if match is None:
        return text, ""  # parse_metric says how to write a request
    name, label = match["name"], text.strip()
    if library == "ir_measures":
        if name not in IR_MEASURES and name not in IR_MEASURES_ALIASES:
            raise ValueError(f"metric {label!r}: ir_measures has no measure {name!r}"
                             + _suggestion(name, {*IR_MEASURES, *IR_MEASURES_ALIASES}))
        return rest, library
    if library is not None:
        alias = aliases_of(library).get(name.lower())
        if alias is None:
            names = {a.name for a in aliases_of(library).values()}
            raise ValueError(f"metric {label!r}: duckrank reads no {PEERS[library]} metric "
                             f"named {name!r}; its names: {', '.join(sorted(names))}"
                             + _suggestion(name, names))
        return request_text(alias, label, match["options"], match["k"]), library
    if name in _OWN_NAMES or name in _BEYOND_NAMES or peer_measure(name) is not None:
        return text, ""
    if name in SHORTHANDS:
        return rest[:match.start("name")] + SHORTHANDS[name] + rest[match.end("name"):], ""
    found = by_spelling().get(name)
    if found is None:
        return text, ""
    if len(shared_readings(found)) > 1:
        raise ValueError(f"metric {label!r}: the libraries that call a metric {name} compute "
                         f"different numbers; name the library: {reading_list(found)}")
    return request_text(found[0], label, match["options"], match["k"]), found[0].library.lower()


def _ambiguous_warning(requests: Sequence[MetricRequest]) -> None:
    """Warn for each bare name read as ir_measures' measure (``MAP@10``) that the recommender
    libraries compute differently among themselves, naming each one's form."""
    for request in requests:
        if request.peer != "ir_measures" or split_qualifier(request.label)[0] is not None:
            continue
        name = _REQUEST.match(request.label)["name"]
        found = by_spelling().get(name, [])
        if len(shared_readings(found)) > 1:
            warnings.warn(
                f"{request.label}: read as ir_measures' {name} (docs/conventions.md); the "
                f"recommender libraries' {name} differ: {reading_list(found)}; write the "
                f"library before the name for its number (ir_measures:{name} for this one)",
                AmbiguousNameWarning, stacklevel=4)


def _accepted_names() -> set[str]:
    """Every name a request may start with: duckrank's, its beyond-accuracy metrics',
    ir_measures' and ranx's, and the recommender libraries'."""
    return {*known_metric_names(), *_BEYOND_NAMES, *IR_MEASURES, *IR_MEASURES_ALIASES, *RANX,
            *by_spelling(), *SHORTHANDS}


def closest_names(name: str, names: set[str] | None = None) -> list[str]:
    """The known names closest to ``name`` (difflib, without regard to case; every spelling of
    each: ``ndgc`` -> ndcg, NDCG, nDCG), of ``names`` or else of every accepted name."""
    spellings: dict[str, set[str]] = {}
    for known in _accepted_names() if names is None else names:
        spellings.setdefault(known.lower(), set()).add(known)
    close = difflib.get_close_matches(name.lower(), spellings, n=3, cutoff=0.6)
    return [spelling for key in close for spelling in sorted(spellings[key])]


def _suggestion(name: str, names: set[str] | None = None) -> str:
    close = closest_names(name, names)
    return f"; did you mean {', '.join(close)}?" if close else ""


def split_metrics(texts: Sequence[str], convention: Convention = CONVENTIONS["duckrank"]
                  ) -> tuple[list[MetricRequest], list[Request]]:
    """The accuracy requests (``parse_metrics``) and the beyond-accuracy ones
    (``duckrank.engines.beyond_accuracy.parse_request``), each after ``expand_metric``
    (``arp@5,10`` is two requests) and once. A library's beyond-accuracy name is labelled by
    the request it becomes (``MIUF@10`` -> ``self_information@10``): ``beyond_values`` reads
    each request's text again."""
    expanded = [one for text in texts for one in expand_metric(text)]
    resolved = [_resolve(text)[0].strip() for text in expanded if is_beyond(text)]
    beyond = {text: parse_request(text) for text in resolved}
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
        with warnings.catch_warnings():  # the evaluation warns, once
            warnings.simplefilter("ignore", PeerConventionWarning)
            accuracy, beyond = split_metrics(metrics, convention_named(convention))
    except ValueError:
        return None
    names = [*(request.name for request in accuracy), *(request.metric.name for request in beyond)]
    return [*_EVALUATION_FUNCTIONS, *dict.fromkeys(names)]


def _peer_request(text: str, match: re.Match) -> MetricRequest | None:
    """The request for a peer's measure name (``nDCG@10``, ``P(rel=2)@5``: ``peer_names``),
    labelled as written; None for duckrank's own names."""
    translated = translate(text.strip(), match["name"], match["options"], match["k"])
    if translated is None:
        return None
    request = parse_metric(translated)
    peer, _ = peer_measure(match["name"])
    return replace(request, label=text.strip(), peer=peer)


def parse_metric(text: str) -> MetricRequest:  # noqa: C901
    """Parse ``name[(option=value, ...)][@k]`` against the metric records; a peer's measure
    name (``nDCG@10``, ``P(rel=2)@5``, ``f1@10``) is translated first (``peer_names``)."""
    resolved, library = _resolve(text)
    if library:
        request = parse_metric(resolved)
        return replace(request, label=text.strip(), peer=PEERS.get(library, request.peer))
    match = _REQUEST.match(text)
    if match is None:
        raise ValueError(
            f"cannot read metric {text!r}: write name[@k] or name(option=value, ...)[@k], "
            "e.g. ndcg@10 or ndcg(gain=linear)@10"
        )
    peer = _peer_request(text, match)
    if peer is not None:
        return peer
    try:
        record = by_name(match["name"])
    except KeyError:
        close = closest_names(match["name"])
        guess = f"metric {text.strip()!r}: did you mean {', '.join(close)}? " if close else ""
        raise ValueError(
            f"{guess}unknown metric {match['name']!r}; known metrics: "
            f"{', '.join(known_metric_names())}; "
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
        known["min_grade"] = REQUEST_MIN_GRADE
    if any(o.name == "gain" for m in overloads if _truth_form(m) == "map" for o in m.options):
        known["gains"] = REQUEST_GAINS
    written: dict[str, str] = {}
    values: dict[str, str | int | float] = {}
    for assignment in split_assignments(match["options"]):
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
    gains = parse_gains(text.strip(), str(values.pop("gains"))) if "gains" in values else ()
    # min_grade is the binary reading's where there is one; else the function's own option
    # (bpref, infap: their MAP truth reads it).
    min_grade = values.pop("min_grade", None) if "list" in forms else None
    if (relevance == "graded" or gains) and min_grade is not None:
        raise ValueError(f"metric {text!r}: min_grade sets what counts as relevant in the binary "
                         "reading; it does not go with relevance=graded or gains")
    if gains and relevance == "binary":
        raise ValueError(f"metric {text!r}: gains maps the grades of the graded reading; it does "
                         "not go with relevance=binary")
    return MetricRequest(
        label=text.strip(), name=record.name, k=k, options=tuple(values.items()),
        overloads=overloads, relevance=relevance, min_grade=min_grade,
        written_name=match["name"], written_options=tuple(written.items()),
        written_k=match["k"], gains=gains,
    )
