"""The recommender libraries' metric names, each translated to the duckrank request that gives that
library's number: RecTools 0.19, RePlay 0.22, RecBole 1.2, Elliot, LensKit 2025.8, Microsoft
Recommenders 1.2.1 and Cornac 2.6 (``PEERS``). docs/conventions.md ("Recommender libraries'
names") lists them.

A name is written as its library spells it, with the cut-off after ``@`` (``HR@10``,
``MIUF@10``, ``map_at_k@10``), or qualified by its library (``rectools:NDCG@10``,
``replay:MAP@10``, ``recbole:map@10``; the library and, qualified, the name are matched without
regard to case). Where the libraries that share a name give different numbers (``NDCG``: RecTools
divides by k hits, LensKit does not discount ranks 1 and 2, RePlay is duckrank's default), the
bare name is not guessed: the ones ir_measures registers (``MAP``, ``NDCG``, ``Precision``,
``Recall``, ``MRR``) keep ir_measures' meaning (``duckrank.evaluation.peer_names``) with an
``AmbiguousNameWarning`` naming the other libraries' forms, and any other is an error that lists
them. Options are not taken after an alias (``rectools:NDCG(gain=linear)@10``): the library's
parameters are not duckrank's, so such a request is written in duckrank's own names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Alias:
    """One library's name for a metric: the duckrank request that gives its number
    (``request``, ``{k}`` standing for the cut-off as written; an ``@{k}`` part is dropped when
    none is written), where its definition was read (``source``) and what still differs
    (``note``). ``request`` empty: duckrank has no form that gives that number, and ``note``
    says why."""

    library: str
    name: str
    request: str
    source: str
    note: str = ""


# Where the definitions were read. The accuracy rows of docs/conventions.md were checked user by
# user against RecTools, RePlay, Recommenders and LensKit run in their own venvs
# (tests/metrics/test_peer_conventions.py); RecBole's and Elliot's from their source.
_CHECKED = "checked against the library (docs/conventions.md)"
_RECBOLE = "recbole/evaluator/metrics.py"
_ELLIOT = "elliot/evaluation/metrics/"
_SOURCE = "its source (docs/conventions.md, beyond-accuracy rows)"
_CORNAC = "cornac/metrics/ranking.py"
_RECBOLE_SIZE = ("catalog_size=: its data.num_items, which counts RecBole's padding item (the "
                 "items + 1); its lists always hold k items")

_TABLE: tuple[Alias, ...] = (
    # RecTools 0.19: rectools.metrics, its class names.
    Alias("RecTools", "Precision", "precision_at(denominator=k)@{k}", _CHECKED, "hits / k"),
    Alias("RecTools", "Recall", "recall_at@{k}", _CHECKED),
    Alias("RecTools", "MAP", "average_precision@{k}", _CHECKED, "/ |truth|"),
    Alias("RecTools", "NDCG", "ndcg(ideal=k,relevance=binary)@{k}", _CHECKED,
          "binary relevance; the ideal list holds k hits"),
    Alias("RecTools", "MRR", "mrr@{k}", _CHECKED),
    Alias("RecTools", "HitRate", "hitrate@{k}", _CHECKED),
    Alias("RecTools", "F1Beta", "f_beta@{k}", _CHECKED, "beta 1, precision / k"),
    Alias("RecTools", "PartialAUC", "partial_auc(negatives={k})", _CHECKED,
          "insufficient_handling='ignore'; the list is not cut"),
    Alias("RecTools", "PAP", "pap(negatives={k})", _CHECKED,
          "insufficient_handling='ignore'; the list is not cut"),
    Alias("RecTools", "MeanInvUserFreq", "self_information@{k}", _CHECKED),
    Alias("RecTools", "MIUF", "self_information@{k}", _CHECKED, "MeanInvUserFreq"),
    Alias("RecTools", "AvgRecPopularity", "arp@{k}", _CHECKED, "normalize=False"),
    Alias("RecTools", "Serendipity", "serendipity@{k}", _CHECKED,
          "a user without test interactions: 0 there, NULL here"),
    Alias("RecTools", "SufficientReco", "sufficient_reco@{k}", _CHECKED),
    Alias("RecTools", "UnrepeatedReco", "unrepeated_reco@{k}", _CHECKED),
    Alias("RecTools", "Intersection", "overlap_at@{k}", _CHECKED, "against the other run"),
    Alias("RecTools", "CoveredUsers", "user_coverage@{k}", _CHECKED,
          "the users of the qrels (its test interactions)"),
    Alias("RecTools", "CatalogCoverage", "catalog_coverage(normalize=false)@{k}",
          "rectools/metrics/catalog.py",
          "normalize=False, its default: the distinct items recommended (its catalog as catalog= "
          "or catalog_size=, unused); CatalogCoverage(k, normalize=True) is catalog_coverage@k"),
    Alias("RecTools", "MCC", "mcc@{k}", _CHECKED,
          "the catalogue's size (its catalog's length) from evaluate's catalog_size=; without it "
          "an error (mcc(catalog_size=N)@k also gives it)"),
    Alias("RecTools", "Accuracy", "accuracy@{k}", "rectools/metrics/classification.py",
          "the catalogue's size (its catalog's length) from evaluate's catalog_size=; without it "
          "an error (accuracy(catalog_size=N)@k also gives it)"),
    # RePlay 0.22: replay.metrics.
    Alias("RePlay", "Precision", "precision_at(denominator=k)@{k}", _CHECKED, "hits / k"),
    Alias("RePlay", "Recall", "recall_at@{k}", _CHECKED),
    Alias("RePlay", "MAP", "average_precision(denominator=min_k_truth)@{k}", _CHECKED,
          "/ min(k, |truth|)"),
    Alias("RePlay", "NDCG", "ndcg(relevance=binary)@{k}", _CHECKED, "binary relevance"),
    Alias("RePlay", "MRR", "mrr@{k}", _CHECKED),
    Alias("RePlay", "HitRate", "hitrate@{k}", _CHECKED),
    Alias("RePlay", "Surprisal", "self_information(normalize=true)@{k}", _CHECKED,
          "on lists of at least k items"),
    Alias("RePlay", "CategoricalDiversity", "categorical_diversity@{k}", _SOURCE),
    Alias("RePlay", "Coverage", "catalog_coverage(in_catalog=true)@{k}",
          "replay/metrics/coverage.py", "with its train table as catalog=: only the recommended "
          "items of train count"),
    # RecBole 1.2: its config's metric names (matched without case) and its result keys
    # (hit@10, map@10, ...), recbole/evaluator/metrics.py.
    Alias("RecBole", "hit", "hitrate@{k}", _RECBOLE),
    Alias("RecBole", "mrr", "mrr@{k}", _RECBOLE),
    Alias("RecBole", "ndcg", "ndcg(relevance=binary)@{k}", _RECBOLE,
          "binary relevance; ideal: min(|truth|, k) hits"),
    Alias("RecBole", "precision", "precision_at(denominator=k)@{k}", _RECBOLE,
          "hits / k (its lists always hold k items)"),
    Alias("RecBole", "recall", "recall_at@{k}", _RECBOLE),
    Alias("RecBole", "map", "average_precision(denominator=min_k_truth)@{k}", _RECBOLE,
          "/ min(|truth|, k)"),
    Alias("RecBole", "itemcoverage", "catalog_coverage@{k}", _RECBOLE, _RECBOLE_SIZE),
    Alias("RecBole", "giniindex", "exposure_gini@{k}", _RECBOLE, _RECBOLE_SIZE),
    Alias("RecBole", "averagepopularity", "arp@{k}", _RECBOLE,
          "popularity: the training interactions of the item; its lists always hold k items"),
    Alias("RecBole", "shannonentropy", "exposure_entropy(unit=nats,per_item=true)@{k}",
          _RECBOLE, "natural log, / the distinct items recommended; its lists always hold k "
          "items"),
    Alias("RecBole", "tailpercentage", "long_tail_share(tail_ratio=0.1)@{k}", _RECBOLE,
          "tail_ratio 0.1, its default (another: long_tail_share(tail_ratio=x)@k); ties by its "
          "internal item ids; its lists always hold k items"),
    # Elliot: elliot/evaluation/metrics/<family>/, each class's name().
    Alias("Elliot", "HR", "hitrate@{k}", _ELLIOT + "accuracy/hit_rate/hit_rate.py"),
    Alias("Elliot", "Precision", "precision_at(denominator=k)@{k}",
          _ELLIOT + "accuracy/precision/precision.py", "hits / cutoff"),
    Alias("Elliot", "MAP", "mean_precision_at@{k}", _ELLIOT + "accuracy/map/map.py",
          "the mean of precision@1 .. precision@k (every position, hit or not)"),
    Alias("Elliot", "ARP", "arp@{k}", _SOURCE),
    Alias("Elliot", "EPC", "epc@{k}", _SOURCE, "binary relevance"),
    Alias("Elliot", "EFD", "efd@{k}", _SOURCE, "binary relevance"),
    Alias("Elliot", "ACLT", "aclt@{k}", _SOURCE),
    Alias("Elliot", "APLT", "aplt@{k}", _SOURCE),
    Alias("Elliot", "PopREO", "pop_reo@{k}", _SOURCE),
    Alias("Elliot", "PopRSP", "pop_rsp@{k}", _SOURCE),
    Alias("Elliot", "nDCG", "ndcg(relevance=binary)@{k}", _ELLIOT + "accuracy/ndcg/ndcg.py",
          "binary relevance (graded: its gain 2^(grade - threshold + 1) - 1); ideal: "
          "min(|truth|, k) gains"),
    Alias("Elliot", "Recall", "recall_at@{k}", _ELLIOT + "accuracy/recall/recall.py"),
    Alias("Elliot", "MRR", "mrr@{k}", _ELLIOT + "accuracy/mrr/mrr.py"),
    Alias("Elliot", "MAR", "mean_recall_at@{k}", _ELLIOT + "accuracy/mar/mar.py",
          "the mean of recall@1 .. recall@k"),
    Alias("Elliot", "SEntropy", "exposure_entropy@{k}", _SOURCE,
          "when every list holds k items (it weighs each list by 1 / its length)"),
    Alias("Elliot", "Gini", "exposure_gini(denominator=n_minus_1,complement=true)@{k}",
          _ELLIOT + "diversity/gini_index/gini_index.py",
          "1 - the Gini index over N - 1; catalog_size=: its num_items"),
    Alias("Elliot", "ItemCoverage", "catalog_coverage(normalize=false)@{k}",
          _ELLIOT + "coverage/item_coverage/item_coverage.py",
          "the distinct items recommended (a catalog= or catalog_size= is needed, unused)"),
    Alias("Elliot", "UserCoverage", "user_coverage(normalize=false)@{k}",
          _ELLIOT + "coverage/user_coverage/user_coverage.py",
          "the users of the qrels whose list holds an item"),
    # LensKit 2025.8: lenskit.metrics.
    Alias("LensKit", "Precision", "precision_at@{k}", _CHECKED, "hits / min(k, len(list))"),
    Alias("LensKit", "Recall", "recall_at(denominator=min_k_truth)@{k}", _CHECKED,
          "/ min(k, |truth|)"),
    Alias("LensKit", "NDCG", "ndcg(discount=jarvelin,relevance=binary)@{k}", _CHECKED,
          "binary relevance (its default gain); ranks 1 and 2 undiscounted"),
    Alias("LensKit", "RecipRank", "mrr@{k}", _CHECKED),
    Alias("LensKit", "Hit", "hitrate@{k}", _CHECKED),
    Alias("LensKit", "AveragePrecision", "average_precision(denominator=min_returned_truth)@{k}",
          _CHECKED, "/ min(len(list), |truth|)"),
    Alias("LensKit", "ListGini", "exposure_gini@{k}", _SOURCE),
    Alias("LensKit", "RankBiasedEntropy", "rank_biased_entropy(smoothing=1e-6)@{k}", _SOURCE),
    Alias("LensKit", "ExposureGini", "exposure_gini(discount=rbp)@{k}", _SOURCE,
          "GeometricRankWeight(0.85): persistence 0.85, the default"),
    # RBP: (1 - p) sum of p^(rank - 1) over the relevant items of the list cut at n, its
    # default GeometricRankWeight(patience) normalised by its series sum 1 / (1 - p).
    Alias("LensKit", "RBP", "rbp(persistence=0.85)@{k}", "lenskit/metrics/ranking/_rbp.py",
          "patience 0.85, its default; normalize=False; a user without relevant items: NaN "
          "there, 0 here"),
    # Microsoft Recommenders 1.2.1: recommenders.evaluation.python_evaluation's functions.
    Alias("Recommenders", "precision_at_k", "precision_at(denominator=k)@{k}", _CHECKED),
    Alias("Recommenders", "recall_at_k", "recall_at@{k}", _CHECKED),
    Alias("Recommenders", "ndcg_at_k", "ndcg(relevance=binary)@{k}", _CHECKED,
          "score_type='binary'"),
    Alias("Recommenders", "map_at_k", "average_precision(denominator=min_k_truth)@{k}", _CHECKED,
          "/ min(k, |truth|)"),
    Alias("Recommenders", "catalog_coverage", "catalog_coverage@{k}", _CHECKED,
          "with train as the catalog, on lists cut at k"),
    Alias("Recommenders", "distributional_coverage", "exposure_entropy@{k}", _CHECKED),
    Alias("Recommenders", "diversity", "ild_embedding@{k}", _CHECKED,
          "item_sim_measure='item_feature_vector'"),
    Alias("Recommenders", "novelty", "self_information(popularity=interactions)@{k}",
          "recommenders/evaluation/python_evaluation.py",
          "when every list holds k items (it averages over every recommendation; it takes no k: "
          "cut the lists)"),
    # Cornac 2.6: cornac.metrics, its class names and its result names (F1@k for FMeasure).
    # Cornac ranks every candidate item, so a list holds every relevant item; k=-1 (no
    # cut-off) is the default of NDCG, Precision and Recall, MAP and MRR take none.
    Alias("Cornac", "NDCG", "ndcg(relevance=binary)@{k}", _CORNAC,
          "binary relevance; ideal: min(|truth|, k) hits"),
    Alias("Cornac", "Precision", "precision_at(denominator=k)@{k}", _CORNAC, "hits / k"),
    Alias("Cornac", "Recall", "recall_at@{k}", _CORNAC),
    Alias("Cornac", "FMeasure", "f_beta@{k}", _CORNAC, "beta 1, precision / k; 0 without a hit"),
    Alias("Cornac", "F1", "f_beta@{k}", _CORNAC, "FMeasure's result name"),
    Alias("Cornac", "HitRatio", "hitrate@{k}", _CORNAC),
    Alias("Cornac", "MRR", "mrr", _CORNAC,
          "no cut-off; a user without a hit: an error there, 0 here"),
    Alias("Cornac", "MAP", "average_precision", _CORNAC,
          "no cut-off, / |truth|; tied scores rank at their worst place there (rankdata 'max'), "
          "by item here"),
)

# The libraries by the key a qualified name is written with (``rectools:NDCG@10``).
PEERS: dict[str, str] = {alias.library.lower(): alias.library for alias in _TABLE}

# duckrank's short names for its own functions, read where no library's name is spelt so.
SHORTHANDS: dict[str, str] = {"coverage": "catalog_coverage"}


def aliases_of(library: str) -> dict[str, Alias]:
    """The names of ``library`` (a key of ``PEERS``), by their lower-case spelling."""
    return {a.name.lower(): a for a in _TABLE if a.library.lower() == library}


def by_spelling() -> dict[str, list[Alias]]:
    """Every name as the libraries spell it, with the libraries' aliases of that spelling (a bare
    name is matched as spelt: RecBole's ``hit`` and LensKit's ``Hit`` are two names)."""
    found: dict[str, list[Alias]] = {}
    for alias in _TABLE:
        found.setdefault(alias.name, []).append(alias)
    return found


def shared_readings(aliases: list[Alias]) -> set[str]:
    """The distinct requests the libraries that spell a name alike give it."""
    return {a.request for a in aliases}


# Every qualifier: the recommender libraries' and ir_measures' (its names, read as without it,
# without the warning that the libraries read them otherwise).
QUALIFIERS = (*PEERS, "ir_measures")

_QUALIFIED = re.compile(r"^\s*(?P<library>[A-Za-z_]\w*)\s*:\s*(?P<rest>.*)$", re.DOTALL)


def split_qualifier(text: str) -> tuple[str | None, str]:
    """(library key, the rest) of ``rectools:NDCG@10``; (None, text) when no library is named.
    A name before ':' that is no library's is an error that lists the libraries."""
    match = _QUALIFIED.match(text)
    if match is None:
        return None, text
    library = match["library"].lower()
    if library not in QUALIFIERS:
        raise ValueError(f"metric {text.strip()!r}: {match['library']!r} is no library whose names "
                         f"duckrank reads; write one of {', '.join(sorted(QUALIFIERS))}: before "
                         "the name, e.g. rectools:NDCG@10")
    return library, match["rest"]




def request_text(alias: Alias, label: str, options: str | None, k: str | None) -> str:
    """The duckrank request of ``alias`` at the cut-off ``k`` (as written; None when none is)."""
    if not alias.request:
        raise ValueError(f"metric {label!r}: {_owner(alias)} is not available in "
                         f"duckrank: {alias.note}")
    if options is not None:
        raise ValueError(f"metric {label!r}: {_owner(alias)} takes no options here "
                         f"(its parameters are not duckrank's); write {_template(alias)} with "
                         "duckrank's options instead (docs/conventions.md)")
    if k is not None and "{k}" not in alias.request:
        raise ValueError(f"metric {label!r}: {_owner(alias)} takes no cut-off; write "
                         f"{alias.library.lower()}:{alias.name} (it is {alias.request})")
    if k is None:
        if "{k}" in alias.request.replace("@{k}", ""):
            raise ValueError(f"metric {label!r}: {_owner(alias)} needs its "
                             f"cut-off, e.g. {alias.name}@10")
        return alias.request.replace("@{k}", "")
    return alias.request.format(k=k)


def _owner(alias: Alias) -> str:
    """``RecTools' NDCG``: the library's name of the metric."""
    possessive = "'" if alias.library.endswith("s") else "'s"
    return f"{alias.library}{possessive} {alias.name}"


def _template(alias: Alias) -> str:
    return alias.request.replace("{k}", "k")


def reading_list(aliases: list[Alias]) -> str:
    """``rectools:NDCG@k = ndcg(ideal=k)@k, ...``: how each library's form is written."""
    return "; ".join(f"{a.library.lower()}:{a.name}{'@k' if takes_cut_off(a) else ''} = "
                     f"{_template(a) or 'not available'}" for a in aliases)


def takes_cut_off(alias: Alias) -> bool:
    """Whether the name is written with a cut-off (Cornac's MAP and MRR take none)."""
    return not alias.request or "{k}" in alias.request
