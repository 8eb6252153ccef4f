"""``-m``: trec_eval's measure requests read as trec_eval 10 reads them, and what they need
(the duckrank functions to register, the formula macros)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from duckrank.render.quoting import quote_identifier
from duckrank.render.trec_eval import formula_macros as _formula_macros
from duckrank.reports.trec_eval.measures import (
    BY_NAME,
    COMPAT_10,
    MEASURES,
    Call,
    Measure,
    MissingMeasure,
    nicknames,
)


@dataclass(frozen=True)
class Value:
    """One printed value: its name (``P_5``), its measure and the parameter of its SQL."""

    name: str
    measure: Measure
    parameter: Any


def _fail(flag: str, message: str) -> ValueError:
    return ValueError(f"{flag}: {message}")


def _cutoffs(flag: str, text: str) -> list[tuple[str, int]]:
    """Cut-offs as trec_eval 10 reads them (C's atol: the integer part, so 23.4 is 23, named
    ``_23``); anything but a positive number is an error (atol would read 0 or a prefix)."""
    values = []
    for item in text.split(","):
        number = re.fullmatch(r"\s*\+?(\d+)(\.\d*)?", item)
        if number is None or int(number.group(1)) <= 0:
            raise _fail(flag, f"the cut-off {item!r} is not a positive integer")
        values.append(int(number.group(1)))
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


def _increasing_levels(flag: str, text: str) -> tuple[float, ...]:
    """11pt_avg's levels: m_11pt_avg.c walks them as an increasing list (other orders give a
    value that is not their mean), so they must be given in increasing order."""
    levels = tuple(_float(flag, item) for item in text.split(","))
    if any(b <= a for a, b in zip(levels, levels[1:], strict=False)):
        raise _fail(flag, "give the recall levels in increasing order, each once (trec_eval "
                          "averages others wrongly)")
    return levels


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
    if measure.params == "averaged_levels":
        if params is None:
            return [Value(measure.name, measure, None)]
        return [Value(f"{measure.name}_{params}", measure, _increasing_levels(flag, params))]
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


def requested_values(requests: Sequence[str], compat: str = COMPAT_10  # noqa: C901
                     ) -> list[Value]:
    """The values trec_eval prints for these ``-m`` requests (none: ``official``), in its order.
    A request is a measure, a nickname (``official``, ``set``, ``all_trec``) or a measure with
    parameters after the first dot (``P.5,10``, ``iprec_at_recall..10,.20``,
    ``ndcg.1=3,2=9``, ``set_F.0.5``); as in trec_eval, a measure named again without parameters
    keeps the ones given. ``compat``: the trec_eval version whose sets of measures are meant
    (trec_eval 10's ``all_trec`` has unj, rbp and rbp_resid; 9.0.8's does not)."""
    sets = nicknames(compat)
    wanted: set[str] = set()
    params: dict[str, tuple[str, str]] = {}
    for request in requests or ["official"]:
        flag = f"-m {request}"
        name, dot, text = request.partition(".")
        if dot and not text:
            raise _fail(flag, "no parameters after the dot (trec_eval: improper measure)")
        if name in sets:
            if dot:
                raise _fail(flag, f"{name} is a set of measures; it takes no parameters")
            wanted.update(sets[name])
            continue
        if name not in BY_NAME:
            known = ", ".join([*sets, *BY_NAME])
            raise _fail(flag, f"trec_eval has no measure {name!r} (names are case-sensitive); "
                              f"known: {known}")
        wanted.add(name)
        if dot:
            if name in params and params[name][1] != text:
                raise _fail(flag, f"trec_eval reads only the first parameters given for {name} "
                                  f"({params[name][0]}); give them all at once, e.g. "
                                  f"-m {name}.{params[name][1]},{text}")
            params[name] = (f"-m {request}", text)
    _check_shared_gains(wanted, params)
    values = []
    for measure in MEASURES:
        if measure.name in wanted:
            flag, text = params.get(measure.name, (f"-m {measure.name}", None))
            values.extend(_values(measure, text, flag))
    return values


# m_ndcg.c's ndcg, dcg and ideal_dcg share one parameter block: gains given to one are every
# one's (and their names), and trec_eval 10 then crashes freeing it three times.
SHARED_GAINS = ("ndcg", "dcg", "ideal_dcg")


def _check_shared_gains(wanted: set[str], params: dict[str, tuple[str, str]]) -> None:
    given = [name for name in SHARED_GAINS if name in params]
    together = [name for name in SHARED_GAINS if name in wanted]
    if given and len(together) > 1:
        raise _fail(params[given[0]][0], f"trec_eval 10 shares the gains of {', '.join(together)} "
                                         "(m_ndcg.c: one parameter block, which it frees once "
                                         "per measure and crashes); request one of them with "
                                         "gains, or none with gains")


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


def needed_functions(values: Sequence[Value], sql: str | None = None) -> list[str]:
    """The duckrank SQL functions computing ``values`` takes: the file readers, the ranking, the
    matching step and the measures' functions (``connect(functions=...)`` registers just those,
    in a tenth of the time of every function). ``sql``: the measures' SQL, which calls only some
    of them (the others' values are formulas over a shared match, ``formula_macros``): those
    (registering all_trec's 32 took 0.13 s more)."""
    calls = [call.function for call in _calls(values)
             if sql is None or f"{quote_identifier(call.function)}(" in sql]
    return list(dict.fromkeys(["read_trec_run", "read_trec_qrels", "to_ordered_list",
                               "duckrank_matched", *calls]))


def formula_macros(values: Sequence[Value], ascending: bool = False) -> dict[str, str]:
    """The CREATE statements, by macro name, of TEMP macros
    ``duckrank_trec_eval_<metric>(match, options...)``, one per metric that ``values`` read
    from a shared match (``duckrank.render.trec_eval`` writes them; ``ascending``: the match's
    positions come in ascending order, the native step's)."""
    return _formula_macros((key for key in (c.formula() for c in _calls(values)) if key),
                           ascending)


def judged_match_fields(values: Sequence[Value]) -> frozenset[str]:
    """The fields of the judged match (``Call.judged_fields``) that ``values`` read from it:
    none when no metric reads it."""
    return frozenset(field for c in _calls(values) for field in c.judged_fields())
