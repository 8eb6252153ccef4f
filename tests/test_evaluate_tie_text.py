"""Tied scores between integer ids are broken by the ids' text, descending (trec_eval's strcmp
order), on every ranking path of evaluate: the native top-K aggregate
(``duckrank_top_k(item, key, k, 'text')``, which compares two integers' decimal texts without
writing them), DuckDB's ``max`` over {key, text, item} structs without the native step, and
``to_ordered_list`` of the whole list; and a run with the same ids as text gives the same numbers.

Between the ids used here the text order, as bytes, is '-1' < '-10' < '-2' < '0' < '1' < '10'
< '100' < '1000' < '19' < '2' < '9' < '91' ('-' sorts before every digit, a prefix before its
extensions); evaluate ranks a tie in the reverse of that order, so 9 comes before 10 and -2
before -1.
"""

from __future__ import annotations

from unittest import mock

import pandas as pd
import pytest

import duckrank
from duckrank.evaluation import sql as evaluation_sql

IDS = [9, 10, -1, -2, 1, 100, 0, -10, 91, 2, 19, 1000]
# Hand-written: IDS in descending byte order of their decimal text.
TEXT_DESCENDING = [91, 9, 2, 19, 1000, 100, 10, 1, 0, -2, -10, -1]


def _run(item_type: str) -> pd.DataFrame:
    """One query per id, each ranking every id with one score (all tied) plus three rows with
    lower scores, so the lists are longer than 4x the cut-off below (3): without the native step
    evaluate takes DuckDB's max heap, not the whole list. Query q's relevant item is IDS[q]."""
    ids = [i for i in IDS if not (item_type.startswith("U") and i < 0)]
    rows = []
    for query in range(len(ids)):
        rows += [(query, item, 1.0) for item in ids]
        rows += [(query, 5000 + j, 0.5) for j in range(3)]
    return pd.DataFrame(rows, columns=["user", "item", "score"]).astype({"item": {
        "BIGINT": "int64", "INTEGER": "int32", "SMALLINT": "int16", "UBIGINT": "uint64",
        "UINTEGER": "uint32"}[item_type]})


def _evaluate(run: pd.DataFrame, native: bool, metrics: list[str],
              **options) -> tuple[pd.DataFrame, list[str]]:
    """evaluate's per-query values and the ranking SQL it used."""
    made = []
    ranked_sql = evaluation_sql._ranked_sql

    def spy(*args):
        made.append(ranked_sql(*args))
        return made[-1]

    ids = run[(run["user"] == 0) & (run["score"] == 1.0)]["item"].tolist()  # IDS' order
    qrels = pd.DataFrame({"user": range(len(ids)), "item": ids}).astype(
        {"item": run["item"].dtype})
    con = duckrank.connect(native=native)
    try:
        with mock.patch.object(evaluation_sql, "_ranked_sql", spy):
            got = duckrank.evaluate(run, qrels, metrics, per_user=True, connection=con,
                                    **options)
    finally:
        con.close()
    return got, made


@pytest.mark.parametrize("item_type", ["BIGINT", "INTEGER", "SMALLINT", "UBIGINT", "UINTEGER"])
def test_ties_between_integer_ids_go_by_their_text_on_every_path(item_type) -> None:
    """Query q's relevant item is the q-th id; among tied scores it ranks where its text puts it
    in TEXT_DESCENDING (unsigned types: the non-negative ids only). mrr@3 is 1/rank within the
    top 3, hitrate@3 whether it is there: the native top-K, the SQL heap and the whole list
    (mrr without a cut-off) must all give the ranks of that order."""
    run = _run(item_type)
    order = [i for i in TEXT_DESCENDING if i in set(run["item"])]
    ids = sorted(order, key=lambda i: IDS.index(i))
    rank = [order.index(item) + 1 for item in ids]
    expected_cut = [1 / r if r <= 3 else 0.0 for r in rank]
    values = {}
    for native, aggregate in ((True, "duckrank_top_k("), (False, "max({'k'")):
        got, sql = _evaluate(run, native, ["mrr@3", "hitrate@3"])
        assert sql and all(aggregate in s for s in sql), sql
        assert all("'text')" in s for s in sql) == native, sql
        assert got["mrr@3"].tolist() == pytest.approx(expected_cut, abs=1e-15), native
        assert got["hitrate@3"].tolist() == [float(r <= 3) for r in rank], native
        values[native] = got
        whole, sql = _evaluate(run, native, ["mrr"])
        assert all("to_ordered_list(" in s for s in sql), sql
        assert whole["mrr"].tolist() == pytest.approx([1 / r for r in rank], abs=1e-15)
    pd.testing.assert_frame_equal(values[True], values[False])


def test_text_ids_give_the_numbers_of_integer_ids() -> None:
    """The same run with the ids as text (a CSV read as VARCHAR) ranks by the same bytes: every
    value of every path equals the integer run's."""
    run = _run("BIGINT")
    text = run.astype({"item": str})
    for native in (True, False):
        for metrics in (["mrr@3", "ndcg@5", "P@2"], ["mrr", "ndcg"]):
            as_int, _ = _evaluate(run, native, metrics)
            as_text, _ = _evaluate(text, native, metrics)
            pd.testing.assert_frame_equal(as_int, as_text)


def test_extreme_integer_ids_tie_by_their_text() -> None:
    """The ends of BIGINT and UBIGINT (INT64_MIN's magnitude, 2^63, has no positive BIGINT; 2^64
    - 1 has 20 digits) against short ids, straight on the aggregate: its order must be DuckDB's
    max over {key, text, item} structs."""
    con = duckrank.connect()
    try:
        for item_type, ids in (
            ("BIGINT", [-9223372036854775808, 9223372036854775807, -922337203685477580, -9,
                        -1, 0, 1, 9, 92233720368547758, 10, 9223372036854775806]),
            ("UBIGINT", [18446744073709551615, 18446744073709551614, 1844674407370955161,
                         9223372036854775808, 2, 19, 1, 0, 10000000000000000000]),
        ):
            rows = ", ".join(f"(({i})::{item_type}, {j % 3})" for j, i in enumerate(ids * 2))
            for k in (3, 100):
                got, expected = con.execute(f"""
                    SELECT duckrank_top_k(v, s, {k}, 'text'),
                           list_transform(max({{'k': s, 't': v::VARCHAR, 'v': v}}, {k}),
                                          lambda e: e.v)
                    FROM (VALUES {rows}) t(v, s)""").fetchall()[0]
                assert got == expected, (item_type, k)
    finally:
        con.close()
