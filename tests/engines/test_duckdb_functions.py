"""``duckrank.connect(functions=...)`` / ``register(con, functions=...)``: a subset of duckrank's
functions and the macros they call, as TEMP macros of the connection, nothing stored.

Expected values: the numbers are those of a full ``duckrank.connect()`` on the same input (the
subset must be the same macros); average_precision([1, 2, 3], [2, 5]) = (1/2) / 2 = 0.25 by hand
(one hit, at rank 2, of 2 relevant items).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import duckrank


def _macros(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {name for (name,) in con.execute(
        "SELECT function_name FROM duckdb_functions() WHERE NOT internal "
        "AND function_type IN ('macro', 'table_macro')").fetchall()}


def test_a_subset_registers_those_functions_and_their_helpers_only() -> None:
    con = duckrank.connect(functions=["average_precision", "read_trec_run"])
    names = _macros(con)
    # The functions, and the helpers their text calls (duckrank_cutoff, the matching step).
    assert {"average_precision", "read_trec_run", "duckrank_cutoff"} <= names
    assert "ndcg" not in names and "duckrank_version" not in names
    assert len(names) < 15
    assert con.execute("SELECT average_precision([1, 2, 3], [2, 5])").fetchall() == [(0.25,)]


def test_a_subset_gives_the_numbers_of_every_function(con: duckdb.DuckDBPyConnection) -> None:
    sql = ("SELECT precision_at(['a', 'b', 'c'], ['b', 'x'], 2), "
           "iprec_at_recall([3, 1, 2], [1, 9], recall := 0.5), bpref(['a', 'b', 'c'], "
           "MAP {'a': 0, 'c': 2}), num_rel_ret(['a', 'b'], ['b'])")
    subset = duckrank.connect(functions=["precision_at", "iprec_at_recall", "bpref",
                                         "num_rel_ret"])
    assert subset.execute(sql).fetchall() == con.execute(sql).fetchall()


def test_a_subset_stores_nothing_so_a_full_register_stores_everything(tmp_path: Path) -> None:
    path = str(tmp_path / "x.duckdb")
    con = duckrank.connect(path, functions="mrr")  # one name as a string is that name
    assert con.execute("SELECT mrr([1, 2], [2])").fetchall() == [(0.5,)]
    con.close()
    stored = duckdb.connect(path)
    assert not {"mrr", "duckrank_version"} & _macros(stored)
    duckrank.register(stored)
    assert {"mrr", "ndcg", "duckrank_version"} <= _macros(stored)
    stored.close()


def test_unknown_functions_and_hivemall_are_errors() -> None:
    with pytest.raises(ValueError, match=r"register: functions names 'no_such', which duckrank"):
        duckrank.connect(functions=["mrr", "no_such"])
    with pytest.raises(ValueError, match="hivemall=True needs every function"):
        duckrank.connect(functions=["mrr"], hivemall=True)


def test_a_python_function_in_a_subset_gets_its_udf() -> None:
    """spearman is a TEMP macro over a Python UDF (duckrank.engines.python_udfs): the subset
    registers the UDF too. Two items in the same order: rho = 1."""
    con = duckrank.connect(functions=["spearman"])
    assert con.execute("SELECT spearman(['a', 'b'], MAP {'a': 2.0, 'b': 1.0})").fetchall() == [
        (1.0,)]
