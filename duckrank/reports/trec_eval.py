"""``duckrank trec_eval``: trec_eval's command, its measures and its output, computed in DuckDB.

``duckrank trec_eval [-q] [-c] [-n] [-M N] [-l N] [-m MEASURE[.PARAMS]]... QRELS RUN`` reads the
files as trec_eval reads them (``duckrank.files.trec``) and prints what trec_eval prints:
``measure<TAB>query<TAB>value`` lines, the measure name padded to 22 characters, floats with 4
decimals (C's ``%6.4f``), counts as integers, the run's tag on the ``runid`` line, ``all`` for the
summary. What follows is trec_eval's (usnistgov/trec_eval, ``trec_eval.c``, ``form_res_rels.c``,
``meas_init.c``, ``meas_avg.c``, ``meas_print_*.c``), and docs/trec_eval.md says it in full:

* Each query's documents are ranked by score, highest first, the score read as a C ``float``
  (single precision: scores equal in their first 7 digits tie), ties broken by document id,
  descending (byte order); the rank column is ignored. ``-M N`` keeps the first N.
* A query is evaluated when it is in both files (``-c``: every query of the qrels; a query the run
  lacks scores 0 on every measure but ``num_rel``). Queries with no relevant document score 0 and
  count in the means. Relevant means grade >= ``-l`` (default 1); a negative grade is a judged
  non-relevant document.
* Measures are printed in trec_eval's order (``MEASURES``) whatever the order of ``-m``;
  queries in id order (byte order), per query with ``-q``, then the summary over the evaluated
  queries (``-n``: none): the mean, the sum for the ``num_*`` counts, the geometric mean
  (values below 0.00001 count as 0.00001) for ``gm_*``.
* A document twice in one query's ranking (among the first N with ``-M``) or in one query's
  judgments is an error, as in trec_eval.

Each measure is a duckrank SQL function over the query's lists (``MEASURES``: trec_eval's name,
its parameters and the call); every value of every query is computed by one DuckDB query over
per-query lists, and the output lines are formatted by DuckDB's ``printf``. The binary measures
read one match per query (``formula_macros``), and the command registers only the functions its
measures call (``needed_functions``). A measure whose
duckrank function is missing from this build is an error naming it (``MissingMeasure``), never a
number. The formula macros' SQL text is written by ``duckrank.render.trec_eval``; the command's
flags are parsed by ``duckrank.cli``, which calls ``write_lines``.
"""

from __future__ import annotations

import math
import re
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb

from duckrank.engines.duckdb import connect
from duckrank.evaluation import float_score_sql
from duckrank.files.trec import LATIN1, UTF8, check_order, encoding, file_paths
from duckrank.metrics import METRICS
from duckrank.render.quoting import quote_identifier
from duckrank.render.trec_eval import FORMULA, HITS
from duckrank.render.trec_eval import formula_macros as _formula_macros

# trec_eval's MIN_GEO_MEAN: the geometric means count a value below it as this value.
MIN_GEO_MEAN = 0.00001


class MissingMeasure(ValueError):
    """A trec_eval measure whose duckrank SQL function (or one of its options) this build lacks."""


# --- the per-query lists the measures read --------------------------------------------------------
# duckrank_rec: the ranked document ids (after -M); duckrank_rel: the ids of grade >= the
# relevance level; duckrank_grades: every judgment, id -> grade (negative grades kept);
# duckrank_gains: the same with negative grades as 0 (trec_eval's ndcg gains).
REC, REL, GRADES, GAINS = "duckrank_rec", "duckrank_rel", "duckrank_grades", "duckrank_gains"
# The query's match of duckrank_rec against duckrank_rel (duckrank_matched, the binary metrics'
# matching step, over the whole ranking): the STRUCT (K, pos, n, cut) their formulas read.
MATCH = "duckrank_match"
# The binary metrics read the match through TEMP macros of their record's formula, named
# FORMULA + the metric's name (``duckrank.render.trec_eval``; ``HITS``: those metrics).


def _match_at(k: str | None) -> str:
    """The query's match cut at ``k`` (a validated positive integer): the positions up to k,
    what the matching step gives for that cut-off; the whole match without one."""
    if k is None:
        return MATCH
    return (f"struct_pack(K := least({MATCH}.K, {k}), pos := list_filter({MATCH}.pos, "
            f"lambda duckrank_q: duckrank_q <= {k}), n := {MATCH}.n, cut := {k})")


@dataclass(frozen=True)
class Call:
    """A call of a duckrank SQL function: ``function(rec, truth[, k], option := value, ...)``;
    ``min_grade`` (the relevance level) is added for a graded truth that needs it."""

    function: str
    truth: str = REL
    options: tuple[str, ...] = ()
    min_grade: bool = False

    def shared(self) -> bool:
        """Whether the value is the metric's formula over the query's match (``MATCH``),
        rather than a call of its macro that matches again."""
        return self.truth == REL and not self.min_grade and self.function in HITS

    def sql(self, k: str | None = None, **values: str) -> str:
        options = [f"{name} := {values[name]}" for name in self.options]
        if self.shared():
            arguments = [_match_at(k), *options]
            return f"{quote_identifier(FORMULA + self.function)}({', '.join(arguments)})"
        arguments = [REC, self.truth] + ([k] if k is not None else []) + options
        if self.min_grade:
            arguments.append("min_grade := $level")
        return f"{quote_identifier(self.function)}({', '.join(arguments)})"

    def missing(self) -> str | None:
        """Why this build cannot make the call (None when it can)."""
        needed = {*self.options, *(("min_grade",) if self.min_grade else ())}
        graded = self.truth != REL
        records = [m for m in METRICS if m.name == self.function]
        for record in records:
            if graded != record.truth_type.upper().startswith("MAP"):
                continue
            if needed <= {o.name for o in record.options}:
                return None
        what = ", ".join([f"{self.truth.removeprefix('duckrank_')} truth",
                          *(f"{o} :=" for o in sorted(needed))])
        if not records:
            return f"duckrank has no SQL function {self.function}"
        return f"duckrank's {self.function} does not take ({what}) in this build"


@dataclass(frozen=True)
class Measure:
    """One trec_eval measure.

    ``params``: how trec_eval reads ``-m name.PARAMS``: ``none``; ``cutoffs`` (positive integers,
    one value each, named ``name_k``); ``levels`` (numbers, one value each, named ``name_%3.2f``);
    ``floats`` / ``pairs`` / ``persistence`` (one value, named ``name_PARAMS`` when PARAMS are
    given: numbers, ``level=gain`` pairs, or rbp's ``p=0.8``). ``value``: ``float``, ``long``
    (a count, printed as an integer) or ``string``. ``summary``: ``mean``, ``sum``, ``gm``
    (geometric mean) or ``none``. ``sql`` makes one value's SQL from one parameter (a cut-off or
    a level as SQL text, the numbers, the pairs, the persistence); ``calls`` are the duckrank
    functions it needs. ``missing``: the value of a query the run lacks (``-c``)."""

    name: str
    sql: Callable[[Any], str]
    calls: tuple[Call, ...] = ()
    params: str = "none"
    default: str = ""
    value: str = "float"
    summary: str = "mean"
    per_query: bool = True
    missing: str = "0"


def _number(value: float) -> str:
    return repr(float(value))


def _zero_if_undefined(call: Call, k: str | None = None, **values: str) -> str:
    # duckrank's NULL (undefined: no relevant document, an empty ranking) is trec_eval's 0.
    return f"coalesce({call.sql(k, **values)}, 0)"


def _log_floor(value_sql: str) -> str:
    return f"ln(greatest({value_sql}, {MIN_GEO_MEAN!r}))"


def _gains_sql(pairs: tuple[tuple[int, float], ...]) -> str:
    """trec_eval's ndcg gains: a level named in ``pairs`` takes its gain, any other grade g >= 0
    gains g, a negative grade 0."""
    if not pairs:
        return GAINS
    cases = " ".join(f"WHEN {level} THEN {_number(gain)}" for level, gain in pairs)
    mapped = f"CASE e.value {cases} ELSE greatest(e.value, 0) END"
    return (f"map_from_entries(list_transform(map_entries({GRADES}), lambda e: "
            f"{{'key': e.key, 'value': {mapped}}}))")


_AP = Call("average_precision")
_PRECISION = Call("precision_at", options=("denominator",))
_RECALL = Call("recall_at")
_MRR = Call("mrr")
_HITRATE = Call("hitrate")
_NDCG = Call("ndcg", truth=GAINS, options=("gain",))
_BPREF = Call("bpref", truth=GRADES, min_grade=True)
_RELSTRING = Call("relstring", GRADES)
_RBP = Call("rbp", options=("persistence",))
_RBP_RESID = Call("rbp_resid", GRADES, ("persistence",))


def _relstring_sql(length: tuple[float, ...]) -> str:
    if length != (10.0,):
        raise MissingMeasure(f"relstring.{length[0]:g}: duckrank's relstring shows the first 10 "
                             "documents only")
    return f"coalesce({_RELSTRING.sql()}, '')"


def _ndcg_sql(pairs: tuple[tuple[int, float], ...]) -> str:
    # trec_eval's ndcg has no cut-off: its ideal ranking holds every document of positive gain,
    # so k is at least their number.
    gains = _gains_sql(pairs)
    k = f"greatest(len({REC}), cardinality({gains}))"
    return _zero_if_undefined(replace(_NDCG, truth=gains), k, gain="'linear'")


# trec_eval 9's table of measures (measures.c), in its order: the order of the output;
# then three of trec_eval 10's.
MEASURES: tuple[Measure, ...] = (
    Measure("runid", lambda _: "NULL", value="string", summary="runid", per_query=False),
    Measure("num_q", lambda _: "1", value="long", summary="count", per_query=False),
    Measure("num_ret", lambda _: Call("num_ret").sql(), (Call("num_ret"),), value="long",
            summary="sum"),
    Measure("num_rel", lambda _: Call("num_rel").sql(), (Call("num_rel"),), value="long",
            summary="sum", missing=Call("num_rel").sql()),
    Measure("num_rel_ret", lambda _: Call("num_rel_ret").sql(), (Call("num_rel_ret"),),
            value="long", summary="sum"),
    Measure("map", lambda _: _zero_if_undefined(_AP), (_AP,)),
    Measure("gm_map", lambda _: _log_floor(_zero_if_undefined(_AP)), (_AP,), summary="gm",
            per_query=False, missing=_log_floor("0")),
    Measure("Rprec", lambda _: _zero_if_undefined(Call("r_precision")), (Call("r_precision"),)),
    Measure("bpref", lambda _: _zero_if_undefined(_BPREF), (_BPREF,)),
    Measure("recip_rank", lambda _: _zero_if_undefined(_MRR), (_MRR,)),
    Measure("iprec_at_recall",
            lambda level: _zero_if_undefined(Call("iprec_at_recall", options=("recall",)),
                                             recall=level),
            (Call("iprec_at_recall", options=("recall",)),),
            params="levels", default="0.0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0"),
    Measure("P", lambda k: _zero_if_undefined(_PRECISION, k, denominator="'k'"),
            (_PRECISION,), params="cutoffs", default="5,10,15,20,30,100,200,500,1000"),
    Measure("relstring", _relstring_sql, (_RELSTRING,), params="floats", default="10",
            value="string", summary="none", missing="''"),
    Measure("recall", lambda k: _zero_if_undefined(_RECALL, k), (_RECALL,),
            params="cutoffs", default="5,10,15,20,30,100,200,500,1000"),
    Measure("infAP", lambda _: _zero_if_undefined(Call("infap", GRADES, min_grade=True)),
            (Call("infap", GRADES, min_grade=True),)),
    Measure("gm_bpref", lambda _: _log_floor(_zero_if_undefined(_BPREF)), (_BPREF,),
            summary="gm", per_query=False, missing=_log_floor("0")),
    Measure("Rprec_mult",
            lambda x: _zero_if_undefined(Call("r_precision_mult", options=("multiplier",)),
                                         multiplier=x),
            (Call("r_precision_mult", options=("multiplier",)),),
            params="levels", default="0.2,0.4,0.6,0.8,1.0,1.2,1.4,1.6,1.8,2.0"),
    Measure("utility",
            lambda p: _zero_if_undefined(Call("utility", options=("a", "b", "c", "d")),
                                         **dict(zip("abcd", map(_number, p), strict=True))),
            (Call("utility", options=("a", "b", "c", "d")),),
            params="floats", default="1.0,-1.0,0.0,0.0"),
    Measure("11pt_avg", lambda _: _zero_if_undefined(Call("eleven_point_ap")),
            (Call("eleven_point_ap"),)),
    Measure("binG", lambda _: _zero_if_undefined(Call("bing", GRADES, min_grade=True)),
            (Call("bing", GRADES, min_grade=True),)),
    Measure("G", lambda _: _zero_if_undefined(Call("normalized_gain", GRADES)),
            (Call("normalized_gain", GRADES),)),
    Measure("ndcg", _ndcg_sql, (_NDCG,), params="pairs"),
    Measure("ndcg_rel", lambda _: _zero_if_undefined(Call("ndcg_rel", GRADES)),
            (Call("ndcg_rel", GRADES),)),
    Measure("Rndcg", lambda _: _zero_if_undefined(Call("rndcg", GRADES, min_grade=True)),
            (Call("rndcg", GRADES, min_grade=True),)),
    Measure("ndcg_cut", lambda k: _zero_if_undefined(_NDCG, k, gain="'linear'"), (_NDCG,),
            params="cutoffs", default="5,10,15,20,30,100,200,500,1000"),
    Measure("map_cut", lambda k: _zero_if_undefined(_AP, k), (_AP,), params="cutoffs",
            default="5,10,15,20,30,100,200,500,1000"),
    Measure("relative_P", lambda k: _zero_if_undefined(Call("relative_precision"), k),
            (Call("relative_precision"),), params="cutoffs",
            default="5,10,15,20,30,100,200,500,1000"),
    Measure("success", lambda k: _zero_if_undefined(_HITRATE, k), (_HITRATE,),
            params="cutoffs", default="1,5,10"),
    Measure("set_P", lambda _: _zero_if_undefined(Call("set_precision")),
            (Call("set_precision"),)),
    Measure("set_relative_P", lambda _: _zero_if_undefined(Call("set_relative_precision")),
            (Call("set_relative_precision"),)),
    Measure("set_recall", lambda _: _zero_if_undefined(Call("set_recall")),
            (Call("set_recall"),)),
    Measure("set_map", lambda _: _zero_if_undefined(Call("set_map")), (Call("set_map"),)),
    Measure("set_F",
            lambda p: _zero_if_undefined(Call("set_f", options=("beta",)), beta=_number(p[0])),
            (Call("set_f", options=("beta",)),), params="floats", default="1.0"),
    Measure("num_nonrel_judged_ret",
            lambda _: _zero_if_undefined(Call("num_nonrel_judged_ret", GRADES,
                                              min_grade=True)),
            (Call("num_nonrel_judged_ret", GRADES, min_grade=True),), value="long",
            summary="sum"),
    # trec_eval 10's measures beyond its all_trec (m_rbp.c, m_rbp_resid.c, m_unjudged.c).
    Measure("rbp", lambda p: _zero_if_undefined(_RBP, persistence=_number(p)), (_RBP,),
            params="persistence"),
    Measure("rbp_resid", lambda p: _zero_if_undefined(_RBP_RESID, persistence=_number(p)),
            (_RBP_RESID,), params="persistence"),
    Measure("unj", lambda k: _zero_if_undefined(Call("unjudged", GRADES), k),
            (Call("unjudged", GRADES),), params="cutoffs", default="5,10,20"),
)
BY_NAME = {m.name: m for m in MEASURES}

NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
                 "bpref", "recip_rank", "iprec_at_recall", "P"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P",
            "set_recall", "set_relative_P", "set_map", "set_F"),
    "all_trec": tuple(m.name for m in MEASURES if m.name not in ("rbp", "rbp_resid", "unj")),
}
# trec_eval's nicknames for its preference formats (-R prefs, qrels_jg), which duckrank lacks.
OTHER_FORMATS = ("all_prefs", "prefs", "qrels_jg")


# --- -m: measure names and parameters -----------------------------------------------------------

@dataclass(frozen=True)
class Value:
    """One printed value: its name (``P_5``), its measure and the parameter of its SQL."""

    name: str
    measure: Measure
    parameter: Any


def _fail(flag: str, message: str) -> ValueError:
    return ValueError(f"{flag}: {message}")


def _cutoffs(flag: str, text: str) -> list[tuple[str, int]]:
    values = []
    for item in text.split(","):
        if not re.fullmatch(r"\+?\d+", item.strip()) or int(item) <= 0:
            raise _fail(flag, f"the cut-off {item!r} is not a positive integer")
        values.append(int(item))
    return [(str(k), k) for k in _sorted_unique(flag, values)]


def _sorted_unique(flag: str, values: list[Any]) -> list[Any]:
    ordered = sorted(values)
    for a, b in zip(ordered, ordered[1:], strict=False):
        if a == b:
            raise _fail(flag, f"the parameter {a} is given twice (trec_eval: duplicate cutoffs)")
    return ordered


def _float(flag: str, item: str) -> float:
    try:
        value = float(item)
    except ValueError:
        raise _fail(flag, f"the parameter {item!r} is not a number") from None
    if not math.isfinite(value):
        raise _fail(flag, f"the parameter {item!r} is not a finite number")
    return value


def _levels(flag: str, text: str) -> list[tuple[str, float]]:
    values = [_float(flag, item) for item in text.split(",")]
    # C's "%3.2f", which names trec_eval's values (iprec_at_recall_0.10).
    return [(f"{x:3.2f}", x) for x in _sorted_unique(flag, values)]


def _pairs(flag: str, text: str) -> tuple[tuple[int, float], ...]:
    pairs = []
    for item in text.split(","):
        level, equals, gain = item.partition("=")
        if not equals or not re.fullmatch(r"\+?\d+", level.strip()):
            raise _fail(flag, f"write gains as level=gain pairs with levels 0 or more, e.g. "
                              f"ndcg.1=3,2=9; got {item!r}")
        value = _float(flag, gain)
        if value < 0:
            raise _fail(flag, f"the gain {gain!r} is negative; duckrank's ndcg takes gains of 0 "
                              "or more")
        pairs.append((int(level), value))
    if len({level for level, _ in pairs}) < len(pairs):
        raise _fail(flag, "a level is given two gains")
    return tuple(pairs)


def _persistence(flag: str, params: str | None) -> float:
    """rbp's ``p=0.8`` (trec_eval 10 reads only p from its pairs; 0.9 by default)."""
    if params is None:
        return 0.9
    name, equals, value = params.partition("=")
    if name != "p" or not equals:
        raise _fail(flag, f"write the persistence as p=VALUE, e.g. -m rbp.p=0.8; got {params!r}"
                          " (duckrank's rbp takes no gains: its relevance is binary)")
    p = _float(flag, value)
    if not 0 < p < 1:
        raise _fail(flag, f"the persistence p must be between 0 and 1, got {value}")
    return p


def _values(measure: Measure, params: str | None, flag: str) -> list[Value]:
    """The printed values of ``measure`` with trec_eval's ``params`` (None: its defaults)."""
    text = measure.default if params is None else params
    if measure.params == "cutoffs":
        return [Value(f"{measure.name}_{n}", measure, k) for n, k in _cutoffs(flag, text)]
    if measure.params == "levels":
        return [Value(f"{measure.name}_{n}", measure, x) for n, x in _levels(flag, text)]
    if params is not None and measure.params == "none":
        raise _fail(flag, f"trec_eval's {measure.name} takes no parameters")
    name = measure.name if params is None else f"{measure.name}_{params}"
    if measure.params == "pairs":
        return [Value(name, measure, _pairs(flag, params) if params is not None else ())]
    if measure.params == "persistence":
        return [Value(name, measure, _persistence(flag, params))]
    if measure.params == "floats":
        numbers = tuple(_float(flag, item) for item in text.split(","))
        expected = len(measure.default.split(","))
        if len(numbers) != expected:
            raise _fail(flag, f"{measure.name} takes {expected} number(s), got {len(numbers)}")
        return [Value(name, measure, numbers)]
    return [Value(name, measure, None)]


def requested_values(requests: Sequence[str]) -> list[Value]:  # noqa: C901
    """The values trec_eval prints for these ``-m`` requests (none: ``official``), in its order.
    A request is a measure, a nickname (``official``, ``set``, ``all_trec``) or a measure with
    parameters after the first dot (``P.5,10``, ``iprec_at_recall..10,.20``,
    ``ndcg.1=3,2=9``, ``set_F.0.5``); as in trec_eval, a measure named again without parameters
    keeps the ones given."""
    wanted: set[str] = set()
    params: dict[str, tuple[str, str]] = {}
    for request in requests or ["official"]:
        flag = f"-m {request}"
        name, dot, text = request.partition(".")
        if dot and not text:
            raise _fail(flag, "no parameters after the dot (trec_eval: improper measure)")
        if name in OTHER_FORMATS:
            raise _fail(flag, f"{name} is a set of trec_eval's preference measures, which need "
                              "its -R prefs formats; duckrank reads qrels only")
        if name in NICKNAMES:
            if dot:
                raise _fail(flag, f"{name} is a set of measures; it takes no parameters")
            wanted.update(NICKNAMES[name])
            continue
        if name not in BY_NAME:
            known = ", ".join([*NICKNAMES, *BY_NAME])
            raise _fail(flag, f"trec_eval has no measure {name!r} (names are case-sensitive); "
                              f"known: {known}")
        wanted.add(name)
        if dot:
            if name in params and params[name][1] != text:
                raise _fail(flag, f"trec_eval reads only the first parameters given for {name} "
                                  f"({params[name][0]}); give them all at once, e.g. "
                                  f"-m {name}.{params[name][1]},{text}")
            params[name] = (f"-m {request}", text)
    values = []
    for measure in MEASURES:
        if measure.name in wanted:
            flag, text = params.get(measure.name, (f"-m {measure.name}", None))
            values.extend(_values(measure, text, flag))
    return values


def check_available(values: Sequence[Value]) -> None:
    """Raise ``MissingMeasure`` naming every requested measure this build cannot compute."""
    problems = {}
    for value in values:
        for call in value.measure.calls:
            reason = call.missing()
            if reason is not None:
                problems.setdefault(value.measure.name, reason)
    if problems:
        listed = "; ".join(f"{name} ({reason})" for name, reason in problems.items())
        raise MissingMeasure(f"trec_eval measures not available in this duckrank build: {listed}")


def _calls(values: Sequence[Value]) -> list[Call]:
    return list(dict.fromkeys(call for value in values for call in value.measure.calls))


def needed_functions(values: Sequence[Value]) -> list[str]:
    """The duckrank SQL functions computing ``values`` takes: the file readers, the ranking, the
    matching step and the measures' functions (``connect(functions=...)`` registers just those,
    in a tenth of the time of every function)."""
    calls = [call.function for call in _calls(values)]
    return list(dict.fromkeys(["read_trec_run", "read_trec_qrels", "to_ordered_list",
                               "duckrank_matched", *calls]))


def formula_macros(values: Sequence[Value]) -> dict[str, str]:
    """The CREATE statements, by macro name, of TEMP macros
    ``duckrank_trec_eval_<metric>(match, options...)``, one per binary metric that ``values``
    read from the shared match (``duckrank.render.trec_eval`` writes them)."""
    return _formula_macros(c.function for c in _calls(values) if c.shared())


# --- the computation -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Options:
    """trec_eval's flags: ``-q`` per_query, ``-c`` complete, ``-n`` not summary, ``-M``
    max_docs, ``-l`` level."""

    per_query: bool = False
    complete: bool = False
    summary: bool = True
    max_docs: int | None = None
    level: int = 1


def _check_options(options: Options) -> None:
    if options.max_docs is not None and options.max_docs < 1:
        raise ValueError(f"-M {options.max_docs}: the documents kept per query must be 1 or "
                         "more (trec_eval's -M 0 divides by zero)")
    if options.level < 0:
        raise ValueError(f"-l {options.level}: the relevance level must be 0 or more (below 0, "
                         "trec_eval counts documents absent from the qrels as relevant)")


def _encoding(qrels: str, run: str) -> str:
    """Both files' encoding: Latin-1 when either is not UTF-8. trec_eval compares ids as bytes;
    read as Latin-1 (each byte one character) both files' ids are equal when their bytes are
    (a UTF-8 file read as UTF-8 and a Latin-1 one as Latin-1 would make 'caf\\xc3\\xa9' equal
    to 'caf\\xe9'), and the lines are written back as the same bytes (``output_bytes``)."""
    return UTF8 if encoding(qrels) == encoding(run) == UTF8 else LATIN1


def output_bytes(line: str, file_encoding: str) -> bytes:
    """A printed line as trec_eval prints it: the ids' bytes as the files hold them."""
    return line.encode(file_encoding)


def run_tag(path: str, file_encoding: str = UTF8) -> str:
    """The tag (6th field) of the run file's last line that is not blank or a comment: what
    trec_eval prints as runid. The file is read backwards from its end, in blocks."""
    with open(path, "rb") as file:
        end = file.seek(0, 2)
        tail = b""
        while True:
            start = max(0, end - 65536)
            file.seek(start)
            tail = file.read(end - start) + tail
            end = start
            lines = tail.split(b"\n")
            complete = lines if start == 0 else lines[1:]
            for line in reversed(complete):
                fields = line.split()
                if fields and not fields[0].startswith(b"#"):
                    return (fields[5].decode(file_encoding, "replace") if len(fields) > 5
                            else "")
            if start == 0:
                return ""


# The lambda parameter that stands for a cut-off or a level in a measure's SQL.
PARAMETER = "duckrank_p"


def _when_ranked(sql: str, missing: str, complete: bool) -> str:
    # Only -c has queries the run lacks: a CASE around every measure costs time otherwise.
    return f"CASE WHEN duckrank_ranked THEN {sql} ELSE {missing} END" if complete else sql


def _columns(values: Sequence[Value], complete: bool) -> tuple[list[str], list[str]]:
    """The per-query columns (SQL, one per measure) and, for each value, the expression that
    reads it from them. A measure of several cut-offs or levels is one call in a lambda over
    them (``list_transform([5, 10], lambda duckrank_p: precision_at(..., duckrank_p, ...))``):
    DuckDB expands a duckrank macro once instead of once per cut-off, which divides the time to
    plan the query by 6 and to run it by 10 for trec_eval's default measures."""
    columns: list[str] = []
    reads: list[str] = []
    for index, value in enumerate(values):
        measure = value.measure
        first = index == 0 or values[index - 1].measure is not measure
        if measure.params in ("cutoffs", "levels"):
            if first:
                group = [v.parameter for v in values if v.measure is measure]
                items = ", ".join(str(p) if measure.params == "cutoffs" else _number(p)
                                  for p in group)
                computed = _when_ranked(measure.sql(PARAMETER), measure.missing, complete)
                columns.append(f"list_transform([{items}], lambda {PARAMETER}: {computed})")
                position = 0
            position += 1
            reads.append(f"m{len(columns) - 1}[{position}]")
        else:
            columns.append(_when_ranked(measure.sql(value.parameter), measure.missing,
                                        complete))
            reads.append(f"m{len(columns) - 1}")
    return columns, reads


def _distinct(ids: str) -> str:
    """The number of distinct ids in the list ``ids``: the n (distinct relevant items) of the
    matching step of the binary metrics, with the list as its own truth and nothing ranked.
    With the native step, 7 times faster than DuckDB's list_unique (0.02 s against 0.15 s on
    1,000 lists of 1,000 ids)."""
    return f"duckrank_matched('trec_eval', {ids}, {ids}, 0).n"


def _per_query_sql(values: Sequence[Value], options: Options) -> str:
    cut = f"[1:{int(options.max_docs)}]" if options.max_docs is not None else ""
    join = "LEFT JOIN" if options.complete else "JOIN"
    columns = ",\n       ".join(f"{sql} AS m{i}" for i, sql in enumerate(
        _columns(values, options.complete)[0]))
    # Only the truths the measures read: a MAP of every judgment costs a third of the time of
    # trec_eval's default measures, which need none.
    truths = {
        GRADES: "map_from_entries(list({'key': item, 'value': grade::DOUBLE}))",
        GAINS: "map_from_entries(list({'key': item, 'value': greatest(grade, 0)::DOUBLE}))",
    }
    built = "".join(f"\n         {sql} AS {name}," for name, sql in truths.items()
                    if name in columns)
    read = "".join(f", {name}" for name in truths if name in columns)
    # The match, once per query, for the formulas that read it (a column of a subquery, so
    # that DuckDB computes it once however many measures read it).
    lists = (f"(SELECT *, duckrank_matched('trec_eval', {REC}, {REL}, len({REC})) AS {MATCH} "
             "FROM lists)" if MATCH in columns else "lists")
    return f"""
WITH ranked AS (
  SELECT query, to_ordered_list(item, {float_score_sql('score')}, '-reverse'){cut} AS {REC}
  FROM read_trec_run($run, file_encoding := $encoding) GROUP BY query
),
judged AS (
  SELECT query,{built}
         coalesce(list(item) FILTER (WHERE grade >= $level), []::VARCHAR[]) AS {REL}
  FROM read_trec_qrels($qrels, file_encoding := $encoding) GROUP BY query
),
lists AS (
  SELECT query, {REC} IS NOT NULL AS duckrank_ranked,
         coalesce({REC}, []::VARCHAR[]) AS {REC}, {REL}{read}
  FROM judged {join} ranked USING (query)
)
SELECT query, len({REC}) > {_distinct(REC)} AS duckrank_duplicate,
       {columns}
FROM {lists}"""


def _check_judged_once(con: duckdb.DuckDBPyConnection, params: dict[str, Any],
                       shown: str) -> None:
    """trec_eval's error for a document twice in one query's judgments (``shown``: the qrels
    path as given). Checked before the measures are computed: the MAP of a query's judgments
    that the graded measures read would fail first, with DuckDB's bare "Map keys must be
    unique" naming no file, query or document."""
    # A second pass over the qrels: a flag carried by the query (a window over every query of
    # the qrels, also those the run lacks) took 40% more memory at 10,000,000 run lines.
    found = con.execute(
        "SELECT query, item, count(*) FROM read_trec_qrels($qrels, file_encoding := $encoding) "
        "GROUP BY query, item HAVING count(*) > 1 ORDER BY query, item LIMIT 1",
        {"qrels": params["qrels"], "encoding": params["encoding"]}
    ).fetchall()
    if found:
        query, item, times = found[0]
        count = "twice" if times == 2 else f"{times} times"
        raise ValueError(f"the qrels file {shown!r} judges document {item!r} {count} for query "
                         f"{query!r} (trec_eval: duplicate docs); keep one judgment")


def _check_ranked_once(con: duckdb.DuckDBPyConnection, table: str,
                       params: dict[str, Any], options: Options, shown: str) -> None:
    """trec_eval's error for a document twice in one query's ranking (``shown``: the run path
    as given)."""
    queries = con.execute(f"SELECT query FROM {table} WHERE duckrank_duplicate ORDER BY query "
                          "LIMIT 1").fetchall()
    if queries:
        where = f" among its first {options.max_docs}" if options.max_docs is not None else ""
        item = con.execute(
            "SELECT item FROM read_trec_run($run, file_encoding := $encoding) WHERE query = $query "
            "GROUP BY item "
            "HAVING count(*) > 1 ORDER BY item LIMIT 1",
            {"run": params["run"], "encoding": params["encoding"], "query": queries[0][0]}
        ).fetchall()
        doc = f"document {item[0][0]!r}" if item else "a document"
        raise ValueError(f"the run file {shown!r} ranks {doc} twice for query "
                         f"{queries[0][0]!r}{where} (trec_eval: duplicate docs)")


_FORMATS = {
    "float": "printf('%-22s\t%s\t%6.4f', {name}, {query}, {value})",
    "long": "printf('%-22s\t%s\t%d', {name}, {query}, CAST({value} AS BIGINT))",
    "string": "printf('%-22s\t%s\t''%s''', {name}, {query}, {text})",
    "runid": "printf('%-22s\t%s\t%s', {name}, {query}, {text})",
}


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _output_sql(table: str, values: Sequence[Value], options: Options) -> str:
    """The output rows, in trec_eval's order: measure, query, number, text, line."""

    def row(order: int, index: int, value: Value, query: str, number: str, text: str,
            kind: str) -> str:
        name = _sql_text(value.name)
        line = _FORMATS[kind].format(name=name, query=query, value=number, text=text)
        return (f"{{'o': {order}, 'i': {index}, 'measure': {name}, 'query': {query}, "
                f"'number': CAST({number} AS DOUBLE), 'text': CAST({text} AS VARCHAR), "
                f"'line': {line}}}")

    reads = _columns(values, options.complete)[1]
    selects = []
    if options.per_query:
        cells = [
            row(0, i, v, "query", "NULL" if v.measure.value == "string" else reads[i],
                reads[i] if v.measure.value == "string" else "NULL", v.measure.value)
            for i, v in enumerate(values) if v.measure.per_query
        ]
        if cells:
            selects.append(f"SELECT unnest([{', '.join(cells)}]) AS r, query AS q FROM {table}")
    if options.summary:
        totals, cells = [], []
        for i, v in enumerate(values):
            # Summed in query order, as trec_eval sums: the same double, bit for bit.
            total = f"list_reduce(list({reads[i]} ORDER BY query), lambda a, b: a + b)"
            number = {"mean": f"{total} / count(*)", "sum": total, "count": "count(*)",
                      "gm": f"exp({total} / count(*))", "runid": "NULL",
                      "none": None}[v.measure.summary]
            if number is None:
                continue
            totals.append(f"{number} AS a{i}")
            text = "$runid" if v.measure.summary == "runid" else "NULL"
            kind = "runid" if v.measure.summary == "runid" else v.measure.value
            cells.append(row(1, i, v, "'all'", f"a{i}", text, kind))
        if cells:
            selects.append(f"SELECT unnest([{', '.join(cells)}]) AS r, NULL AS q "
                           f"FROM (SELECT {', '.join(totals)} FROM {table})")
    if not selects:
        return ("SELECT NULL AS measure, NULL AS query, NULL AS number, NULL AS text, "
                "NULL AS line WHERE false")
    union = " UNION ALL ".join(selects)
    return (f"SELECT r.measure, r.query, r.number, r.text, r.line FROM ({union}) "
            "ORDER BY r.o, q, r.i")


Row = tuple[str, str, float | int | str]


@contextmanager
def _evaluation(qrels: str | Path, run: str | Path, measures: Sequence[str], options: Options,
                connection: duckdb.DuckDBPyConnection | None
                ) -> Iterator[tuple[duckdb.DuckDBPyRelation, str]]:
    """The output relation (see ``_output_sql``), valid inside the ``with`` block, and the
    files' encoding (``_encoding``); every check runs before it is returned."""
    _check_options(options)
    values = requested_values(measures)
    check_available(values)
    con = connection if connection is not None else connect(functions=needed_functions(values))
    table = quote_identifier(f"duckrank_trec_eval_{uuid.uuid4().hex}")
    formulas = formula_macros(values)
    try:
        qrels_file = file_paths(con, qrels, "qrels")[0]
        run_file = file_paths(con, run, "run")[0]
        check_order(run_file, qrels_file, "duckrank trec_eval QRELS RUN, as trec_eval's "
                    "(duckrank evaluate takes RUN QRELS)")
        params = {"run": run_file, "qrels": qrels_file, "level": options.level,
                  "encoding": _encoding(qrels_file, run_file)}
        _check_judged_once(con, params, str(qrels))
        for statement in formulas.values():
            con.execute(statement)
        con.execute(f"CREATE TEMP TABLE {table} AS {_per_query_sql(values, options)}", params)
        _check_ranked_once(con, table, params, options, str(run))
        if con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == 0:
            raise ValueError("no query is in both the qrels and the run (trec_eval: No queries "
                             "with both results and relevance info)")
        sql = _output_sql(table, values, options)
        tag = {"runid": run_tag(run_file, params["encoding"])}
        yield con.sql(sql, params=tag if "$runid" in sql else None), params["encoding"]
    finally:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        for name in formulas:
            con.execute(f"DROP MACRO IF EXISTS temp.main.{name}")
        if connection is None:
            con.close()


def trec_eval(
    qrels: str | Path,
    run: str | Path,
    measures: Sequence[str] = (),
    *,
    per_query: bool = False,
    complete: bool = False,
    summary: bool = True,
    max_docs: int | None = None,
    level: int = 1,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> list[Row]:
    """What ``trec_eval [-q] [-c] [-n] [-M max_docs] [-l level] -m ... qrels run`` prints, as
    rows (measure, query, value): the value a float at full precision, an int for the counts,
    a str for ``runid`` and ``relstring``; query ``'all'`` for the summary. ``measures`` as
    ``-m`` takes them (``requested_values``); none: trec_eval's ``official`` set."""
    options = Options(per_query, complete, summary, max_docs, level)
    rows: list[Row] = []
    with _evaluation(qrels, run, measures, options, connection) as (relation, _):
        kinds = {v.name: v.measure.value for v in requested_values(measures)}
        for measure, query, number, text, _ in relation.fetchall():
            if text is not None or kinds[measure] == "string":
                rows.append((measure, query, text or ""))
            elif kinds[measure] == "long":
                rows.append((measure, query, int(number)))
            else:
                rows.append((measure, query, number))
    return rows


def trec_eval_lines(
    qrels: str | Path,
    run: str | Path,
    measures: Sequence[str] = (),
    *,
    per_query: bool = False,
    complete: bool = False,
    summary: bool = True,
    max_docs: int | None = None,
    level: int = 1,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> list[str]:
    """The lines ``trec_eval`` prints (without their newlines); arguments as ``trec_eval``."""
    options = Options(per_query, complete, summary, max_docs, level)
    with _evaluation(qrels, run, measures, options, connection) as (relation, _):
        return [line for *_, line in relation.fetchall()]


# --- the command (its flags are in duckrank.cli) ----------------------------------------------

def write_lines(qrels: str | Path, run: str | Path, measures: Sequence[str],
                options: Options) -> None:
    """Write what ``trec_eval`` prints to stdout, in the files' encoding (``duckrank trec_eval``;
    errors are raised before any line)."""
    con = None
    try:
        # The flags are checked before duckrank is registered (which takes seconds).
        _check_options(options)
        values = requested_values(measures)
        check_available(values)
        con = connect(functions=needed_functions(values))
        # trec_eval's output only: no progress bar drawn among the lines on a terminal.
        con.execute("SET enable_progress_bar = false")
        with _evaluation(qrels, run, measures, options, con) as (relation, file_encoding):
            for *_, line in relation.iter_rows(batch_size=10_000):
                if file_encoding == UTF8:
                    sys.stdout.write(line + "\n")
                else:
                    sys.stdout.flush()
                    sys.stdout.buffer.write(output_bytes(line + "\n", file_encoding))
    finally:
        if con is not None:
            con.close()
