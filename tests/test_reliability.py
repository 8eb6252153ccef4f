"""The user's database stays usable, registration is robust, and concurrent use gives the serial
results (the reliability issue)."""

import threading

import duckdb
import pytest

import duckrank
from duckrank import duckdb_adapter

QUERY = (
    "SELECT avg(ndcg(rec, truth, 5)), avg(average_precision(rec, truth)), avg(mrr(rec, truth, 3)),"
    " avg(auc(rec, truth, 10)), avg(precision_at(rec, truth, 4)) FROM eval"
)
EVAL_TABLE = """
CREATE OR REPLACE TABLE eval AS SELECT u,
  list_transform(range(20), lambda i: ((u * 31 + i * 17) % 50)::BIGINT) AS rec,
  list_transform(range((u % 7)::BIGINT), lambda i: ((u * 13 + i * 5) % 50)::BIGINT) AS truth
FROM range(30000) t(u)
"""


def test_file_database_opens_and_works_without_duckrank(tmp_path):
    path = str(tmp_path / "user.duckdb")
    con = duckrank.connect(path)
    con.execute(EVAL_TABLE)
    with_duckrank = con.execute(QUERY).fetchall()
    con.close()

    plain = duckdb.connect(path)  # no duckrank.register: what a user without duckrank sees
    assert plain.execute(QUERY).fetchall() == with_duckrank
    assert plain.execute(
        "SELECT to_ordered_list(u, u % 3, '-reverse') FROM eval WHERE u < 4"
    ).fetchall() == [([2, 1, 3, 0],)]
    stored_python = plain.execute(
        "SELECT function_name FROM duckdb_functions() WHERE function_type <> 'macro' "
        "AND function_name LIKE 'duckrank%'"
    ).fetchall()
    assert stored_python == []
    plain.close()


def test_registering_again_on_a_file_database_keeps_it_working(tmp_path):
    path = str(tmp_path / "user.duckdb")
    duckrank.connect(path).close()
    con = duckrank.connect(path)
    duckrank.register(con)
    assert con.execute("SELECT hitrate([1], [1])").fetchall() == [(1.0,)]
    con.close()


def test_read_only_database_gets_session_macros(tmp_path):
    path = str(tmp_path / "user.duckdb")
    duckdb.connect(path).close()
    con = duckrank.connect(path, read_only=True)
    duckrank.register(con)
    assert con.execute("SELECT recall_at([1, 2], [2, 3])").fetchall() == [(0.5,)]
    con.close()


def test_a_registration_that_fails_half_way_leaves_a_working_connection(monkeypatch):
    con = duckdb.connect()
    real = duckdb_adapter._macro_statements

    def failing_half_way():
        statements, build = real()
        middle = len(statements) // 2
        return [*statements[:middle], "CREATE MACRO broken( AS", *statements[middle:]], build

    monkeypatch.setattr(duckdb_adapter, "_macro_statements", failing_half_way)
    with pytest.raises(duckdb.ParserException):
        duckrank.register(con)
    # Nothing half-made was left behind, and the connection is usable.
    assert con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = 'duckrank_cutoff'"
    ).fetchall() == [(0,)]
    monkeypatch.setattr(duckdb_adapter, "_macro_statements", real)
    duckrank.register(con)
    assert con.execute("SELECT mrr([3, 1], [1])").fetchall() == [(0.5,)]
    con.close()


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_eight_threads_with_cursors_give_the_serial_results(threads):
    con = duckrank.connect()
    con.execute(f"SET threads = {threads}")
    con.execute(EVAL_TABLE)
    serial = con.execute(QUERY).fetchall()
    results: list = [None] * 8

    def work(slot: int) -> None:
        cursor = con.cursor()
        duckrank.register(cursor)
        results[slot] = cursor.execute(QUERY).fetchall()
        cursor.close()

    workers = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not any(worker.is_alive() for worker in workers), "deadlock"
    assert results == [serial] * 8
    con.close()


def test_two_connections_in_one_process_at_once():
    first, second = duckrank.connect(), duckrank.connect()
    for con in (first, second):
        con.execute(EVAL_TABLE)
    serial = first.execute(QUERY).fetchall()
    results: dict = {}

    def work(name: str, con: duckdb.DuckDBPyConnection) -> None:
        results[name] = con.execute(QUERY).fetchall()

    workers = [
        threading.Thread(target=work, args=(name, con))
        for name, con in (("first", first), ("second", second))
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert results == {"first": serial, "second": serial}
    first.close()
    second.close()
