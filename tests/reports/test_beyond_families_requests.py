"""The metrics of issue 28 as requests of ``duckrank.evaluate`` and
``duckrank.reports.beyond_accuracy.beyond_accuracy`` (``user_coverage@10``,
``epc(discount=rbp)@10``, ``pop_reo@10``, ``reo@10``, ...): the same numbers as the macros on
the lists those functions build (the macros are checked against kernels, hand calculations and
RecTools in tests/metrics/test_beyond_coverage.py, test_beyond_novelty.py and
test_beyond_fairness.py); here the lists are written out, so the expected values are the
macros' on the same lists, and a hand calculation for user_coverage's qrels users."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import duckrank
from duckrank.engines.beyond_accuracy import parse_request
from duckrank.reports.beyond_accuracy import beyond_accuracy

# Ranked by score: a [1, 2, 3], b [2, 9], c [4]; e is judged but has no list.
RUN = pd.DataFrame({"user": ["a", "a", "a", "b", "b", "c"], "item": [1, 2, 3, 2, 9, 4],
                    "score": [3.0, 2.0, 1.0, 3.0, 1.0, 1.0]})
QRELS = pd.DataFrame({"user": ["a", "a", "b", "b", "e"], "item": [1, 3, 9, 4, 1]})
TRAIN = pd.DataFrame({"user": ["a", "a", "b", "c", "c", "c", "d", "d"],
                      "item": [1, 2, 2, 2, 9, 9, 3, 2]})
GROUPS = pd.DataFrame({"item": [1, 2, 3, 4, 9], "group": ["x", "y", "x", "y", "z"]})
LISTS = ("SELECT * FROM (VALUES ('a', [1, 2, 3], [1, 3]), ('b', [2, 9], [9, 4]), "
         "('c', [4], NULL)) t(user, rec, truth)")
REQUESTS = {
    "user_coverage@3": None,  # hand: qrels users a, b, e; a and b have a list -> 2/3
    "sufficient_reco@3": "SELECT avg(sufficient_reco) FROM sufficient_reco('l', 3)",
    "unrepeated_reco(deep=true)@2": "SELECT avg(unrepeated_reco) FROM unrepeated_reco('l', 2, "
                                    "deep := true)",
    "epc@3": "SELECT avg(epc) FROM epc('l', 't', 3)",
    "efd(discount=rbp,persistence=0.5)@3": "SELECT avg(efd) FROM efd('l', 't', 3, discount := "
                                           "'rbp', persistence := 0.5)",
    "arp(discount=log)@3": "SELECT avg(arp) FROM arp('l', 't', 3, discount := 'log')",
    "exposure_gini(discount=rbp)@3": "FROM exposure_gini('l', 3, catalog_size := 10, "
                                     "discount := 'rbp')",
    "aclt@3": "SELECT avg(aclt) FROM aclt('l', 't', 3)",
    "aplt(head=items)@3": "SELECT avg(aplt) FROM aplt('l', 't', 3, head := 'items')",
    "pop_reo@3": "SELECT pop_reo FROM pop_reo('l', 't', 3)",
    "pop_rsp(head_share=0.5)@3": "SELECT pop_rsp FROM pop_rsp('l', 't', 3, head_share := 0.5)",
    "reo@3": "SELECT reo FROM reo('l', 't', 'g', 3)",
    "rsp@3": "SELECT rsp FROM rsp('l', 't', 'g', 3)",
    "categorical_diversity@3": "SELECT avg(categorical_diversity) FROM "
                               "categorical_diversity('l', 'c', 3)",
    "rank_biased_entropy@3": "SELECT avg(rank_biased_entropy) FROM rank_biased_entropy('l', "
                             "'c', 3)",
}


@pytest.fixture(scope="module")
def con():
    connection = duckrank.connect()
    connection.execute(f"CREATE TABLE l AS {LISTS}")
    connection.register("t", TRAIN)
    connection.register("g", GROUPS)
    connection.register("c", GROUPS.rename(columns={"group": "category"}))
    yield connection
    connection.close()


def test_beyond_accuracy_gives_the_macros_values(con) -> None:
    got = beyond_accuracy(RUN, list(REQUESTS), qrels=QRELS, train=TRAIN, item_groups=GROUPS,
                          categories=GROUPS.rename(columns={"group": "category"}),
                          catalog_size=10, connection=con)
    assert got["user_coverage@3"][0] == pytest.approx(2 / 3, abs=1e-12)
    for request, query in REQUESTS.items():
        if query is not None:
            expected = con.execute(query).fetchall()[0][0]
            assert got[request][0] == pytest.approx(expected, abs=1e-12), request


def test_evaluate_takes_the_requests(con) -> None:
    wanted = ["ndcg@3", "user_coverage@3", "epc@3", "pop_reo@3", "aplt@3"]
    got = duckrank.evaluate(RUN, QRELS, wanted, train=TRAIN, connection=con)
    expected = beyond_accuracy(RUN, wanted[1:], qrels=QRELS, train=TRAIN, connection=con)
    for request in wanted[1:]:
        assert got[request][0] == pytest.approx(expected[request][0], abs=1e-12), request


@pytest.mark.parametrize(("request_text", "message"), [
    ("bias_disparity@10", "bias_disparity gives one row per pair of groups, not one value; "
     "call the bias_disparity macro in SQL"),
    ("extended_epc@10", "extended_epc reads graded truth (a MAP of item -> grade), which the "
     "lists built here do not carry; call the extended_epc macro in SQL"),
    ("user_mad_rating@10", "user_mad_rating reads the predicted scores of each list, which the "
     "lists built here do not carry; call the user_mad_rating macro in SQL"),
])
def test_sql_only_metrics_are_not_requests(request_text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_request(request_text)


def test_command_line_item_groups(capsys, tmp_path) -> None:
    """`duckrank beyond --item-groups` and `duckrank evaluate --item-groups`: rsp@3 of RUN over
    the groups x {1, 3}, y {2, 4}, z {9} (users a, b, c): recommended x 2 (a: 1, 3), y 3 (a: 2,
    b: 2, c: 4), z 1 (b: 9); not trained on: 3 users x |g| - their training pairs in g: x 6 - 1,
    y 6 - 3, z 3 - 1. P = 2/5, 3/3, 1/2: std / mean (hand calculation, numpy for the last step)."""
    import numpy as np

    from duckrank.cli import main

    RUN.to_csv(tmp_path / "run.csv", index=False)
    QRELS.to_csv(tmp_path / "qrels.csv", index=False)
    TRAIN.to_csv(tmp_path / "train.csv", index=False)
    GROUPS.to_csv(tmp_path / "groups.csv", index=False)
    p = np.array([2 / 5, 1.0, 1 / 2])
    expected = float(np.std(p) / np.mean(p))
    side = ["--train", str(tmp_path / "train.csv"), "--item-groups", str(tmp_path / "groups.csv")]
    assert main(["beyond", str(tmp_path / "run.csv"), "-m", "rsp@3", *side, "--format",
                 "csv"]) == 0
    header, row = capsys.readouterr().out.split()
    assert header == "users,rsp@3"
    assert float(row.split(",")[1]) == pytest.approx(expected, abs=1e-6)
    assert main(["evaluate", str(tmp_path / "run.csv"), str(tmp_path / "qrels.csv"), "-m",
                 "rsp@3", *side, "--format", "csv"]) == 0
    out = capsys.readouterr().out.split()
    assert float(out[1].split(",")[-1]) == pytest.approx(expected, abs=1e-6)
