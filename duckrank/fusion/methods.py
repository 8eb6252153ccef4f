"""The fusion methods of ranx 0.3.21 (``ranx/fusion/``, the list of ``ranx.fusion.fusion_switch``),
one record each, with their formulas as ranx computes them.

Notation (docs/fusion.md): for a query, s(d) is a system's normalised score of item d, p(d) its
1-based position in the system's list (normalised score descending, then original score
descending, then item text descending), n the length of that list, c the number of candidates
(items any system returned for the query), |d| the number of systems that returned d, and w the
system's weight. A sum over systems runs over the systems that returned d unless the method says
what an absent item gets.
"""

from __future__ import annotations

from duckrank.fusion.record import MIN_LOG_ODDS, FusionMethod, Parameter

FOX_SHAW = ("Fox and Shaw, \"Combination of Multiple Searches\", TREC-2 (1993); ranx 0.3.21 "
            "`ranx/fusion/{}.py`")
ISR_PAPER = ("Mourão, Martins and Magalhães, \"Multimodal medical information retrieval with "
             "unsupervised rank fusion\", Computerized Medical Imaging and Graphics 39 (2015); "
             "ranx 0.3.21 `ranx/fusion/{}.py`")
WU_PAPER = ("Wu and Crestani, \"Data fusion with estimated weights\", CIKM 2002; ranx 0.3.21 "
            "`ranx/fusion/{}.py`")
METASEARCH = ("Aslam and Montague, \"Models for Metasearch\", SIGIR 2001; ranx 0.3.21 "
              "`ranx/fusion/{}.py`")
CONDORCET_PAPER = ("Montague and Aslam, \"Condorcet fusion for improved retrieval\", CIKM 2002; "
                   "ranx 0.3.21 `ranx/fusion/{}.py`")
LILLIS_2010 = ("Lillis, Zhang, Toolan, Collier, Leonard and Dunnion, \"Estimating probabilities "
               "for effective data fusion\", SIGIR 2010; ranx 0.3.21 `ranx/fusion/{}.py`")

# ranx's rank-based methods read each system's order; among tied scores that order is numpy's
# sort's, which ranx does not define.
TIE_NOTE = ("same fused scores where no system has tied scores; among tied scores ranx's "
            "positions follow numpy's sort, duckrank's the item text descending")

WEIGHTS = Parameter("weights", "per_system",
                    "one weight per system: `MAP {'bm25': 0.3, 'dense': 0.7}`")


def _comb(name: str, title: str, summary: str, formula: str, combine: str,
          missing: str = "an item a system did not return gets nothing from that system "
                         "(not a 0)", ranx_notes: str = "same fused scores") -> FusionMethod:
    return FusionMethod(
        name=name, title=title, summary=summary, formula=formula, combine=combine,
        missing=missing, source=FOX_SHAW.format(f"comb_{name}"), ranx_notes=ranx_notes,
    )


def _sentinel(value: str) -> str:
    return (f"same fused scores; ranx reads an item a system did not return as {value}, the "
            "same unless a normalised score lies beyond it")


def _isr(name: str, title: str, formula: str, combine: str,
         parameters: tuple[Parameter, ...] = ()) -> FusionMethod:
    return FusionMethod(
        name=name, title=title,
        summary="inverse square rank: each system gives 1 / p(d)^2, summed and boosted by the "
                "number of systems that returned the item",
        formula=formula, parameters=parameters, value="1.0 / (position * position)",
        combine=combine, source=ISR_PAPER.format(name), ranx_notes=TIE_NOTE,
    )


# Positions at which SegFuse's segments end (exclusive): 10 x 2^(k-1) - 5 for k = 1..10
# (Shokouhi 2007, as ranx's segfuse.py builds them).
SEGMENT_ENDS = tuple(10 * 2 ** (k - 1) - 5 for k in range(1, 11))


def _segment() -> str:
    """SegFuse's 0-based segment of a position: the number of segment ends at or before it."""
    ends = ", ".join(str(e) for e in SEGMENT_ENDS)
    return f"len(list_filter([{ends}], lambda e: e <= position - 1))"


# ProbFuse's 0-based segment: the list cut into len(trained) segments of ceil(n / len) items.
_PROB_SEGMENT = "((position - 1) // CAST(ceil(s_count / len(trained)) AS BIGINT))"
# SlideFuse's window around the 0-based position, clipped to the list: [a, b].
_WINDOW_START = "greatest(position - 1 - w, 0)"
_WINDOW_END = "least(position - 1 + w, s_count - 1)"

UNSUPERVISED: tuple[FusionMethod, ...] = (
    _comb("min", "CombMIN", "the least normalised score any system gave the item",
          "min over systems of s(d)", "min(value)", ranx_notes=_sentinel("1e9")),
    _comb("max", "CombMAX", "the greatest normalised score any system gave the item",
          "max over systems of s(d)", "max(value)", ranx_notes=_sentinel("-1e9")),
    _comb("med", "CombMED", "the median of the normalised scores the item got",
          "median over systems of s(d) (the mean of the two middle ones for an even count)",
          "median(value)"),
    _comb("sum", "CombSUM", "the sum of the normalised scores",
          "sum over systems of s(d)", "sum(value)",
          missing="an item a system did not return gets 0 from that system"),
    _comb("anz", "CombANZ", "the mean of the normalised scores over the systems that returned "
          "the item", "sum of s(d) / |d|", "sum(value) / count(*)"),
    _comb("mnz", "CombMNZ", "the sum of the normalised scores times the number of systems that "
          "returned the item", "sum of s(d) x |d|", "sum(value) * count(*)"),
    FusionMethod(
        name="gmnz", title="CombGMNZ",
        summary="CombMNZ with the number of systems raised to a power gamma",
        formula="sum of s(d) x |d|^gamma",
        parameters=(Parameter("gamma", "number", "the exponent of |d| (ranx: required)"),),
        combine="sum(value) * pow(count(*), gamma)",
        missing="an item a system did not return gets nothing from that system",
        source=("Lee, \"Analyses of Multiple Evidence Combination\", SIGIR 1997; ranx 0.3.21 "
                "`ranx/fusion/comb_gmnz.py`"),
    ),
    _isr("isr", "ISR", "sum of 1 / p(d)^2, times |d|", "sum(value) * count(*)"),
    _isr("log_isr", "log_ISR", "sum of 1 / p(d)^2, times ln |d|", "sum(value) * ln(count(*))"),
    _isr("logn_isr", "logN_ISR", "sum of 1 / p(d)^2, times ln(|d| + sigma)",
         "sum(value) * ln(count(*) + sigma)",
         (Parameter("sigma", "number", "added to |d| inside the logarithm", "0.01", 0.0, 1.0),)),
    FusionMethod(
        name="rrf", title="RRF", summary="reciprocal rank fusion",
        formula="sum of 1 / (k + p(d))",
        parameters=(Parameter("k", "number", "the rank constant", "60", 0.0),),
        value="1.0 / (k + position)", ranx_notes=TIE_NOTE,
        source=("Cormack, Clarke and Büttcher, \"Reciprocal rank fusion outperforms Condorcet "
                "and individual rank learning methods\", SIGIR 2009; ranx 0.3.21 "
                "`ranx/fusion/rrf.py`"),
    ),
    FusionMethod(
        name="rbc", title="RBC", summary="rank-biased centroid",
        formula="sum of (1 - phi) x phi^(p(d) - 1)",
        parameters=(Parameter("phi", "number", "the persistence (ranx: required)", None,
                              0.0, 1.0),),
        value="(1 - phi) * pow(phi, position - 1)", ranx_notes=TIE_NOTE,
        source=("Bailey, Moffat, Scholer and Thomas, \"Retrieval Consistency in the Presence of "
                "Query Variations\", SIGIR 2017; ranx 0.3.21 `ranx/fusion/rbc.py`"),
    ),
    FusionMethod(
        name="bordafuse", title="BordaFuse", summary="Borda count",
        formula="sum over every system of c - p(d) + 1 for an item it returned, and "
                "(c - n + 1) / 2 for a candidate it did not",
        value="candidates - position + 1", absent="(candidates - s_count + 1) / 2",
        missing="a candidate a system did not return gets (c - n + 1) / 2 points from it (the "
                "mean of the points left); a system with no list for the query gives every "
                "candidate (c + 1) / 2",
        source=METASEARCH.format("bordafuse"), ranx_notes=TIE_NOTE,
    ),
    FusionMethod(
        name="w_bordafuse", title="Weighted BordaFuse", summary="Borda count, weighted",
        formula="sum over every system of w x (c - p(d) + 1) for an item it returned, and "
                "w x (c - n + 1) / 2 for a candidate it did not",
        parameters=(WEIGHTS,),
        value="weight * (candidates - position + 1)",
        absent="weight * (candidates - s_count + 1) / 2",
        missing="as BordaFuse, each system's points times its weight",
        source=METASEARCH.format("weighted_bordafuse"), ranx_notes=TIE_NOTE,
    ),
    FusionMethod(
        name="condorcet", title="Condorcet", form="pairwise",
        summary="majority vote between every pair of candidates",
        formula="1 + the number of candidates e that d beats + half the number it ties with, "
                "where d beats e when more systems rank d above e than e above d (an item a "
                "system returned is above every item it did not; a system that returned "
                "neither does not vote)",
        missing="a system ranks the items it did not return below those it did, and does not "
                "vote between two of them",
        source=CONDORCET_PAPER.format("condorcet"),
        ranx_notes="same fused scores when the majority relation is a strict order (every pair "
                   "decided, no cycle: ranx's score is then c minus the item's place, duckrank's "
                   "1 + the number of items it beats, the same number); otherwise ranx sorts "
                   "with an inconsistent comparison, from Python's set order of the candidates, "
                   "and its scores vary from run to run",
    ),
    FusionMethod(
        name="w_condorcet", title="Weighted Condorcet", form="pairwise",
        summary="Condorcet with weighted votes",
        formula="as Condorcet, a system's vote counting its weight w",
        parameters=(WEIGHTS,),
        missing="as Condorcet",
        source=CONDORCET_PAPER.format("weighted_condorcet"),
        ranx_notes="as Condorcet",
    ),
    FusionMethod(
        name="wsum", title="Weighted Sum", summary="weighted sum of the normalised scores",
        formula="sum over systems of w x s(d)",
        parameters=(WEIGHTS,), value="weight * value",
        missing="an item a system did not return gets 0 from that system",
        source="ranx 0.3.21 `ranx/fusion/wsum.py` (ranx's default method)",
    ),
    FusionMethod(
        name="wmnz", title="W-MNZ",
        summary="the sum of the normalised scores times the sum of the weights of the systems "
                "that returned the item",
        formula="(sum of s(d)) x (sum of w), both over the systems that returned d",
        parameters=(WEIGHTS,), combine="sum(value) * sum(weight)",
        source=WU_PAPER.format("wmnz"),
    ),
    FusionMethod(
        name="mixed", title="MixED",
        summary="the weighted sum of the normalised scores times the square root of the number "
                "of systems that returned the item",
        formula="(sum of w x s(d)) x sqrt(|d|)",
        parameters=(WEIGHTS,), value="value * weight", combine="sum(value) * sqrt(count(*))",
        source=WU_PAPER.format("mixed"),
    ),
)

PROBS = "probabilities by position, learnt from qrels: `MAP {'bm25': [0.61, 0.48, ...]}`"

SUPERVISED: tuple[FusionMethod, ...] = (
    FusionMethod(
        name="posfuse", title="PosFuse", supervised=True, trained="probs",
        summary="each system gives the probability that its item at that position is relevant",
        formula="sum of P_sys(p(d)), P_sys(i) the share of the training queries with at least i "
                "results whose i-th result is relevant (0 past the longest training list)",
        parameters=(Parameter("probs", "per_position", PROBS),),
        value="coalesce(trained[position], 0)",
        source=LILLIS_2010.format("posfuse"), ranx_notes=TIE_NOTE,
    ),
    FusionMethod(
        name="probfuse", title="ProbFuse", supervised=True, trained="probs",
        summary="each system's list cut into segments; an item gets its segment's probability "
                "of relevance divided by the segment's number",
        formula="sum of P_sys(k) / k, k the 1-based segment of p(d) when the list of n items is "
                "cut into x segments of ceil(n / x) items, P_sys(k) the mean over the training "
                "queries of the share of relevant items in segment k (a query whose list does "
                "not reach it counts 0)",
        parameters=(Parameter("probs", "per_position",
                              "one probability per segment (x = its length), learnt from qrels "
                              "with `n_segments`"),),
        value=f"trained[{_PROB_SEGMENT} + 1] / ({_PROB_SEGMENT} + 1)",
        source=("Lillis, Toolan, Collier and Dunnion, \"ProbFuse: a probabilistic approach to "
                "data fusion\", SIGIR 2006; ranx 0.3.21 `ranx/fusion/probfuse.py`"),
        ranx_notes=TIE_NOTE,
    ),
    FusionMethod(
        name="segfuse", title="SegFuse", supervised=True, trained="probs",
        summary="segments of growing size (5, 10, 20, ...); an item gets its segment's "
                "probability of relevance times its normalised score plus one",
        formula="sum of P_sys(k) x (s(d) + 1), k the segment of p(d) among the segments ending "
                "at 5, 15, 35, ..., 5115 (10 x 2^(k-1) - 5), P_sys(k) the mean over the training "
                "queries of (relevant items in segment k) / (the segment's size); 0 past 5115",
        parameters=(Parameter("probs", "per_position", "one probability per segment (10)"),),
        value=f"CASE WHEN {_segment()} < 10 THEN trained[{_segment()} + 1] * (value + 1) "
              "ELSE 0 END",
        source=("Shokouhi, \"Segmentation of Search Engine Results for Effective Data-Fusion\", "
                "ECIR 2007; ranx 0.3.21 `ranx/fusion/segfuse.py`"),
        ranx_notes=TIE_NOTE,
    ),
    FusionMethod(
        name="slidefuse", title="SlideFuse", supervised=True, trained="probs",
        summary="PosFuse's probabilities averaged over a window of positions",
        formula="sum of (P_sys(a) + ... + P_sys(b)) / (b - a + 1), with a = max(p(d) - w, 1), "
                "b = min(p(d) + w, n), P_sys as PosFuse's (0 past the longest training list)",
        parameters=(Parameter("probs", "per_position", PROBS),
                    Parameter("w", "integer", "the half-width of the window (ranx: required)",
                              None, 0.0)),
        value=f"coalesce(list_sum(trained[{_WINDOW_START} + 1:{_WINDOW_END} + 1]), 0) "
              f"/ ({_WINDOW_END} - {_WINDOW_START} + 1)",
        source=("Lillis, Toolan, Collier and Dunnion, \"Extending Probabilistic Data Fusion "
                "Using Sliding Windows\", ECIR 2008; ranx 0.3.21 `ranx/fusion/slidefuse.py`"),
        ranx_notes=TIE_NOTE,
    ),
    FusionMethod(
        name="bayesfuse", title="BayesFuse", supervised=True, trained="log_odds",
        summary="the sum of each system's log-odds of relevance at the item's position",
        formula="sum over every system of O_sys(p(d)), O_sys(i) = ln(P / (1 - P)) with P the "
                "mean precision over the training queries of the segment of positions holding i "
                "(segments 1-5, 6-10, 11-15, 16-20, 21-30, 31-100, 101-200, 201-500, 501-1000; "
                "P = 0 read as 0.001 and 1 as 0.999)",
        parameters=(Parameter("log_odds", "per_position",
                              "the log-odds by position (1000 of them), learnt from qrels"),),
        value=f"coalesce(trained[position], {MIN_LOG_ODDS})", absent=MIN_LOG_ODDS,
        missing="an item a system did not return gets ln(0.001 / 0.999) from it, as does a "
                "position past the learnt ones (ranx fails there: index out of range)",
        source=METASEARCH.format("bayesfuse"), ranx_notes=TIE_NOTE,
    ),
    FusionMethod(
        name="mapfuse", title="MAPFuse", supervised=True, trained="map_scores",
        summary="each system's MAP on the training queries, divided by the item's position",
        formula="sum of MAP_sys / p(d)",
        parameters=(Parameter("map_scores", "per_system",
                              "each system's mean average precision, learnt from qrels"),),
        value="trained / position",
        source=LILLIS_2010.format("mapfuse"), ranx_notes=TIE_NOTE,
    ),
)
