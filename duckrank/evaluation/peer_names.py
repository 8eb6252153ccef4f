"""The names of peer libraries' measures, each translated to the duckrank request that gives the
peer's number: every measure of ir_measures 0.4.3's registry (``ir_measures.measures.registry``,
39 measures under 51 names) with its parameters, and ranx 0.3.21's ``f1`` and ``hits``.

ir_measures' names are matched as it spells them (case-sensitive: ``nDCG@10`` is ir_measures'
trec_eval nDCG, linear gains; ``ndcg@10`` stays duckrank's, exponential gains), with its syntax
``Name(param=value, ...)@cutoff`` (``P(rel=2)@5``, ``nDCG(dcg='exp-log2')@10``, ``IPrec@0.5``,
``RBP(p=0.8, rel=1)``). ``translate`` returns the duckrank request text (``P(rel=2)@5`` ->
``precision_at(denominator=k,min_grade=2)@5``), which ``metric_requests.parse_metric`` then
reads as any request; ``judged_only=True`` picks the measure's judged-only form
(``duckrank.metrics.judged_only``, its cut-off the ``depth`` option); a measure or parameter
duckrank cannot give is an error that says so; RBP without rel is trectools' graded RBP
(``fallback``), as ir_measures' provider order makes it; nDCG's ``gains=`` is the
evaluation's ``gains`` option (the grades mapped before the truth is built). The intent-aware
measures (``alpha_nDCG@20``, ...) translate to the SQL functions of subtopic qrels
(``duckrank.metrics.diversity``), which evaluate feeds from the qrels' subtopic column.
``IR_MEASURES`` is also the table of docs/conventions.md ("ir_measures' names").

What the translation cannot carry is how an evaluation reads undefined values: ir_measures
scores 0 where a measure is undefined (a judged query without a relevant document) and for a
judged query the run has no list for, which ``convention='ir_measures'`` does
(``metric_requests.CONVENTIONS``); under duckrank's convention the values of the queries where
the measure is defined are the same, and ``PeerConventionWarning`` says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from duckrank.metrics.judged_only import BASES as JUDGED_ONLY_BASES

# A parameter's translation: (label, its text as written) -> the duckrank options it sets, as
# (option, value text) pairs; the pseudo-option "function" picks another duckrank function.
Param = Callable[[str, str], "tuple[tuple[str, str], ...]"]


def _text(value: str) -> str:
    return value.strip().strip("'\"")


def _number(label: str, name: str, value: str) -> str:
    text = _text(value)
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"metric {label!r}: {name} must be a number, got {value.strip()!r}"
                         ) from None
    return _shown(number)


def _shown(number: float) -> str:
    return str(int(number)) if number.is_integer() else repr(number)


def _boolean(label: str, name: str, value: str) -> bool:
    text = _text(value)
    if text not in ("True", "False", "true", "false", "1", "0"):
        raise ValueError(f"metric {label!r}: {name} must be True or False, got {value.strip()!r}")
    return text in ("True", "true", "1")


def _possessive(peer: str) -> str:
    return peer + ("'" if peer.endswith("s") else "'s")


def _to(option: str, param: str) -> Param:
    """The number parameter ``param``, which is the duckrank option ``option``."""
    return lambda label, value: ((option, _number(label, param, value)),)


def _judged_only(label: str, value: str) -> tuple[tuple[str, str], ...]:
    """judged_only=True (trec_eval's -J: unjudged documents removed from the ranking first):
    the measure's ``<function>_judged_only`` form (duckrank.metrics.judged_only), its cut-off
    the depth option."""
    return (("judged_only", "true"),) if _boolean(label, "judged_only", value) else ()


REL = {"rel": _to("min_grade", "rel")}
JUDGED_ONLY = {"judged_only": _judged_only}


@dataclass(frozen=True)
class PeerMeasure:
    """One peer measure name: the duckrank ``function`` with its fixed ``options``, how each
    parameter translates (``params``), what its @cutoff is (``cutoff``: "k", a number
    option's name, or "" for none), the ``provider`` of ir_measures that computes it, and what
    differs (``note``)."""

    function: str
    options: tuple[tuple[str, str], ...] = ()
    params: Mapping[str, Param] = field(default_factory=dict)
    cutoff: str = "k"
    provider: str = "pytrec_eval"
    note: str = ""
    defaults: Mapping[str, str] = field(default_factory=dict)  # the peer's, written out
    required: tuple[str, ...] = ()  # parameters (or "cutoff") without which it is refused
    # The measure as ir_measures' next provider computes it when a required parameter is not
    # given (RBP without rel: trectools, after cwl_eval), else None: refused.
    fallback: PeerMeasure | None = None


def _binary(function: str, *options: tuple[str, str], cutoff: str = "k", judged_only: bool = True,
            extra: Mapping[str, Param] | None = None, note: str = "",
            provider: str = "pytrec_eval") -> PeerMeasure:
    """A measure of binary relevance, relevant meaning grade >= rel (1 by default, written out:
    duckrank's own default is grade > 0)."""
    params = {**REL, **(JUDGED_ONLY if judged_only else {}), **(extra or {})}
    return PeerMeasure(function, options, params, cutoff, provider, note,
                       defaults={"rel": "1"})


def _intent_aware(function: str, cutoff: str = "k", judged_only: bool = True,
                  **params: Param) -> PeerMeasure:
    """A measure of subtopic qrels (ndeval, through pyndeval): its SQL function
    (``duckrank.metrics.diversity``), which evaluate feeds from the qrels' subtopic column; rel
    is its min_grade (1 by default in both), ``params`` its other parameters (alpha, beta)."""
    return PeerMeasure(function, params={**REL, **(JUDGED_ONLY if judged_only else {}),
                                         **params},
                       cutoff=cutoff, provider="pyndeval", note=_PYNDEVAL_NOTE)


def _set_precision(label: str, value: str) -> tuple[tuple[str, str], ...]:
    relative = _boolean(label, "relative", value)
    return (("function", "set_relative_precision"),) if relative else ()


def _ndcg_dcg(label: str, value: str) -> tuple[tuple[str, str], ...]:
    gains = {"log2": "linear", "exp-log2": "exponential"}
    if _text(value) not in gains:
        raise ValueError(f"metric {label!r}: dcg must be 'log2' or 'exp-log2', got "
                         f"{value.strip()!r}")
    return (("gain", gains[_text(value)]),)


def _normalize(label: str, value: str) -> tuple[tuple[str, str], ...]:
    return (("normalize", "true" if _boolean(label, "normalize", value) else "false"),)


def parse_gains(label: str, value: str) -> tuple[tuple[float, float], ...]:
    """ir_measures' ``gains={grade: gain, ...}`` (nDCG's map of grades to gains; a grade not in
    it keeps its value) as (grade, gain) pairs; anything else is an error naming the metric."""
    text = _text(value)
    if not (text.startswith("{") and text.endswith("}")):
        raise ValueError(f"metric {label!r}: gains must be a map {{grade: gain, ...}}, got "
                         f"{value.strip()!r}")
    pairs = []
    for entry in filter(str.strip, text[1:-1].split(",")):
        grade, colon, gain = entry.partition(":")
        if not colon:
            raise ValueError(f"metric {label!r}: gains must be a map {{grade: gain, ...}}, got "
                             f"{value.strip()!r}")
        pairs.append((float(_number(label, "a grade of gains", grade)),
                      float(_number(label, "a gain of gains", gain))))
    if len({grade for grade, _ in pairs}) < len(pairs):
        raise ValueError(f"metric {label!r}: gains maps a grade twice: {value.strip()!r}")
    return tuple(pairs)


def _gains(label: str, value: str) -> tuple[tuple[str, str], ...]:
    """nDCG's gains=: the evaluation's ``gains`` option (``metric_requests``), written out as
    checked numbers."""
    pairs = parse_gains(label, value)
    return (("gains", "{" + ",".join(f"{_shown(g)}:{_shown(v)}" for g, v in pairs) + "}"),)


def _binary_gains(label: str, value: str) -> tuple[tuple[str, str], ...]:
    """RBP's rel through cwl_eval: gain 1 for grade >= rel, 0 below (for integer grades: the
    grade clipped to [rel - 1, rel] and scaled)."""
    rel = float(_number(label, "rel", value))
    return (("min_rel", _number(label, "rel", str(rel - 1))), ("max_rel", _number(label, "rel",
                                                                                   value)))


def _log2_only(label: str, value: str) -> tuple[tuple[str, str], ...]:
    if _text(value) != "log2":
        raise ValueError(f"metric {label!r}: dcg must be 'log2' (cwl_eval's SDCG), got "
                         f"{value.strip()!r}")
    return ()


GAINS = {"min_rel": _to("min_rel", "min_rel"), "max_rel": _to("max_rel", "max_rel")}


def _cwl(function: str, cutoff: str = "", **params: Param) -> PeerMeasure:
    """A C/W/L measure (cwl_eval): ir_measures requires max_rel (and a cut-off where it
    truncates), and so does the translation."""
    return PeerMeasure(function, params={**params, **GAINS}, cutoff=cutoff, provider="cwl_eval",
                       required=("max_rel", *(("cutoff",) if cutoff else ())))


def _num_ret_rel(label: str, value: str) -> tuple[tuple[str, str], ...]:
    return (("function", "num_rel_ret"), ("min_grade", _number(label, "rel", value)))


_TIES_ASCENDING = ("its provider breaks score ties by document id ascending (pytrec_eval and "
                   "duckrank: descending), so a tie across the cut-off can differ")
# pyndeval ranks a query's documents as ir_measures sorts a run: score descending, then id
# ascending.
_PYNDEVAL_NOTE = ("reads the qrels' subtopic column (docs/diversity.md: `subtopic_column=`); "
                  "ties: pyndeval breaks score ties by document id ascending (duckrank: "
                  "descending), so a tie across the cut-off can differ")
ALPHA = {"alpha": _to("alpha", "alpha")}
ALPHA_BETA = {**ALPHA, "beta": _to("beta", "beta")}

IR_MEASURES: dict[str, PeerMeasure] = {
    "AP": _binary("average_precision"),
    "Accuracy": _binary(
        "auc", judged_only=False, provider="accuracy",
        note="the share of (relevant, non-relevant) pairs of the top K ranked relevant first; "
        "ir_measures fails with ZeroDivisionError where the top K has no non-relevant item "
        "(NULL here)"),
    "BPM": _cwl("bpm", "k", T=_to("t", "T")),
    "Bpref": _binary("bpref", judged_only=False, cutoff=""),
    "Compat": PeerMeasure(
        "compat", params={"p": _to("p", "p"), "normalize": _normalize}, cutoff="",
        provider="compat", defaults={"p": "0.95"},
        note="ties: " + _TIES_ASCENDING + "; the ideal's items of one grade follow their run "
        "score there (an unranked one as score 0), the ranking here"),
    "ERR": PeerMeasure("err", (("max_grade", "4"),), provider="gdeval",
                       note="gdeval prints 5 decimals and refuses a grade above 4"),
    "ERR_IA": _intent_aware("err_ia"),
    "INST": _cwl("inst", T=_to("t", "T")),
    "INSQ": _cwl("insq", T=_to("t", "T")),
    "infAP": _binary("infap", judged_only=False, cutoff=""),
    "IPrec": replace(_binary("iprec_at_recall", cutoff="recall"), required=("cutoff",)),
    "Judged": PeerMeasure("judged_at", provider="judged", note="ties: " + _TIES_ASCENDING),
    "nDCG": PeerMeasure(
        "ndcg", (("relevance", "graded"), ("gain", "linear")),
        {"dcg": _ndcg_dcg, "gains": _gains, **JUDGED_ONLY},
        note="dcg='exp-log2' is gdeval's (exponential gains, 5 decimals printed)"),
    "NERR8": _cwl("nerr8", "k"),
    "NERR9": _cwl("nerr9", "k"),
    "NERR10": _cwl("nerr10", p=_to("p", "p")),
    "NERR11": _cwl("nerr11", T=_to("t", "T")),
    "NRBP": _intent_aware("nrbp", "", False, **ALPHA_BETA),
    "nNRBP": _intent_aware("nnrbp", "", False, **ALPHA_BETA),
    "NumQ": PeerMeasure("num_q", cutoff="", note="ir_measures sums it over the queries"),
    "NumRel": _binary("num_rel", judged_only=False, cutoff="",
                      note="ir_measures sums it over the queries"),
    "NumRet": PeerMeasure("num_ret", params={"rel": _num_ret_rel}, cutoff="",
        note="NumRet(rel=r) is num_rel_ret; ir_measures sums it over the queries"),
    "P": _binary("precision_at", ("denominator", "k")),
    "R": _binary("recall_at"),
    "RBP": PeerMeasure(
        "cwl_rbp", params={"p": _to("p", "p"), "rel": _binary_gains}, cutoff="",
        provider="cwl_eval", defaults={"p": "0.8"}, required=("rel",),
        note="with rel= (binary gains, integer grades) as cwl_eval computes it",
        fallback=PeerMeasure(
            "graded_rbp", (("gain", "ranx"),), params={"p": _to("persistence", "p")},
            provider="trectools", defaults={"p": "0.8"},
            note="without rel, the grade itself as trectools 0.0.50 computes it (a cut-off "
            "allowed); ties: trectools gives the documents of equal scores the mean of their "
            "ranks' weights (over a run of equal scores that can reach into the next query), "
            "duckrank ranks them by document id, so tied scores can differ")),
    "Rprec": _binary("r_precision", cutoff=""),
    "RR": _binary("mrr", note="with a cut-off ir_measures runs its msmarco provider: "
                  + _TIES_ASCENDING),
    "SDCG": _cwl("sdcg", "k", dcg=_log2_only),
    "SetAP": _binary("set_map", cutoff=""),
    "SetF": _binary("set_f", cutoff="", extra={"beta": _to("beta", "beta")}),
    "SetP": _binary("set_precision", cutoff="", extra={"relative": _set_precision}),
    "SetR": _binary("set_recall", cutoff="", judged_only=False),
    "StRecall": _intent_aware("subtopic_recall", judged_only=False),
    "Success": _binary("hitrate"),
    "alpha_DCG": _intent_aware("alpha_dcg", **ALPHA),
    "alpha_nDCG": _intent_aware("alpha_ndcg", **ALPHA),
    "nERR_IA": _intent_aware("nerr_ia"),
    "AP_IA": _intent_aware("ap_ia", ""),
    "P_IA": _intent_aware("precision_ia"),
}
# ir_measures' other names of the same measures (its registry's aliases).
IR_MEASURES_ALIASES = {
    "MAP": "AP", "BPref": "Bpref", "NDCG": "nDCG", "Precision": "P", "Recall": "R",
    "RPrec": "Rprec", "MRR": "RR", "α_DCG": "alpha_DCG", "α_nDCG": "alpha_nDCG",
    "MAP_IA": "AP_IA", "SetRelP": "SetP", "NumRelRet": "NumRet",
}
# Parameters an alias sets (ir_measures registers SetRelP = SetP(relative=True) and NumRelRet =
# NumRet(rel=1)).
_ALIAS_PARAMS = {"SetRelP": (("relative", "True"),), "NumRelRet": (("rel", "1"),)}

# ranx's names that duckrank's own do not already mean (ranx 0.3.21, ranx/metrics/).
RANX: dict[str, PeerMeasure] = {
    "f1": PeerMeasure("f1_at", provider="ranx", note="ranx gives 0 where there is no relevant "
                      "item (NULL here)"),
    "hits": PeerMeasure("num_rel_ret", provider="ranx"),
}


def peer_measure(name: str) -> tuple[str, PeerMeasure] | None:
    """(peer, measure) for a peer's name, None for any other name."""
    if name in IR_MEASURES or name in IR_MEASURES_ALIASES:
        return "ir_measures", IR_MEASURES[IR_MEASURES_ALIASES.get(name, name)]
    if name.lower() in RANX:
        return "ranx", RANX[name.lower()]
    return None


def split_assignments(text: str | None) -> list[str]:
    """``a=1, b={0: 0, 1: 2}`` -> ['a=1', ' b={0: 0, 1: 2}'] (commas inside quotes or braces
    kept; blank parts left out)."""
    parts, depth, quote, current = [], 0, "", ""
    for char in text or "":
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += char
    parts.append(current)
    return [part for part in parts if part.strip()]


def split_params(text: str | None) -> list[tuple[str, str]]:
    """``a=1, b='x'`` -> [(a, 1), (b, 'x')] (commas inside quotes or braces kept)."""
    pairs = []
    for part in split_assignments(text):
        name, equals, value = part.partition("=")
        pairs.append((name.strip(), value if equals else ""))
    return pairs


def _options(label: str, peer: str, name: str, measure: PeerMeasure,
             written: list[tuple[str, str]]) -> tuple[str, dict[str, str]]:
    """The duckrank function and options of the parameters as written (the peer's defaults for
    those not written)."""
    given = {param for param, _ in written}
    function, options = measure.function, dict(measure.options)
    defaults = [(p, v) for p, v in measure.defaults.items() if p not in given]
    for param, value in [*defaults, *written]:
        if param not in measure.params:
            takes = ", ".join(sorted(measure.params)) or "none"
            raise ValueError(f"metric {label!r}: {_possessive(peer)} {name} has no parameter "
                             f"{param!r}; it takes: {takes}")
        for option, setting in measure.params[param](label, value):
            if option == "function":
                function = setting
            else:
                options[option] = setting
    return function, options


def _judged_only_form(measure: str, label: str, function: str, options: dict[str, str],
                      k: str | None) -> tuple[str, str | None]:
    """The ``_judged_only`` function of a translation and its k, which becomes its depth
    option (the cut-off applies after the unjudged items are removed)."""
    if function not in JUDGED_ONLY_BASES:
        raise ValueError(f"metric {label!r}: judged_only=True is not available for {measure} "
                         f"in duckrank yet (it is for {', '.join(sorted(JUDGED_ONLY_BASES))})")
    options.pop("relevance", None)  # the judged-only forms read grades only
    if k is not None:
        options["depth"] = k
    return function + "_judged_only", None


def translate(label: str, name: str, params: str | None, cutoff: str | None) -> str | None:
    """The duckrank request text for the peer measure ``name(params)@cutoff`` as written in
    ``label``; None when ``name`` is no peer's."""
    found = peer_measure(name)
    if found is None:
        return None
    peer, measure = found
    written = [*_ALIAS_PARAMS.get(name, ()), *split_params(params)]
    given = {param for param, _ in written}
    if len(given) < len(written):
        raise ValueError(f"metric {label!r}: a parameter is given twice")
    absent = [p for p in measure.required if (cutoff is None if p == "cutoff" else p not in given)]
    if absent and measure.fallback is not None:
        measure, absent = measure.fallback, []
    if absent:
        raise ValueError(f"metric {label!r}: {_possessive(peer)} {name} needs "
                         f"{' and '.join(absent)} given here (docs/conventions.md)")
    if cutoff is not None and measure.cutoff == "":
        raise ValueError(f"metric {label!r}: {_possessive(peer)} {name} takes no cut-off (@)")
    function, options = _options(label, peer, name, measure, written)
    k = cutoff
    if cutoff is not None and measure.cutoff != "k":
        options[measure.cutoff] = _number(label, "the cut-off", cutoff)
        k = None
    if options.pop("judged_only", None):
        function, k = _judged_only_form(f"{_possessive(peer)} {name}", label, function,
                                        options, k)
    text = function
    if options:
        text += "(" + ",".join(f"{option}={value}" for option, value in options.items()) + ")"
    return text + (f"@{k}" if k is not None else "")
