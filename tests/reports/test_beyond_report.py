"""duckrank.reports.beyond_accuracy: the beyond-accuracy macros for a long-format run, from
Python. Expected values are hand calculations on one small example (written out below) and,
for the rest, the macros themselves over the lists built by hand (their own tests check them
against kernels and peers)."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from duckrank.engines.beyond_accuracy import parse_request
from duckrank.reports.beyond_accuracy import beyond_accuracy

# Two users. Ranked by score, user 1's list is [10, 20, 30], user 2's [40, 10]; the second
# system's [20, 10] and [40]; relevant items: user 1 {20, 40}, user 2 {10}.
RUN = pd.DataFrame({"user": [1, 1, 1, 2, 2], "item": [30, 10, 20, 40, 10],
                    "score": [1.0, 3.0, 2.0, 2.0, 1.0]})
OTHER = pd.DataFrame({"user": [1, 1, 2], "item": [20, 10, 40], "score": [2.0, 1.0, 1.0]})
QRELS = pd.DataFrame({"user": [1, 1, 2], "item": [20, 40, 10]})
TRAIN = pd.DataFrame({"user": [1, 2, 3, 4, 1, 2], "item": [10, 10, 10, 10, 20, 40]})
PROPENSITIES = pd.DataFrame({"item": [10, 20, 40], "propensity": [1.0, 0.5, 0.25]})


def test_hand_example() -> None:
    """k = 2. Top 2: user 1 [10, 20], user 2 [40, 10].
    catalog_coverage: items {10, 20, 40} of 10 = 0.3.
    arp: training rows 10: 4, 20: 1, 40: 1; user 1 (4 + 1) / 2, user 2 (1 + 4) / 2: 2.5.
    overlap_at with the other system: user 1 {10, 20} & {20, 10} = 2 of 2, user 2 {40} of
    {40, 10} = 1 of 2: mean 0.75.
    ips_recall with the propensity table (w = 1, 2, 4): user 1 hits 20 (w 2) of {20, 40}: ips
    2 / 2 = 1, snips 2 / 6; user 2 hits 10 of {10}: 1 either way. Means 1 and 2/3."""
    got = beyond_accuracy(
        RUN, ["catalog_coverage@2", "arp@2", "overlap_at@2", "ips_recall(estimator=ips)@2",
              "ips_recall@2"],
        qrels=QRELS, other=OTHER, train=TRAIN, catalog_size=10, propensities=PROPENSITIES)
    assert list(got.columns) == ["users", "catalog_coverage@2", "arp@2", "overlap_at@2",
                                 "ips_recall(estimator=ips)@2", "ips_recall@2"]
    assert got.iloc[0].tolist() == pytest.approx([2, 0.3, 2.5, 0.75, 1.0, 2 / 3], abs=1e-12)


def test_files_rank_column_and_estimated_propensities(tmp_path) -> None:
    """The same run as a CSV file ranked by a rank column (ids read as text), train as Parquet:
    ips_recall estimates p = (n / 4) ^ 0.5 from train, so 10: 1, 20: 0.5, 40: 0.5, and with
    min_propensity 0.5 nothing changes: user 1 hits 20 of {20, 40}, equal weights: 0.5; user 2
    1: mean 0.75."""
    ranked = RUN.assign(rank=RUN.groupby("user")["score"].rank(ascending=False)).drop(
        columns="score").rename(columns={"user": "uid"})
    ranked.to_csv(tmp_path / "run.csv", index=False)
    TRAIN.rename(columns={"user": "uid"}).to_parquet(tmp_path / "train.parquet")
    QRELS.rename(columns={"user": "uid"}).to_csv(tmp_path / "qrels.csv", index=False)
    got = beyond_accuracy(str(tmp_path / "run.csv"), "ips_recall(min_propensity=0.5)@2",
                          qrels=str(tmp_path / "qrels.csv"), train=tmp_path / "train.parquet",
                          user_column="uid", rank_column="rank")
    assert got.iloc[0].tolist() == pytest.approx([2, 0.75], abs=1e-12)


def test_every_kind_matches_its_macro() -> None:
    """Each kind of metric (catalogue, per user, pair, with a side table) gives what its macro
    gives over the same lists."""
    embeddings = pd.DataFrame({"item": [10, 20, 30, 40],
                               "embedding": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -1.0]]})
    categories = pd.DataFrame({"item": [10, 20, 30, 40], "category": ["a", "b", "a", "a"]})
    requests = ["exposure_entropy@3", "ild_embedding@3", "ild_category@3",
                "rbo(p=0.8,variant=ext)@3", "serendipity@3", "inter_user_diversity(seed=3)@3",
                "ips_ndcg(gamma=1,min_propensity=0.1)@3"]
    got = beyond_accuracy(RUN, requests, qrels=QRELS, other=OTHER, train=TRAIN,
                          catalog_size=10, embeddings=embeddings, categories=categories)
    con = duckdb.connect()
    import duckrank

    duckrank.register(con)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, [10, 20, 30], [20, 40]), "
                "(2, [40, 10], [10])) t(user, rec, truth)")
    con.execute("CREATE TABLE o AS SELECT * FROM (VALUES (1, [20, 10]), (2, [40])) t(user, rec)")
    for name, frame in (("train", TRAIN), ("embeddings", embeddings),
                        ("categories", categories)):
        con.register(f"{name}_df", frame)
        con.execute(f"CREATE TABLE {name} AS FROM {name}_df")
    expected = [
        "FROM exposure_entropy('r', 3)",
        "SELECT avg(ild_embedding) FROM ild_embedding('r', 'embeddings', 3)",
        "SELECT avg(ild_category) FROM ild_category('r', 'categories', 3)",
        "SELECT avg(rbo(r.rec, o.rec, 3, p := 0.8, variant := 'ext')) FROM r JOIN o USING (user)",
        "SELECT avg(serendipity) FROM serendipity('r', 'train', 3, catalog_size := 10)",
        "SELECT inter_user_diversity FROM inter_user_diversity('r', 3, seed := 3)",
        "SELECT avg(ips_ndcg) FROM ips_ndcg('r', 3, train := 'train', gamma := 1, "
        "min_propensity := 0.1)",
    ]
    for request, query in zip(requests, expected, strict=True):
        assert got[request].iloc[0] == pytest.approx(con.execute(query).fetchall()[0][0],
                                                     abs=1e-12), request


@pytest.mark.parametrize(("text", "message"), [
    ("catalog_coverage", "write name@k or name(option=value,...)@k"),
    ("nope@10", "unknown beyond-accuracy metric 'nope'"),
    ("rbo(q=1)@10", "unknown option 'q=1'; rbo takes p, variant"),
    ("arp(train=x)@10",
     "unknown option 'train=x'; arp takes normalize, discount, persistence, item_col"),
])
def test_bad_requests_are_named(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")
                       .replace(")", r"\)").replace(".", r"\.")):
        parse_request(text)


def test_missing_inputs_are_named() -> None:
    with pytest.raises(ValueError, match="overlap_at@2: overlap_at compares two systems; give "
                                         "the other run"):
        beyond_accuracy(RUN, "overlap_at@2")
    with pytest.raises(ValueError, match="arp@2: arp needs the train table"):
        beyond_accuracy(RUN, "arp@2")


def test_grade_column_keeps_the_relevant_rows() -> None:
    """With grade_column, a qrels row of grade 0 is not relevant: user 2's (40, grade 0) is
    left out, so ips_recall (estimator ips) stays the hand example's 1.0; read as every row
    relevant, user 2 has {10, 40}, both in its top 2 [40, 10]: (1 + 4) / 2 = 2.5, and the mean
    is (1 + 2.5) / 2 = 1.75."""
    graded = pd.concat([QRELS.assign(grade=1), pd.DataFrame({"user": [2], "item": [40],
                                                             "grade": [0]})])
    request = "ips_recall(estimator=ips)@2"
    with_grades = beyond_accuracy(RUN, request, qrels=graded, propensities=PROPENSITIES,
                                  grade_column="grade")
    every_row = beyond_accuracy(RUN, request, qrels=graded, propensities=PROPENSITIES)
    assert with_grades[request].iloc[0] == pytest.approx(1.0, abs=1e-12)
    assert every_row[request].iloc[0] == pytest.approx(1.75, abs=1e-12)
