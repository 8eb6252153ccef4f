"""The recommender libraries' metric names (``duckrank.evaluation.aliases``) and "did you mean".

Expected values are hand calculations from each library's own definition, cited at each test:
RecTools 0.19 (rectools/metrics/ranking.py, novelty.py, popularity.py docstrings), RePlay 0.22
(replay/metrics/*.py docstrings), RecBole 1.2 (recbole/evaluator/metrics.py: MAP divides by
min(|R(u)|, K), NDCG's ideal holds min(|R(u)|, K) hits), Elliot (accuracy/hit_rate/hit_rate.py: 1
if any of the top cutoff is relevant; accuracy/map/map.py: the mean of precision@1..cutoff;
accuracy/mar/mar.py: the mean of recall@1..cutoff) and
LensKit 2025.8 (lenskit.metrics: Precision divides by the list's length, Recall by min(k, |truth|),
NDCG discounts by max(1, log2 rank)), Cornac 2.6 (cornac/metrics/ranking.py) and RecBole 1.2's
and Elliot's beyond-accuracy metrics (recbole/evaluator/metrics.py ItemCoverage, GiniIndex,
AveragePopularity; Elliot's diversity/shannon_entropy). No value here is computed by duckrank's
own functions.
"""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest

import duckrank
from duckrank.evaluation.aliases import by_spelling, takes_cut_off
from duckrank.evaluation.metric_requests import (
    AmbiguousNameWarning,
    PeerConventionWarning,
    closest_names,
    expand_metric,
    parse_metric,
    parse_metrics,
    split_metrics,
)

# Two users, k = 3.
# u1 ranks a, b, c, d; relevant b, d, e, f (4): its top 3 holds one hit, b at rank 2.
# u2 ranks x alone; relevant x, y (2): one hit at rank 1, a list shorter than k.
RUN = pd.DataFrame({"user": ["u1"] * 4 + ["u2"], "item": ["a", "b", "c", "d", "x"],
                    "score": [4.0, 3.0, 2.0, 1.0, 1.0]})
QRELS = pd.DataFrame({"user": ["u1"] * 4 + ["u2"] * 2, "item": ["b", "d", "e", "f", "x", "y"]})
L3 = 1 / math.log2(3)  # the discount of rank 2 (1 / log2(2 + 1))

# (request, (u1, u2)): each library's definition worked by hand on the data above.
HAND = [
    # Elliot HR and RecTools/RePlay HitRate, LensKit Hit, RecBole hit: 1 if the top k holds a hit.
    ("HR@3", (1.0, 1.0)),
    ("HitRate@3", (1.0, 1.0)),
    ("Hit@3", (1.0, 1.0)),
    ("recbole:hit@3", (1.0, 1.0)),  # (hit@3 beside Hit@3: DuckDB columns ignore case)
    # RecTools Precision: hits / k (u2: 1 / 3); LensKit Precision: hits / len(list) (u2: 1 / 1).
    ("rectools:Precision@3", (1 / 3, 1 / 3)),
    ("lenskit:Precision@3", (1 / 3, 1.0)),
    ("precision_at_k@3", (1 / 3, 1 / 3)),  # Recommenders: hits / k
    # RecTools Recall: hits / |truth|; LensKit Recall: hits / min(k, |truth|) (u1: 1 / 3).
    ("rectools:Recall@3", (1 / 4, 1 / 2)),
    ("lenskit:Recall@3", (1 / 3, 1 / 2)),
    # MAP, u1: precision at the hit (rank 2) = 1/2. RecTools divides by |truth| = 4; RePlay,
    # RecBole and Recommenders' map_at_k by min(k, |truth|) = 3; LensKit's AveragePrecision by
    # min(len(list), |truth|): u2's list holds 1 item, so 1 / 1.
    ("rectools:MAP@3", (0.5 / 4, 1 / 2)),
    ("replay:MAP@3", (0.5 / 3, 1 / 2)),
    ("recbole:map@3", (0.5 / 3, 1 / 2)),
    ("map_at_k@3", (0.5 / 3, 1 / 2)),
    ("AveragePrecision@3", (0.5 / 3, 1.0)),
    # NDCG, DCG u1 = 1 / log2(3), u2 = 1. RecTools: ideal of k = 3 hits (1 + L3 + 1/2) for both;
    # RePlay and RecBole: ideal of min(k, |truth|) hits (u2: 1 + L3); LensKit: rank r discounted
    # by max(1, log2 r), so rank 2 is undiscounted: DCG u1 = 1, ideal u1 = 1 + 1 + L3, u2 = 1 + 1.
    ("rectools:NDCG@3", (L3 / (1 + L3 + 0.5), 1 / (1 + L3 + 0.5))),
    ("replay:NDCG@3", (L3 / (1 + L3 + 0.5), 1 / (1 + L3))),
    ("recbole:ndcg@3", (L3 / (1 + L3 + 0.5), 1 / (1 + L3))),
    ("lenskit:NDCG@3", (1 / (2 + L3), 1 / 2)),
    # MRR (RecTools, RePlay), LensKit RecipRank: 1 / rank of the first hit.
    ("rectools:MRR@3", (1 / 2, 1.0)),
    ("RecipRank@3", (1 / 2, 1.0)),
    # LensKit RBP (lenskit/metrics/ranking/_rbp.py, 2025.8): the relevant items' weights
    # p^(rank - 1) in the list cut at n, divided by their series sum 1 / (1 - p), patience p 0.85
    # by default: u1's hit at rank 2 gives 0.15 * 0.85, u2's at rank 1 gives 0.15.
    ("lenskit:RBP@3", ((1 - 0.85) * 0.85, 1 - 0.85)),
    # RecTools' Accuracy (rectools/metrics/classification.py), written as the conventions page
    # says since rectools:Accuracy cannot carry the catalogue: (TP + TN) / 8, TN = 8 - k - FN.
    # u1: TP 1, FN 3, TN 2; u2: TP 1, FN 1, TN 4.
    ("accuracy(catalog_size=8)@3", (3 / 8, 5 / 8)),
]


@pytest.fixture(scope="module")
def per_user() -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PeerConventionWarning)
        frame = duckrank.evaluate(RUN, QRELS, [text for text, _ in HAND], per_user=True)
    return frame.set_index("user")


@pytest.mark.parametrize(("text", "expected"), HAND, ids=[t for t, _ in HAND])
def test_a_librarys_name_gives_that_librarys_number(per_user, text, expected) -> None:
    assert per_user.loc["u1", text] == pytest.approx(expected[0], abs=1e-12)
    assert per_user.loc["u2", text] == pytest.approx(expected[1], abs=1e-12)


def test_the_column_is_the_name_as_written_with_graded_qrels_too() -> None:
    """The libraries' NDCG is binary (RecTools, RePlay, RecBole, LensKit's default gain): over
    graded qrels the alias keeps the binary reading (grade > 0), and its label."""
    graded = QRELS.assign(grade=[3, 1, 2, 1, 2, 1])
    result = duckrank.evaluate(RUN, graded, ["rectools:NDCG@3", "ndcg@3"], per_user=True)
    assert "rectools:NDCG@3" in result.columns
    u1 = result.set_index("user").loc["u1"]
    assert u1["rectools:NDCG@3"] == pytest.approx(L3 / (1 + L3 + 0.5), abs=1e-12)


def test_beyond_accuracy_names() -> None:
    """RecTools' MeanInvUserFreq (MIUF): per user the mean over the top k of -log2(users who
    interacted with the item / users of train); AvgRecPopularity (Elliot's ARP too): the mean of
    the items' interaction counts; RePlay's Surprisal: MIUF / log2(users of train).
    train: 4 users; a: 2 users, b: 1, c: 4, x: 1. u1's top 3: a, b, c -> -log2 of 2/4, 1/4,
    4/4 = 1, 2, 0 (mean 1); u2: x -> 2. Means over the users: MIUF 1.5; ARP (7/3 + 1) / 2."""
    train = pd.DataFrame({"user": ["p", "q", "p", "p", "q", "r", "s", "q"],
                          "item": ["a", "a", "b", "c", "c", "c", "c", "x"]})
    # Labelled by the duckrank request each becomes (the beyond-accuracy engine reads it again);
    # ARP and AvgRecPopularity are one request.
    result = duckrank.evaluate(RUN, QRELS, ["MIUF@3", "ARP@3", "AvgRecPopularity@3",
                                            "Surprisal@3"], train=train)
    assert list(result.columns[-3:]) == ["self_information@3", "arp@3",
                                         "self_information(normalize=true)@3"]
    assert result["self_information@3"][0] == pytest.approx(1.5, abs=1e-12)
    assert result["arp@3"][0] == pytest.approx((7 / 3 + 1) / 2, abs=1e-12)
    assert result["self_information(normalize=true)@3"][0] == pytest.approx(
        (1 / 2 + 2 / 2) / 2, abs=1e-12)


# Cornac and Elliot, by hand. Every item a..e is ranked (Cornac ranks every candidate): v1 ranks
# a, b, c, d, e, relevant b, d, e (ranks 2, 4, 5); v2 ranks a, c, b, d, e, relevant e (rank 5).
FULL_RUN = pd.DataFrame({"user": ["v1"] * 5 + ["v2"] * 5, "item": list("abcde") + list("acbde"),
                         "score": [5.0, 4.0, 3.0, 2.0, 1.0] * 2})
FULL_QRELS = pd.DataFrame({"user": ["v1", "v1", "v1", "v2"], "item": ["b", "d", "e", "e"]})
L5, L6 = 1 / math.log2(5), 1 / math.log2(6)  # the discounts of ranks 4 and 5
FULL_HAND = [
    # NDCG@3 (Cornac, Elliot's nDCG): v1 DCG = L3, ideal min(3, 3) hits = 1 + L3 + 1/2; v2 no hit.
    ("cornac:NDCG@3", (L3 / (1 + L3 + 0.5), 0.0)),
    ("elliot:nDCG@3", (L3 / (1 + L3 + 0.5), 0.0)),
    # Cornac's NDCG without k: the whole ranking, ideal every relevant item: v1 (L3 + L5 + L6) /
    # (1 + L3 + 1/2), v2 L6 / 1.
    ("cornac:NDCG", ((L3 + L5 + L6) / (1 + L3 + 0.5), L6)),
    # Precision@3 = hits / 3, Recall@3 = hits / |truth|, F1 = 2PR / (P + R) (0 when P + R = 0).
    ("cornac:Precision@3", (1 / 3, 0.0)),
    ("cornac:Recall@3", (1 / 3, 0.0)),
    ("elliot:Recall@3", (1 / 3, 0.0)),
    ("FMeasure@3", (1 / 3, 0.0)),
    ("HitRatio@3", (1.0, 0.0)),
    # MRR: Cornac's has no cut-off (v2: 1/5); Elliot's stops at k.
    ("cornac:MRR", (1 / 2, 1 / 5)),
    ("elliot:MRR@3", (1 / 2, 0.0)),
    # Cornac MAP: mean over the relevant items of (its rank among them) / (its rank):
    # v1 (1/2 + 2/4 + 3/5) / 3, v2 1/5.
    ("cornac:MAP", ((0.5 + 0.5 + 0.6) / 3, 1 / 5)),
    # Elliot's MAP@5 (accuracy/map/map.py): the mean of precision@1..5, hit or not: v1 0, 1/2,
    # 1/3, 2/4, 3/5; v2 0, 0, 0, 0, 1/5. MAR@5 (accuracy/mar/mar.py), recall@1..5: v1 0, 1/3,
    # 1/3, 2/3, 1; v2 0, 0, 0, 0, 1.
    ("elliot:MAP@5", ((0.5 + 1 / 3 + 0.5 + 0.6) / 5, (1 / 5) / 5)),
    ("MAR@5", ((1 / 3 + 1 / 3 + 2 / 3 + 1) / 5, 1 / 5)),
]


def test_cornac_and_elliot_names_by_hand() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PeerConventionWarning)
        frame = duckrank.evaluate(FULL_RUN, FULL_QRELS, [text for text, _ in FULL_HAND],
                                  per_user=True).set_index("user")
    for text, (v1, v2) in FULL_HAND:
        assert frame.loc["v1", text] == pytest.approx(v1, abs=1e-12), text
        assert frame.loc["v2", text] == pytest.approx(v2, abs=1e-12), text


def test_beyond_accuracy_names_of_recbole_rectools_lenskit_and_elliot() -> None:
    """RUN's top 3: u1 a, b, c; u2 x; catalogue of 8 items; train as in
    test_beyond_accuracy_names (a: 2 rows, b: 1, c: 4, x: 1).
    RecBole itemcoverage: 4 distinct items / 8 = 0.5. RecBole giniindex: counts 1, 1, 1, 1 at
    the places 5..8 of the 8 sorted: sum (2j - 9) x 1 = 1 + 3 + 5 + 7 = 16, / 4 / 8 = 0.5.
    RecBole averagepopularity: (7/3 + 1) / 2. RecTools CoveredUsers: both users of the qrels
    have a list: 1. LensKit ExposureGini: weights 0.85^(rank - 1): a 1, b 0.85, c 0.7225, x 1,
    sorted c, b, a, x at the places 5..8: (0.7225 + 3 x 0.85 + 5 + 7) / (8 x 3.5725).
    Elliot SEntropy: weights a, b, c 1/3 and x 1, each item's -log2(1 / 4) = 2:
    (3 x 1/3 + 1) x 2 / 2 users = 2."""
    train = pd.DataFrame({"user": ["p", "q", "p", "p", "q", "r", "s", "q"],
                          "item": ["a", "a", "b", "c", "c", "c", "c", "x"]})
    names = ["itemcoverage@3", "giniindex@3", "averagepopularity@3", "CoveredUsers@3",
             "ExposureGini@3", "SEntropy@3"]
    result = duckrank.evaluate(RUN, QRELS, names, train=train, catalog_size=8)
    columns = ["catalog_coverage@3", "exposure_gini@3", "arp@3", "user_coverage@3",
               "exposure_gini(discount=rbp)@3", "exposure_entropy@3"]
    assert list(result.columns[-len(columns):]) == columns
    expected = [0.5, 0.5, (7 / 3 + 1) / 2, 1.0, (0.7225 + 3 * 0.85 + 12) / (8 * 3.5725), 2.0]
    assert result[columns].iloc[0].tolist() == pytest.approx(expected, abs=1e-12)


def test_coverage_is_catalog_coverage() -> None:
    """``coverage@k``: the distinct items of the top k lists / the catalogue (Recommenders'
    catalog_coverage): a, b, c, x of a catalogue of 8 -> 1/2."""
    result = duckrank.evaluate(RUN, QRELS, ["coverage@3"], catalog_size=8)
    assert result["catalog_coverage@3"][0] == pytest.approx(0.5, abs=1e-12)


def test_the_cut_off_can_become_an_option() -> None:
    """RecTools' PartialAUC(k) and PAP(k) count k negatives over the whole list
    (docs/conventions.md): the cut-off is the negatives option."""
    request = parse_metric("rectools:PartialAUC@10")
    assert (request.name, request.options, request.k) == ("partial_auc", (("negatives", 10),),
                                                          None)
    assert parse_metric("PAP@5").options == (("negatives", 5),)


def test_duckrank_and_ir_measures_keep_their_names() -> None:
    """duckrank's lower-case names stay duckrank's (RecBole's map divides by min(k, |truth|),
    duckrank's map by |truth|); ir_measures' names stay ir_measures'."""
    assert parse_metric("map@10").options == ()
    assert parse_metric("recbole:map@10").options == (("denominator", "min_k_truth"),)
    assert parse_metric("ir_measures:MAP@10").peer == "ir_measures"
    assert parse_metric("NDCG@10").peer == "ir_measures"


def test_a_name_the_libraries_compute_differently_warns_which_was_used() -> None:
    with pytest.warns(AmbiguousNameWarning, match=r"NDCG@10: read as ir_measures' NDCG.*"
                      r"rectools:NDCG@k = ndcg\(ideal=k,relevance=binary\)@k.*lenskit:NDCG@k"):
        parse_metrics(["NDCG@10"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", AmbiguousNameWarning)
        parse_metrics(["ir_measures:MAP@10", "rectools:MAP@10"],
                      duckrank.evaluation.CONVENTIONS["ir_measures"])
    # Cornac's MRR takes no cut-off (the whole ranking): MRR@10 is not its number.
    with pytest.warns(AmbiguousNameWarning, match=r"rectools:MRR@k = mrr@k.*cornac:MRR = mrr;"):
        parse_metrics(["MRR@10"])


def test_rectools_catalogue_measures_read_evaluates_catalog_size() -> None:
    """RecTools' MCC and Accuracy (rectools/metrics/classification.py) count the catalogue:
    evaluate's catalog_size= reaches them, and without one the library's name is an error (not
    duckrank's NULL). By hand, k = 3, catalogue 8: u1 TP 1, FP 2, FN 3, TN 8 - 3 - 3 = 2; u2 TP
    1, FP 2, FN 1, TN 4. Accuracy (TP + TN) / 8; MCC (TP TN - FP FN) / sqrt((TP + FP)(TP + FN)
    (TN + FP)(TN + FN))."""
    frame = duckrank.evaluate(RUN, QRELS, ["rectools:Accuracy@3", "rectools:MCC@3"],
                              per_user=True, catalog_size=8).set_index("user")
    assert frame["rectools:Accuracy@3"].tolist() == pytest.approx([3 / 8, 5 / 8], rel=1e-12)
    assert frame["rectools:MCC@3"].tolist() == pytest.approx(
        [(2 - 6) / math.sqrt(3 * 4 * 4 * 5), (4 - 2) / math.sqrt(3 * 2 * 6 * 5)], rel=1e-12)
    with pytest.raises(ValueError, match=r"'rectools:MCC@3': the RecTools measure counts the "
                                         r"catalogue: give evaluate catalog_size="):
        duckrank.evaluate(RUN, QRELS, ["rectools:MCC@3"])


@pytest.mark.parametrize(("text", "message"), [
    ("rectools:NDCG(gain=linear)@10", r"RecTools' NDCG takes no options here.*ndcg\(ideal=k"),
    ("rectools:PartialAUC", r"needs its cut-off"),
    ("cornac:MAP@10", r"Cornac's MAP takes no cut-off; write cornac:MAP \(it is "
                      r"average_precision\)"),
    ("foo:ndcg@10", r"'foo' is no library .*rectools"),
    ("rectools:NDGC@10", r"no RecTools metric named 'NDGC'.*did you mean NDCG\?"),
    ("ir_measures:ndgc@10", r"ir_measures has no measure 'ndgc'; did you mean NDCG, nDCG"),
])
def test_what_cannot_be_given_says_why(text, message) -> None:
    with pytest.raises(ValueError, match=message):
        parse_metric(text)


@pytest.mark.parametrize(("text", "closest"), [
    ("ndgc@10", "ndcg"), ("presicion@5", "precision"), ("NDGC@10", "NDCG"),
    ("hitrat@10", "hitrate"), ("MIUFF@10", "MIUF"), ("catalog_covrage@10", "catalog_coverage"),
])
def test_did_you_mean(text, closest) -> None:
    with pytest.raises(ValueError, match=rf"metric '{text}': did you mean [^?]*\b{closest}\b"):
        parse_metric(text)


def test_did_you_mean_through_evaluate_and_the_beyond_names() -> None:
    with pytest.raises(ValueError, match=r"did you mean .*\bndcg\b.*unknown metric 'ndgc'"):
        duckrank.evaluate(RUN, QRELS, ["ndgc@10"])
    assert "arp" in closest_names("arpp")


def test_expanding_and_splitting_keep_the_library() -> None:
    assert expand_metric("rectools:NDCG@5,10") == ["rectools:NDCG@5", "rectools:NDCG@10"]
    accuracy, beyond = split_metrics(["HR@1..2", "MIUF@5"])
    assert [r.label for r in accuracy] == ["HR@1", "HR@2"]
    assert [(r.text, r.metric.name) for r in beyond] == [("self_information@5",
                                                           "self_information")]


def test_every_alias_reads() -> None:
    """Each row of the table parses to a duckrank request (or says why it cannot)."""
    for spelling, found in by_spelling().items():
        for alias in found:
            text = f"{alias.library.lower()}:{spelling}" + ("@10" if takes_cut_off(alias) else "")
            if not alias.request:
                with pytest.raises(ValueError, match="not available"):
                    parse_metric(text)
            elif not split_metrics([text])[1]:
                assert parse_metric(text).label == text


def test_the_command_line_and_compare_take_the_names(tmp_path, capsys) -> None:
    """The CLI's -m and compare read the same names: the hand values of HAND above."""
    from duckrank.cli import main

    run, qrels = tmp_path / "run.csv", tmp_path / "qrels.csv"
    RUN.to_csv(run, index=False)
    QRELS.to_csv(qrels, index=False)
    code = main(["evaluate", str(run), str(qrels), "-m", "replay:MAP@3", "-m", "HR@3",
                 "--format", "csv"])
    out = capsys.readouterr().out
    assert code == 0
    row = out.splitlines()
    header, values = row[0].split(","), row[1].split(",")
    assert float(values[header.index("replay:MAP@3")]) == pytest.approx(
        (0.5 / 3 + 1 / 2) / 2, abs=1e-9)
    assert float(values[header.index("HR@3")]) == 1.0
    code = main(["evaluate", str(run), str(qrels), "-m", "presicion@3"])
    assert code == 1 and "did you mean" in capsys.readouterr().err

    report = duckrank.compare({"a": RUN, "b": RUN}, QRELS, ["rectools:NDCG@3"])
    assert "rectools:NDCG@3" in str(report)


def test_the_conventions_page_lists_every_alias() -> None:
    """docs/conventions.md ("Recommender libraries' names") has a row per library's name."""
    from pathlib import Path

    text = Path(__file__).resolve().parents[1].joinpath("docs", "conventions.md").read_text()
    section = text[text.index("## Recommender libraries' names"):text.index("## ir_measures'")]
    for spelling, found in by_spelling().items():
        for alias in found:
            written = f"{alias.library.lower()}:{spelling}" + ("@k" if takes_cut_off(alias) else "")
            assert f"`{written}`" in section, spelling

