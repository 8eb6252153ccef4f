"""trec_eval's measures (``MEASURES``, in trec_eval's order) and sets of measures
(``NICKNAMES``): each one's parameters, summary and SQL, a call of duckrank SQL functions over the
per-query lists that ``duckrank.reports.trec_eval.command`` builds."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from duckrank.metrics import METRICS
from duckrank.render.quoting import quote_identifier
from duckrank.render.trec_eval import (
    FORMULA,
    GRADED,
    GRADED_PREFIX,
    HITS,
    JUDGED,
    JUDGED_FIELDS,
    judged_fields,
)
from duckrank.reports.trec_eval import prefs

# The trec_eval versions the command reproduces: NIST's trec_eval 10.0 (the default) and the
# trec_eval 9.0.8 whose C code pytrec-eval-terrier bundles (``--compat 9.0.8``).
COMPAT_10, COMPAT_9 = "10.0", "9.0.8"
COMPATS = (COMPAT_10, COMPAT_9)

# trec_eval 10's rel_info formats (-R, formats.c).
QRELS, QRELS_JG = "qrels", "qrels_jg"
REL_INFO_FORMATS = (QRELS, QRELS_JG, *prefs.FORMATS)

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
# The query's judged match: duckrank_rec against the judgments (duckrank_grades), relevance at
# -l, over the whole ranking: the STRUCT of ``JUDGED_FIELDS`` the judged metrics' formulas read,
# and the ranks of positive grade and those grades (gpos, ggrades), of which graded metrics'
# matches are cut (``_graded_at``).
JUDGED_MATCH = "duckrank_judged"
GRADED_FIELDS = frozenset({"K", "gpos", "ggrades", "ideal"})
# The judgments of the query (as many as the entries of its MAPs of grades or gains).
JUDGMENTS = "duckrank_judgments"
# The metrics read the matches through TEMP macros of their record's formula, named FORMULA + the
# metric's key in ``HITS``, ``GRADED`` or ``JUDGED`` (``duckrank.render.trec_eval``).


def _match_at(k: str | None) -> str:
    """The query's match cut at ``k`` (a validated positive integer): the positions up to k,
    what the matching step gives for that cut-off; the whole match without one."""
    if k is None:
        return MATCH
    return (f"struct_pack(K := least({MATCH}.K, {k}), pos := list_filter({MATCH}.pos, "
            f"lambda duckrank_q: duckrank_q <= {k}), n := {MATCH}.n, cut := {k})")


def _up_to(ranks: str, k: str) -> str:
    return f"list_filter({ranks}, lambda duckrank_q: duckrank_q <= {k})"


def _judged_at(k: str | None, fields: frozenset[str]) -> str:
    """The query's judged match cut at ``k`` (a validated positive integer), the ``fields`` a
    formula reads (placeholders): the top k's grades and ranks, truth's counts and ideal grades
    as they are; the whole match without one."""
    if k is None:
        return JUDGED_MATCH
    if fields & {"gp", "above"}:
        # (no measure at a cut-off reads them; cut, they would be the top k's)
        raise ValueError(f"the judged match's {sorted(fields & {'gp', 'above'})} are not cut")
    cut = {"gains": f"list_slice({JUDGED_MATCH}.gains, 1, {k})",
           "K": f"least({JUDGED_MATCH}.K, {k})", "cut": k,
           **{f: _up_to(f"{JUDGED_MATCH}.{f}", k)
              for f in ("pos", "nonrel", "judged", "pool", "gpos")}}
    names = [JUDGED_FIELDS[p] for p in sorted(fields)]
    return "struct_pack(" + ", ".join(
        f"{f} := {cut.get(f, f'{JUDGED_MATCH}.{f}')}" for f in names) + ")"


def _graded_at(k: str | None) -> str:
    """The graded match (``graded_match_sql``'s fields) of the query's ranking at ``k`` (None:
    the whole ranking) against its gains (positive grades; a negative grade gains 0), cut from
    the judged match: the ranks of positive grade up to k and those grades, the min(k, n)
    largest grades of truth."""
    k = k or f"{JUDGED_MATCH}.K"
    pos = _up_to(f"{JUDGED_MATCH}.gpos", k)
    return (f"struct_pack(K := least({JUDGED_MATCH}.K, {k}), pos := {pos}, grades := "
            f"list_slice({JUDGED_MATCH}.ggrades, 1, len({pos})), ideal := "
            f"list_slice({JUDGED_MATCH}.ideal, 1, {k}), n := len({JUDGED_MATCH}.ideal), "
            f"cut := {k})")


@dataclass(frozen=True)
class Call:
    """A call of a duckrank SQL function: ``function(rec, truth[, k], option := value, ...)``;
    ``min_grade`` (the relevance level) is added for a graded truth that needs it."""

    function: str
    truth: str = REL
    options: tuple[str, ...] = ()
    min_grade: bool = False

    def formula(self) -> str | None:
        """The key of the formula macro (``duckrank.render.trec_eval``) that computes the value
        over the query's match (``MATCH``), judged match (``JUDGED_MATCH``: relevance at -l, so
        for a call at -l or one whose formula reads no relevance) or the graded match cut from
        it (the gains, ``GAINS``); None for a call of the metric's macro, which matches again."""
        if self.function in JUDGED:
            relevance = judged_fields(self.function) & {"pos", "nonrel", "n", "nn", "above"}
            shared = self.truth == GRADES and (self.min_grade or not relevance)
            return self.function if shared else None
        if self.truth == GAINS and GRADED_PREFIX + self.function in GRADED:
            return GRADED_PREFIX + self.function
        shared = self.truth == REL and not self.min_grade and self.function in HITS
        return self.function if shared else None

    def judged_fields(self) -> frozenset[str]:
        """The fields of the judged match (``JUDGED_FIELDS``' values) the call reads."""
        key = self.formula()
        if key in JUDGED:
            return frozenset(JUDGED_FIELDS[p] for p in judged_fields(key))
        return GRADED_FIELDS if key in GRADED else frozenset()

    def sql(self, k: str | None = None, rec: str = REC, **values: str) -> str:
        """The call at cut-off ``k`` (None: the whole ranking) over the ranking ``rec`` (SQL),
        with the options' ``values`` (SQL)."""
        options = [f"{name} := {values[name]}" for name in self.options]
        key = self.formula()
        if key is None or rec != REC:
            arguments = [rec, self.truth] + ([k] if k is not None else []) + options
            if self.min_grade:
                arguments.append("min_grade := $level")
            return f"{quote_identifier(self.function)}({', '.join(arguments)})"
        match = (_judged_at(k, judged_fields(key)) if key in JUDGED
                 else _graded_at(k) if key in GRADED else _match_at(k))
        formula = quote_identifier(FORMULA + key)
        if match in (MATCH, JUDGED_MATCH):
            return f"{formula}({', '.join([match, *options])})"
        # A match cut at k is bound once by a lambda over a one-element list: the formula
        # macro's lambdas would compute its text again for every element (ndcg_cut took 7 times
        # longer, P and relative_P 2 to 3 times).
        call = f"{formula}({', '.join(['duckrank_b', *options])})"
        return f"list_transform([{match}], lambda duckrank_b: {call})[1]"

    def missing(self) -> str | None:
        """Why this build cannot make the call (None when it can)."""
        needed = {*self.options, *(("min_grade",) if self.min_grade else ())}
        graded = self.truth not in (REL, GROUP)
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
    given: numbers, ``level=gain`` pairs, or rbp's ``p=0.8``; ``averaged_levels``: numbers in
    increasing order, one value, the mean over them, as 11pt_avg). ``value``: ``float``, ``long``
    (a count, printed as an integer) or ``string``. ``summary``: ``mean``, ``sum``, ``gm``
    (geometric mean) or ``none``. ``sql`` makes one value's SQL from one parameter (a cut-off or
    a level as SQL text, the numbers, the pairs, the persistence); ``calls`` are the duckrank
    functions it needs. ``sql_9``: the SQL under ``--compat 9.0.8`` (pytrec-eval-terrier's
    trec_eval 9.0.8) where it differs from trec_eval 10's. ``missing``: the value of a query the
    run lacks (``-c``; None: its value on the empty ranking). ``on_empty``: the value's SQL when
    ``-J`` leaves a ranking empty, from the parameter and the version, where trec_eval's code
    does not give the computed value (its 0 / 0). ``complete_summary``: the summary's SQL under
    ``-c`` where trec_eval computes it apart. ``formats``: the ``-R`` formats trec_eval computes
    it from (form_res_rels.c, form_res_rels_jg.c and form_prefs_counts.c each stop at another):
    ``-R qrels_jg``'s judgment groups (``GROUPS``) for its measures, the preferences
    (``prefs.VALUES``) for the ``prefs_*`` ones."""

    name: str
    sql: Callable[[Any], str]
    calls: tuple[Call, ...] = ()
    params: str = "none"
    default: str = ""
    value: str = "float"
    summary: str = "mean"
    per_query: bool = True
    missing: str | None = "0"
    sql_9: Callable[[Any], str] | None = None
    on_empty: Callable[[Any, str], str] | None = None
    complete_summary: str | None = None
    formats: tuple[str, ...] = (QRELS,)

    def sql_for(self, compat: str) -> Callable[[Any], str]:
        """The SQL maker of the trec_eval version ``compat`` ('10.0' or '9.0.8')."""
        return self.sql_9 if compat == COMPAT_9 and self.sql_9 is not None else self.sql


def sql_number(value: float) -> str:
    return repr(float(value))


def _zero_if_undefined(call: Call, k: str | None = None, **values: str) -> str:
    # duckrank's NULL (undefined: no relevant document, an empty ranking) is trec_eval's 0.
    return f"coalesce({call.sql(k, **values)}, 0)"


def log_floor(value_sql: str) -> str:
    """What trec_eval's geometric means sum (meas_acc.c): the log of the value, at least
    MIN_GEO_MEAN."""
    return f"ln(greatest({value_sql}, {MIN_GEO_MEAN!r}))"


def _gains_sql(pairs: tuple[tuple[int, float], ...]) -> str:
    """trec_eval's ndcg gains: a level named in ``pairs`` takes its gain, any other grade g >= 0
    gains g, a negative grade 0."""
    if not pairs:
        return GAINS
    cases = " ".join(f"WHEN {level} THEN {sql_number(gain)}" for level, gain in pairs)
    mapped = f"CASE e.value {cases} ELSE greatest(e.value, 0) END"
    return (f"map_from_entries(list_transform(map_entries({GRADES}), lambda e: "
            f"{{'key': e.key, 'value': {mapped}}}))")


_AP = Call("average_precision")
_PRECISION = Call("precision_at", options=("denominator",))
_RECALL = Call("recall_at")
_MRR = Call("mrr")
_HITRATE = Call("hitrate")
_NDCG = Call("ndcg", truth=GAINS, options=("gain",))
_DCG = Call("dcg", truth=GAINS, options=("gain",))
_RNDCG = Call("rndcg", GRADES, min_grade=True)
_BPREF = Call("bpref", truth=GRADES, min_grade=True)
_RELSTRING = Call("relstring", GRADES)
_RBP = Call("rbp", options=("persistence",))
_RBP_RESID = Call("rbp_resid", GRADES, ("persistence",))
_UTILITY = Call("utility", options=("a", "b", "c", "d", "num_docs"))
# -N, the documents in the collection (utility's d term), a parameter of the command's query.
NUM_DOCS = "$num_docs"
# trec_eval 10's rbp on the grades: graded_rbp's gain 'trec_eval' (duckrank.metrics.peers).
_GRADED_RBP = Call("graded_rbp", GRADES, ("persistence", "gain"))
_IPREC = Call("iprec_at_recall", options=("recall", "rounding"))
_ELEVEN_POINT = Call("eleven_point_ap", options=("rounding",))
# How each version turns a recall level into a number of relevant documents (the records'
# rounding option: ``duckrank.metrics.trec_eval``).
ROUNDING = {COMPAT_10: "'nearest'", COMPAT_9: "'trunc_plus_0.9'"}

# -R qrels_jg: the relevant documents of each judgment group of the query, a list of lists in
# the groups' order, and the one group a call reads inside the lambda over them.
GROUPS, GROUP = "duckrank_groups", "duckrank_group"
_AP_GROUP = Call("average_precision", truth=GROUP)
_PRECISION_GROUP = Call("precision_at", truth=GROUP, options=("denominator",))
_R_PRECISION_MULT_GROUP = Call("r_precision_mult", truth=GROUP, options=("multiplier",))


def _over_groups(call: Call, k: str | None = None, **values: str) -> str:
    """The mean over the query's judgment groups of ``call`` (0 where undefined), summed in
    the groups' order as m_*_avgjg.c sums."""
    each = _zero_if_undefined(call, k, **values)
    return (f"list_reduce(list_transform({GROUPS}, lambda {GROUP}: {each}), "
            f"lambda a, b: a + b) / len({GROUPS})")


def _prefs_sql(field: str) -> Callable[[Any], str]:
    """A prefs measure: its field of the query's ``prefs.VALUES``. m_prefs_avgjg_Rnonrel*.c
    recalculate a group whose nonrelevant documents outnumber its relevant ones from the first R
    documents of its lowest level; where that level holds fewer, trec_eval reads past them into
    memory it did not fill for this query, and the value is an error here."""
    value = f"{prefs.VALUES}.{field}"
    if not field.startswith("avgjg_Rnonrel"):
        return lambda _: value
    past = f"{prefs.VALUES}.{field}_past"
    message = (f"'prefs_{field}: judgment group ''' || {past} || ''' of query ''' || query || "
               "''' has fewer documents at its lowest level than trec_eval 10 reads there "
               f"(m_prefs_{field}.c reads past them): its value is not reproducible'")
    return lambda _: f"CASE WHEN {past} IS NOT NULL THEN error({message}) ELSE {value} END"


def _relstring_sql(length: tuple[float, ...]) -> str:
    """trec_eval 10's relstring: the first min(N, num_ret) documents' characters, N cast to
    an integer as C casts it (m_relstring.c; 10 by default)."""
    cut = math.trunc(length[0])
    return f"coalesce({_RELSTRING.sql(str(cut))}, '')" if cut > 0 else "''"


def _relstring_sql_9(length: tuple[float, ...]) -> str:
    if length != (10.0,):
        raise MissingMeasure(f"relstring.{length[0]:g}: under --compat 9.0.8 duckrank's "
                             "relstring shows the default length only")
    return f"coalesce({_RELSTRING.sql()}, '')"


def _iprec_sql(compat: str) -> Callable[[Any], str]:
    return lambda level: _zero_if_undefined(_IPREC, recall=level, rounding=ROUNDING[compat])


# The judgments of grade > 0 in the qrels (a parameter of the output's query).
COMPLETE_NUM_REL = "$complete_num_rel"

# C's 0.0 / 0.0 on x86: a NaN with the sign bit set, which printf prints as -nan.
NEGATIVE_NAN = "-('nan'::DOUBLE)"


def _cut_sql(level: str, compat: str) -> str:
    """The number of relevant documents a recall level reaches (``ROUNDING``), in SQL."""
    if compat == COMPAT_9:
        return f"trunc({level} * len({REL}) + 0.9)"
    return f"round({level} * len({REL}))"


def _iprec_on_empty(level: str, compat: str) -> str:
    """iprec_at_recall of an empty ranking (-J): m_iprec_at_recall.c starts from the precision
    0 / 0 and gives it to the levels that reach no relevant document; the others stay 0."""
    return f"CASE WHEN {_cut_sql(level, compat)} = 0 THEN {NEGATIVE_NAN} ELSE 0.0 END"


def _eleven_point_on_empty(levels: tuple[float, ...] | None, compat: str) -> str:
    """11pt_avg of an empty ranking (-J): its sum takes the 0 / 0 of the lowest level when that
    level reaches no relevant document (the default's 0.0 always does)."""
    return _iprec_on_empty(sql_number(levels[0] if levels else 0.0), compat)


def _eleven_point_sql(compat: str) -> Callable[[Any], str]:
    """11pt_avg: the default levels through eleven_point_ap; levels given (``-m
    11pt_avg..25,.5,.75``, a tuple in increasing order) are averaged in SQL, summed from the
    last as m_11pt_avg.c sums."""
    rounding = ROUNDING[compat]

    def sql(levels: tuple[float, ...] | None) -> str:
        if levels is None:
            return _zero_if_undefined(_ELEVEN_POINT, rounding=rounding)
        items = ", ".join(sql_number(x) for x in reversed(levels))
        each = _zero_if_undefined(_IPREC, recall="duckrank_l", rounding=rounding)
        return (f"list_reduce(list_transform([{items}], lambda duckrank_l: {each}), "
                f"lambda a, b: a + b) / {len(levels)}")

    return sql


def _gains_checked(pairs: tuple[tuple[int, float], ...], value: str) -> str:
    """``value`` (the SQL of ndcg or ideal_dcg with the gains ``pairs``), or an error for
    a query whose gains trec_eval 10 orders wrongly: gain_init.c sorts them by the difference of
    two gains cast to int, so two gains less than 1 apart compare equal and its ideal ranking
    can put the smaller first. The query's gains are the pairs' and, for each grade 0..its
    largest that no pair names, the grade. Integer gains never meet this (checked in Python)."""
    if all(float(gain).is_integer() for _, gain in pairs):
        return value
    levels = ", ".join(str(level) for level, _ in pairs)
    given = ", ".join(sql_number(gain) for _, gain in pairs)
    top = f"coalesce(list_max(list_filter(map_values({GRADES}), lambda g: g >= 0)), -1)"
    gains = (f"list_sort(list_concat([{given}], list_filter(range(0, {top}::BIGINT + 1), "
             f"lambda i: NOT list_contains([{levels}], i))::DOUBLE[]))")
    close = (f"list_transform([{gains}], lambda s: list_bool_or(list_transform(range(1, len(s)), "
             "lambda i: s[i + 1] - s[i] > 0 AND s[i + 1] - s[i] < 1)))[1]")
    message = ("trec_eval 10 orders gains by their difference cast to an integer (gain_init.c), "
               "so gains less than 1 apart may be ranked wrongly in its ideal ranking; give "
               "gains that differ by 1 or more, query ")
    return f"CASE WHEN {close} THEN error('{message}' || query) ELSE {value} END"


def _dcg_sql(pairs: tuple[tuple[int, float], ...]) -> str:
    gains = _gains_sql(pairs)
    # (k at least 1: -J can leave a ranking empty, whose DCG is 0)
    # (dcg does not read the order of the gains: no _gains_checked)
    return _zero_if_undefined(replace(_DCG, truth=gains), f"greatest(len({REC}), 1)",
                              gain="'linear'")


def _ideal_dcg_sql(pairs: tuple[tuple[int, float], ...]) -> str:
    """The DCG of the judged documents ranked by gain, largest first (ties do not change it).
    A query whose judgments are all negative gets the ideal_dcg of the query evaluated before
    it (by id), as trec_eval 10 prints it: form_res_rels.c then clears none of its counts of
    judgments per grade, and m_ndcg.c reads the previous query's (0 for the first)."""
    gains = _gains_sql(pairs)
    ideal = (f"list_transform(list_sort(list_transform(map_entries({gains}), lambda e: "
             "{'gain': e.value, 'id': e.key}), 'DESC'), lambda e: e.id)")
    call = replace(_DCG, truth=gains)
    value = f"coalesce({call.sql(f'cardinality({gains})', ideal, gain=repr('linear'))}, 0)"
    judged = f"len(list_filter(map_values({GRADES}), lambda g: g >= 0)) > 0"
    previous = (f"last_value(CASE WHEN {judged} THEN {value} END IGNORE NULLS) OVER (ORDER BY "
                "query ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)")
    return _gains_checked(pairs, f"CASE WHEN {judged} THEN {value} ELSE coalesce({previous}, 0) "
                                 "END")


def _ndcg_sql(pairs: tuple[tuple[int, float], ...]) -> str:
    # trec_eval's ndcg has no cut-off: its ideal ranking holds every document of positive gain,
    # so k is at least their number.
    gains = _gains_sql(pairs)
    k = f"greatest(len({REC}), {JUDGMENTS})"
    return _gains_checked(pairs, _zero_if_undefined(replace(_NDCG, truth=gains), k,
                                                    gain="'linear'"))


# trec_eval 10's table of measures (measures.c), in its order: the order of the output.
MEASURES: tuple[Measure, ...] = (
    Measure("runid", lambda _: "NULL", value="string", summary="runid", per_query=False,
            formats=REL_INFO_FORMATS),
    Measure("num_q", lambda _: "1", value="long", summary="count", per_query=False,
            formats=REL_INFO_FORMATS),
    Measure("num_ret", lambda _: Call("num_ret").sql(), (Call("num_ret"),), value="long",
            summary="sum"),
    # With -c, m_num_rel.c's summary counts the judgments of grade > 0 in the whole qrels
    # (whatever -l says): COMPLETE_NUM_REL, a parameter of the output's query.
    Measure("num_rel", lambda _: Call("num_rel").sql(), (Call("num_rel"),), value="long",
            summary="sum", missing=Call("num_rel").sql(), complete_summary=COMPLETE_NUM_REL),
    Measure("num_rel_ret", lambda _: Call("num_rel_ret").sql(), (Call("num_rel_ret"),),
            value="long", summary="sum"),
    Measure("map", lambda _: _zero_if_undefined(_AP), (_AP,)),
    Measure("gm_map", lambda _: _zero_if_undefined(_AP), (_AP,), summary="gm",
            per_query=False),
    Measure("Rprec", lambda _: _zero_if_undefined(Call("r_precision")), (Call("r_precision"),)),
    Measure("bpref", lambda _: _zero_if_undefined(_BPREF), (_BPREF,)),
    Measure("recip_rank", lambda _: _zero_if_undefined(_MRR), (_MRR,)),
    Measure("iprec_at_recall", _iprec_sql(COMPAT_10), (_IPREC,), params="levels",
            default="0.0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0", sql_9=_iprec_sql(COMPAT_9),
            on_empty=_iprec_on_empty),
    Measure("P", lambda k: _zero_if_undefined(_PRECISION, k, denominator="'k'"),
            (_PRECISION,), params="cutoffs", default="5,10,15,20,30,100,200,500,1000"),
    Measure("relstring", _relstring_sql, (_RELSTRING,), params="floats", default="10",
            value="string", summary="none", missing="''", sql_9=_relstring_sql_9),
    Measure("recall", lambda k: _zero_if_undefined(_RECALL, k), (_RECALL,),
            params="cutoffs", default="5,10,15,20,30,100,200,500,1000"),
    Measure("infAP", lambda _: _zero_if_undefined(Call("infap", GRADES, min_grade=True)),
            (Call("infap", GRADES, min_grade=True),)),
    Measure("gm_bpref", lambda _: _zero_if_undefined(_BPREF), (_BPREF,),
            summary="gm", per_query=False),
    Measure("Rprec_mult",
            lambda x: _zero_if_undefined(Call("r_precision_mult", options=("multiplier",)),
                                         multiplier=x),
            (Call("r_precision_mult", options=("multiplier",)),),
            params="levels", default="0.2,0.4,0.6,0.8,1.0,1.2,1.4,1.6,1.8,2.0"),
    Measure("utility",
            lambda p: _zero_if_undefined(_UTILITY,
                                         **dict(zip("abcd", map(sql_number, p), strict=True)),
                                         num_docs=NUM_DOCS),
            (_UTILITY,), params="floats", default="1.0,-1.0,0.0,0.0"),
    Measure("11pt_avg", _eleven_point_sql(COMPAT_10), (_ELEVEN_POINT, _IPREC),
            params="averaged_levels", sql_9=_eleven_point_sql(COMPAT_9),
            on_empty=_eleven_point_on_empty),
    # binG at -l: its relevant documents (grade >= -l, 0 or more) are duckrank_rel's, so it
    # reads the query's match.
    Measure("binG", lambda _: _zero_if_undefined(Call("bing")), (Call("bing"),)),
    Measure("G", lambda _: _zero_if_undefined(Call("normalized_gain", GRADES)),
            (Call("normalized_gain", GRADES),)),
    # trec_eval 10's dcg and ideal_dcg (m_ndcg.c): over the whole ranking, the ideal over every
    # positive gain; the ideal is the same for a query the run lacks (-c).
    Measure("dcg", _dcg_sql, (_DCG,), params="pairs"),
    Measure("ideal_dcg", _ideal_dcg_sql, (_DCG,), params="pairs", missing=None),
    Measure("ndcg", _ndcg_sql, (_NDCG,), params="pairs"),
    Measure("ndcg_rel", lambda _: _zero_if_undefined(Call("ndcg_rel", GRADES)),
            (Call("ndcg_rel", GRADES),)),
    # rndcg's NULL (relevant documents but no positive grade, -l 0) is m_Rndcg.c's 0 / 0, also
    # for a query the run lacks (-c: computed, not 0).
    Measure("Rndcg", lambda _: f"coalesce({_RNDCG.sql()}, {NEGATIVE_NAN})", (_RNDCG,),
            missing=None),
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
            lambda p: _zero_if_undefined(Call("set_f", options=("beta",)), beta=sql_number(p[0])),
            (Call("set_f", options=("beta",)),), params="floats", default="1.0"),
    Measure("num_nonrel_judged_ret",
            lambda _: _zero_if_undefined(Call("num_nonrel_judged_ret", GRADES,
                                              min_grade=True)),
            (Call("num_nonrel_judged_ret", GRADES, min_grade=True),), value="long",
            summary="sum"),
    # -R prefs and qrels_prefs's measures (m_prefs_*.c): counts summed, ratios averaged; a query
    # the run lacks (-c) is computed on trec_eval's bogus ranking (prefs.per_query_sql).
    *(Measure(f"prefs_{field}", _prefs_sql(field),
              value="long" if field.startswith("num_") else "float",
              summary="sum" if field.startswith("num_") else "mean", missing=None,
              formats=prefs.FORMATS) for field in prefs.FIELDS),
    # -R qrels_jg's measures (m_map_avgjg.c, m_P_avgjg.c, m_Rprec_mult_avgjg.c): the measure
    # over each judgment group's relevant documents, averaged over the groups.
    Measure("map_avgjg", lambda _: _over_groups(_AP_GROUP), (_AP_GROUP,), formats=(QRELS_JG,)),
    Measure("P_avgjg", lambda k: _over_groups(_PRECISION_GROUP, k, denominator="'k'"),
            (_PRECISION_GROUP,), params="cutoffs", default="5,10,15,20,30,100,200,500,1000",
            formats=(QRELS_JG,)),
    Measure("Rprec_mult_avgjg",
            lambda x: _over_groups(_R_PRECISION_MULT_GROUP, multiplier=x),
            (_R_PRECISION_MULT_GROUP,), params="levels",
            default="0.2,0.4,0.6,0.8,1.0,1.2,1.4,1.6,1.8,2.0", formats=(QRELS_JG,)),
    Measure("yaap", lambda _: Call("yaap").sql(), (Call("yaap"),), missing=None),
    # trec_eval 10's measures that trec_eval 9 lacks (m_rbp.c, m_rbp_resid.c, m_unjudged.c);
    # rbp on the grades in 10 (graded_rbp), binary under --compat 9.0.8.
    Measure("rbp", lambda p: _zero_if_undefined(_GRADED_RBP, persistence=sql_number(p),
                                                gain="'trec_eval'"),
            (_GRADED_RBP, _RBP), params="persistence",
            sql_9=lambda p: _zero_if_undefined(_RBP, persistence=sql_number(p))),
    Measure("rbp_resid", lambda p: _zero_if_undefined(_RBP_RESID, persistence=sql_number(p)),
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
    # trec_eval 10's (measures.c, trec_names).
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
                 "bpref", "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj",
                 "rbp", "rbp_resid", "infAP", "gm_bpref", "utility", "11pt_avg", "ndcg",
                 "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel",
                 "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
                 "set_F", "num_nonrel_judged_ret"),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
    "all_prefs": ("runid", "num_q", *(f"prefs_{field}" for field in prefs.FIELDS)),
    "prefs": ("runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful",
              "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair", "prefs_avgjg"),
}
# trec_eval 9.0.8's all_trec (pytrec_eval's) lacks trec_eval 10's unj, rbp and rbp_resid.
NICKNAMES_9 = {**NICKNAMES, "all_trec": tuple(
    name for name in NICKNAMES["all_trec"] if name not in ("unj", "rbp", "rbp_resid"))}


def nicknames(compat: str) -> dict[str, tuple[str, ...]]:
    """The sets of measures ``-m`` names in the trec_eval version ``compat``."""
    return NICKNAMES_9 if compat == COMPAT_9 else NICKNAMES

