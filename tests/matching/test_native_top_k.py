"""The native top-K aggregate duckrank_top_k (duckrank/matching/native/topk.c), which
duckrank.evaluate ranks long runs with.

Expected values come from DuckDB itself: ``max({'k': key, 'v': item}, k)`` (DuckDB's own top-K
aggregate, what evaluate uses without the native step) and ``to_ordered_list(item, key,
'-reverse')`` cut at k (the documented ranking: key descending, then item descending, every row
kept), on the same rows. The rows are built to hit what a careless implementation gets wrong:
many tied keys, -0.0 against 0.0, NaN and infinities, repeated items, negative against unsigned
integers, strings longer than DuckDB's 12 inline bytes, NULL keys and items, and groups split
between two threads (DuckDB then combines two partial states).
"""

from __future__ import annotations

import math

import duckdb
import pytest

import duckrank

ITEM_TYPES = ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER",
              "UBIGINT", "FLOAT", "DOUBLE", "VARCHAR"]


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckrank.connect()
    connection.execute("SET threads = 2")
    # 40 groups x 300 rows, in an order that spreads each group over the whole table (both
    # threads see every group). Keys from 7 values (ties, -0.0, NaN, +-inf); items from 25 values
    # (repeats), some negative; one row in 23 has a NULL key and one in 29 a NULL item.
    connection.execute("""
        CREATE TABLE rows AS
        SELECT i % 40 AS g,
               CASE WHEN i % 23 = 5 THEN NULL
                    ELSE [1.5, 0.0, -0.0, 'nan'::DOUBLE, 'inf'::DOUBLE, '-inf'::DOUBLE,
                          -2.0][(hash(i, 'k') % 7)::BIGINT + 1] END AS key,
               CASE WHEN i % 29 = 3 THEN NULL ELSE (hash(i, 'v') % 25)::BIGINT - 5 END AS v
        FROM range(12000) t(i)""")
    yield connection
    connection.close()


def _comparable(lists: list) -> list:
    """NaN as a token (NaN != NaN in Python; DuckDB orders every NaN as one value)."""
    return [None if values is None else
            ["NaN" if isinstance(x, float) and math.isnan(x) else x for x in values]
            for values in lists]


def _item(type_name: str) -> str:
    if type_name == "VARCHAR":  # 25 strings, 15 of them longer than 12 bytes
        return "CASE WHEN v % 5 = 0 THEN v::VARCHAR ELSE repeat('x', 12) || v::VARCHAR END"
    if type_name.startswith("U"):
        return f"(v + 5)::{type_name}"
    return f"v::{type_name}"


@pytest.mark.parametrize("key_type", ["DOUBLE", "BIGINT"])
@pytest.mark.parametrize("item_type", ITEM_TYPES)
def test_top_k_is_the_ordered_list_cut_at_k(con, item_type, key_type) -> None:
    """Per group, the k largest (key, item) pairs in DuckDB's order, ties kept; k = 7 of about
    280 non-NULL rows, and k = 500, more than a group has (the whole group, ordered)."""
    item = _item(item_type)
    key = "key" if key_type == "DOUBLE" else "CAST(key * 2 AS BIGINT)"
    where = "" if key_type == "DOUBLE" else "WHERE isfinite(key) OR key IS NULL"
    for k in (7, 500):
        got, by_max, ordered = zip(*con.execute(f"""
            SELECT duckrank_top_k(item, key, {k}),
                   list_transform(max({{'k': key, 'v': item}}, {k})
                                  FILTER (WHERE key IS NOT NULL AND item IS NOT NULL),
                                  lambda e: e.v),
                   to_ordered_list(item, key, '-reverse')[1:{k}]
            FROM (SELECT g, {item} AS item, {key} AS key FROM rows {where})
            GROUP BY g ORDER BY g""").fetchall(), strict=True)
        assert _comparable(got) == _comparable(by_max) == _comparable(ordered), (item_type, k)
        assert con.execute(f"SELECT typeof(duckrank_top_k({item}, {key}, 3)) FROM rows "
                           f"{where}").fetchall() == [(f"{item_type}[]",)]


def test_null_keys_and_items_are_skipped_and_a_group_without_rows_is_null(con) -> None:
    """Hand-written: group 1 keeps its two complete rows; group 2 has only NULL keys or items;
    an aggregate over no rows at all is NULL too (as max(x, k) and to_ordered_list give)."""
    rows = con.execute("""
        SELECT g, duckrank_top_k(v, s, 5) FROM (VALUES
            (1, 10, 0.5), (1, NULL, 0.9), (1, 11, NULL), (1, 12, 0.7),
            (2, NULL, 1.0), (2, 13, NULL)) t(g, v, s)
        GROUP BY g ORDER BY g""").fetchall()
    assert rows == [(1, [12, 10]), (2, None)]
    assert con.execute("SELECT duckrank_top_k(1, 1.0, 3) FROM range(0)").fetchall() == [(None,)]


def test_ties_are_broken_by_item_descending_and_repeats_are_kept(con) -> None:
    """Hand-written: keys 2, 2, 2, 1, 1 with items 3, 9, 9, 4, 8; top 4 = key 2 (items 9, 9,
    3), then key 1's largest item, 8. Strings compare by their bytes, a prefix first ('ab' after
    'a', 'b' after 'abcdefghijklmnopq')."""
    assert con.execute("""
        SELECT duckrank_top_k(v, s, 4) FROM (VALUES (3, 2), (9, 2), (9, 2), (4, 1), (8, 1))
        t(v, s)""").fetchall() == [([9, 9, 3, 8],)]
    assert con.execute("""
        SELECT duckrank_top_k(v, 0, 4) FROM (VALUES ('a'), ('ab'), ('abcdefghijklmnopq'),
        ('b')) t(v)""").fetchall() == [(["b", "abcdefghijklmnopq", "ab", "a"],)]


def test_a_large_k_reserves_no_more_than_the_group_holds(con) -> None:
    """k = 2^32 - 1 over groups of about 300 rows: a heap reserved at k places (about 100 GiB per
    group) could not be allocated; it grows with the rows instead. Expected: the whole group,
    ordered (to_ordered_list)."""
    got, expected = zip(*con.execute("""
        SELECT duckrank_top_k(v, key, 4294967295), to_ordered_list(v, key, '-reverse')
        FROM rows GROUP BY g ORDER BY g""").fetchall(), strict=True)
    assert _comparable(got) == _comparable(expected)


@pytest.mark.parametrize(("k", "message"), [
    ("0", "k must be an integer from 1 to 4294967295, got 0"),
    ("4294967296", "k must be an integer from 1 to 4294967295, got 4294967296"),
    ("NULL", "k must be a positive integer, got NULL"),
    ("1 + v % 2", "k must be the same on every row of a group, got"),
])
def test_a_bad_k_is_an_error_naming_the_function_and_the_value(con, k, message) -> None:
    with pytest.raises(duckdb.InvalidInputException, match=f"duckrank_top_k: {message}"):
        con.execute(f"SELECT duckrank_top_k(v, key, {k}) FROM rows WHERE v IS NOT NULL").fetchall()


@pytest.mark.parametrize("item", ["i", "repeat('y', 20) || (i % 1000)::VARCHAR"])
def test_partial_states_of_two_threads_combine(con, item) -> None:
    """An aggregate without GROUP BY over 300,000 rows (three of DuckDB's row groups) on two
    threads: each thread keeps its own top 50, then DuckDB combines the two (strings longer than
    12 bytes change owner there). Expected: max({'k': key, 'v': item}, 50) on the same rows."""
    con.execute("CREATE TABLE IF NOT EXISTS many AS SELECT i, (hash(i, 'c') % 100)::DOUBLE AS key "
                "FROM range(300000) t(i)")
    got, expected = con.execute(f"""
        SELECT duckrank_top_k(item, key, 50),
               list_transform(max({{'k': key, 'v': item}}, 50), lambda e: e.v)
        FROM (SELECT {item} AS item, key FROM many)""").fetchall()[0]
    assert got == expected


INTEGER_TYPES = [t for t in ITEM_TYPES if t not in ("FLOAT", "DOUBLE", "VARCHAR")]


@pytest.mark.parametrize("key_type", ["DOUBLE", "BIGINT"])
@pytest.mark.parametrize("item_type", INTEGER_TYPES)
def test_text_order_is_the_struct_heap_over_the_items_text(con, item_type, key_type) -> None:
    """duckrank_top_k(item, key, k, 'text'): tied keys order by the integer item's VARCHAR cast,
    descending (evaluate's order for integer ids). Expected: DuckDB's max over {key, text, item}
    structs on the same rows (ties, repeats, NULLs, negative ids, groups over two threads), at
    k = 7 and k = 500 (the whole group), and to_ordered_list by {key, text}, cut at k."""
    item = _item(item_type)
    key = "key" if key_type == "DOUBLE" else "CAST(key * 2 AS BIGINT)"
    where = "" if key_type == "DOUBLE" else "WHERE isfinite(key) OR key IS NULL"
    for k in (7, 500):
        got, by_max, ordered = zip(*con.execute(f"""
            SELECT duckrank_top_k(item, key, {k}, 'text'),
                   list_transform(max({{'k': key, 't': item::VARCHAR, 'v': item}}, {k})
                                  FILTER (WHERE key IS NOT NULL AND item IS NOT NULL),
                                  lambda e: e.v),
                   to_ordered_list(item, CASE WHEN key IS NOT NULL  -- a struct is never NULL
                                              THEN {{'k': key, 't': item::VARCHAR}} END,
                                   '-reverse')[1:{k}]
            FROM (SELECT g, {item} AS item, {key} AS key FROM rows {where})
            GROUP BY g ORDER BY g""").fetchall(), strict=True)
        assert _comparable(got) == _comparable(by_max) == _comparable(ordered), (item_type, k)
        assert con.execute(f"SELECT typeof(duckrank_top_k({item}, {key}, 3, 'text')) FROM rows "
                           f"{where}").fetchall() == [(f"{item_type}[]",)]


def test_text_order_puts_9_before_10_and_minus_2_before_minus_1(con) -> None:
    """Hand-written: all keys tie; the texts in descending byte order are '9' > '2' > '10' > '1'
    > '0' > '-2' > '-10' > '-1' ('-' sorts before every digit, a prefix before its extensions);
    without 'text' the same rows go by value."""
    rows = "(VALUES (9), (10), (-1), (-2), (1), (0), (-10), (2)) t(v)"
    assert con.execute(f"SELECT duckrank_top_k(v, 0, 8, 'text') FROM {rows}").fetchall() == [
        ([9, 2, 10, 1, 0, -2, -10, -1],)]
    assert con.execute(f"SELECT duckrank_top_k(v, 0, 3, 'text') FROM {rows}").fetchall() == [
        ([9, 2, 10],)]
    assert con.execute(f"SELECT duckrank_top_k(v, 0, 8) FROM {rows}").fetchall() == [
        ([10, 9, 2, 1, 0, -1, -2, -10],)]


@pytest.mark.parametrize("order", ["'value'", "'TEXT'", "NULL::VARCHAR", "'text' || v"])
def test_a_fourth_argument_other_than_text_is_an_error(con, order) -> None:
    with pytest.raises(duckdb.InvalidInputException,
                       match="duckrank_top_k: the fourth argument .* must be 'text'"):
        con.execute(f"SELECT duckrank_top_k(v, key, 3, {order}) FROM rows "
                    "WHERE v IS NOT NULL").fetchall()


def test_text_order_partial_states_of_two_threads_combine(con) -> None:
    """As test_partial_states_of_two_threads_combine, tied keys by the items' text."""
    con.execute("CREATE TABLE IF NOT EXISTS many AS SELECT i, (hash(i, 'c') % 100)::DOUBLE AS key "
                "FROM range(300000) t(i)")
    got, expected = con.execute("""
        SELECT duckrank_top_k(i % 5000 - 2500, key, 50, 'text'),
               list_transform(max({'k': key, 't': (i % 5000 - 2500)::VARCHAR,
                                   'v': i % 5000 - 2500}, 50), lambda e: e.v)
        FROM many""").fetchall()[0]
    assert got == expected
