"""Bad input to the fusion macros and ``duckrank.fuse``: an error naming the function, the
argument and the value, never a number. Also the documented outcomes: a hand-calculated fusion
with a query one system has no list for, and the tie order of equal fused scores."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from duckrank.reports.fusion import fuse

RUNS = pa.table({"system": ["a", "a", "b", "b"], "query": ["q1", "q1", "q1", "q2"],
                 "item": ["x", "y", "y", "z"], "score": [2.0, 1.0, 4.0, 3.0]})


def _sql(con, call: str, table: pa.Table = RUNS) -> list:
    con.register("fusion_bad", table)
    return con.execute(f"SELECT * FROM {call} ORDER BY query, rank").fetchall()


@pytest.mark.parametrize(("call", "message"), [
    ("fuse_rrf('fusion_bad', k := -1)", "fuse_rrf: k must be a finite number >= 0, got -1"),
    ("fuse_rrf('fusion_bad', k := NULL)", "fuse_rrf: k must be a finite number >= 0, got NULL"),
    ("fuse_rbc('fusion_bad', 1.5)", "fuse_rbc: phi must be a finite number in [0, 1], got 1.5"),
    ("fuse_logn_isr('fusion_bad', sigma := 2)", "fuse_logn_isr: sigma must be a finite number "
     "in [0, 1], got 2"),
    ("fuse_slidefuse('fusion_bad', MAP {'a': [0.5], 'b': [0.5]}, 1.5)",
     "fuse_slidefuse: w must be a whole number >= 0, got 1.5"),
    ("fuse_sum('fusion_bad', norm := 'minmax')", "fuse_sum: norm must be one of 'min-max', "),
    ("fuse_sum('fusion_bad', norm := NULL)", "got NULL"),
    ("fuse_wsum('fusion_bad', MAP {'a': 1.0})", "fuse_wsum: weights has no entry for system b"),
    ("fuse_wsum('fusion_bad', MAP {'a': 1.0, 'b': 1.0, 'c': 2.0})",
     "fuse_wsum: weights names system c, which runs does not have"),
    ("fuse_wsum('fusion_bad', MAP {'a': 1.0, 'b': 'nan'::DOUBLE})",
     "fuse_wsum: weights must be a MAP from every system name to a finite number"),
    ("fuse_posfuse('fusion_bad', MAP {'a': [0.5, NULL], 'b': [0.1]})",
     "fuse_posfuse: probs must be a MAP from every system name to a LIST of finite numbers"),
])
def test_bad_parameters(fusion_con, call, message) -> None:
    with pytest.raises(duckdb.Error, match=message.replace("(", r"\(").replace("[", r"\[")):
        _sql(fusion_con, call)


@pytest.mark.parametrize(("column", "value", "message"), [
    ("score", None, "fuse_sum: runs has the score NULL for system a, query q1, item x"),
    ("score", float("nan"), "fuse_sum: runs has the score nan for system a, query q1, item x"),
    ("score", float("inf"), "fuse_sum: runs has the score inf for system a, query q1, item x"),
    ("item", None, "fuse_sum: runs has a row with a NULL system, query or item"),
    ("system", None, "fuse_sum: runs has a row with a NULL system, query or item"),
])
def test_bad_rows(fusion_con, column, value, message) -> None:
    values = RUNS.column(column).to_pylist()
    values[0] = value
    table = RUNS.set_column(RUNS.schema.get_field_index(column), column,
                            pa.array(values, RUNS.schema.field(column).type))
    with pytest.raises(duckdb.Error, match=message):
        _sql(fusion_con, "fuse_sum('fusion_bad')", table)


@pytest.mark.parametrize("call", ["fuse_sum('fusion_bad')", "fuse_bordafuse('fusion_bad')",
                                  "fuse_condorcet('fusion_bad')"])
def test_an_item_twice_in_one_list_is_refused(fusion_con, call) -> None:
    table = pa.concat_tables([RUNS, RUNS.slice(0, 1)])
    with pytest.raises(duckdb.Error, match="more than once"):
        _sql(fusion_con, call, table)


def test_more_than_128_systems_are_refused(fusion_con) -> None:
    table = pa.table({"system": [f"s{i:03d}" for i in range(130)], "query": ["q"] * 130,
                      "item": ["x"] * 130, "score": [1.0] * 130})
    with pytest.raises(duckdb.Error, match="runs holds 129 systems; at most 128"):
        _sql(fusion_con, "fuse_sum('fusion_bad')", table)


def test_hand_calculation_with_a_missing_list(fusion_con) -> None:
    # CombMNZ under min-max. q1: a lists x 2.0, y 1.0 -> x 1, y 0; b lists y 4.0 -> y 0 (one
    # score: max - min = 0, floored at 1e-9, so 0 / 1e-9 = 0). x: 1 x 1 = 1; y: (0 + 0) x 2 = 0.
    # q2: only b, z -> 0. BordaFuse, no normalisation: q1 has c = 2 candidates; a: x 2, y 1;
    # b: y 2, x unranked (c - n + 1) / 2 = (2 - 1 + 1) / 2 = 1 -> x 3, y 3, tied: by item text
    # descending, y first. q2: c = 1; b: z 1; a has no list: (1 - 0 + 1) / 2 = 1 -> z 2.
    assert _sql(fusion_con, "fuse_mnz('fusion_bad')") == [
        ("q1", "x", 1.0, 1), ("q1", "y", 0.0, 2), ("q2", "z", 0.0, 1)]
    assert _sql(fusion_con, "fuse_bordafuse('fusion_bad', norm := 'none')") == [
        ("q1", "y", 3.0, 1), ("q1", "x", 3.0, 2), ("q2", "z", 2.0, 1)]


def test_python_errors_name_fuse_and_the_argument() -> None:
    runs = {"a": RUNS.filter(pa.compute.equal(RUNS["system"], "a")),
            "b": RUNS.filter(pa.compute.equal(RUNS["system"], "b"))}
    with pytest.raises(ValueError, match="fuse: method must be one of 'min', "):
        fuse(runs, "combsum")
    with pytest.raises(ValueError, match="fuse: rrf has no parameter 'kk'"):
        fuse(runs, "rrf", params={"kk": 1})
    with pytest.raises(ValueError, match="fuse: wsum's weights has 3 values for 2 runs"):
        fuse(runs, "wsum", params={"weights": [1, 2, 3]})
    with pytest.raises(ValueError, match="fuse: rbc needs params="):
        fuse(runs, "rbc")
    with pytest.raises(ValueError, match="fuse: runs must hold at least two runs"):
        fuse([runs["a"]], "sum")
    with pytest.raises(ValueError, match="norm must be one of"):
        fuse(runs, "sum", norm="minmax")
