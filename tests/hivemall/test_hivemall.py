"""Acceptance tests of the hivemall schema: Hivemall's queries run unchanged and give Hivemall's
numbers.

Where the expected values come from:
* [guide]: the Apache Hivemall user guide, "Evaluation of ranking problems".
* [note 4], [note 2.x], ...: the outputs of Hivemall's own BinaryResponsesMeasures /
  GradedResponsesMeasures classes (apache/incubator-hivemall at commit 34079778) run on OpenJDK 17,
  and the reading of their code, as numbered in this project's notes.
* [sklearn]: scikit-learn's roc_auc_score, run in the test.
* [reference]: the note's formulas (sections 1.4 and 2) transcribed into plain Python below,
  run on random rows.
"""

import math
import random
import re

import duckdb
import pytest
from conftest import scalar
from sklearn.metrics import roc_auc_score

import duckrank

GUIDE_BINARY_TABLES = """
CREATE OR REPLACE TABLE dummy_truth AS SELECT * FROM (VALUES
  (1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4), (3, 1), (3, 2), (3, 4)) t(userid, itemid);
CREATE OR REPLACE TABLE dummy_rec AS SELECT * FROM (VALUES
  (1, 1, 10.0), (1, 3, 8.0), (1, 2, 6.0), (1, 6, 2.0),
  (2, 1, 10.0), (2, 3, 8.0), (2, 2, 6.0), (2, 6, 2.0),
  (3, 1, 10.0), (3, 3, 8.0), (3, 2, 6.0), (3, 6, 2.0)) t(userid, itemid, score);
"""

# [guide] the binary query, pasted unchanged.
GUIDE_BINARY_QUERY = """
with truth as (
  select userid, collect_set(itemid) as truth
  from dummy_truth
  group by userid
),
rec as (
  select
    userid,
    -- map_values(to_ordered_map(score, itemid, true)) as rec,
    to_ordered_list(itemid, score, '-reverse') as rec,
    cast(count(itemid) as int) as max_k
  from dummy_rec
  group by userid
)
select
  -- rec = [1,3,2,6], truth = [1,2,4] for each user

  -- Recall@k
  recall_at(t1.rec, t2.truth, t1.max_k) as recall,
  recall_at(t1.rec, t2.truth, 2) as recall_at_2,

  -- Precision@k
  precision_at(t1.rec, t2.truth, t1.max_k) as precision,
  precision_at(t1.rec, t2.truth, 2) as precision_at_2,

  -- MAP
  average_precision(t1.rec, t2.truth, t1.max_k) as average_precision,
  average_precision(t1.rec, t2.truth, 2) as average_precision_at_2,

  -- AUC
  auc(t1.rec, t2.truth, t1.max_k) as auc,
  auc(t1.rec, t2.truth, 2) as auc_at_2,

  -- MRR
  mrr(t1.rec, t2.truth, t1.max_k) as mrr,
  mrr(t1.rec, t2.truth, 2) as mrr_at_2,

  -- NDCG
  ndcg(t1.rec, t2.truth, t1.max_k) as ndcg,
  ndcg(t1.rec, t2.truth, 2) as ndcg_at_2
from rec t1
join truth t2 on (t1.userid = t2.userid)
;
"""

GUIDE_GRADED_TABLE = """
CREATE OR REPLACE TABLE dummy_recrel AS SELECT * FROM (VALUES
  (1, 1, 10.0, 5.0), (1, 3, 8.0, 2.0), (1, 2, 6.0, 4.0), (1, 6, 2.0, 1.0), (1, 4, 1.0, 3.0),
  (2, 1, 10.0, 5.0), (2, 3, 8.0, 2.0), (2, 2, 6.0, 4.0), (2, 6, 2.0, 1.0), (2, 4, 1.0, 3.0),
  (3, 1, 10.0, 5.0), (3, 3, 8.0, 2.0), (3, 2, 6.0, 4.0), (3, 6, 2.0, 1.0), (3, 4, 1.0, 3.0)
) t(userid, itemid, score, relscore);
"""

# [guide] the graded query, pasted unchanged (note its double-quoted "-reverse").
GUIDE_GRADED_QUERY = """
with truth as (
  select
    userid,
    to_ordered_list(relscore, '-reverse') as truth
  from
    dummy_recrel
  group by
    userid
),
rec as (
  select
    userid,
    to_ordered_list(struct(relscore, itemid), score, "-reverse") as rec,
    count(itemid) as max_k
  from
    dummy_recrel
  group by
    userid
)
select
  -- top-2 recommendation
  ndcg(t1.rec, t2.truth, 2), -- => 0.8128912838590544
  -- top-3 recommendation
  ndcg(t1.rec, t2.truth, 3)  -- => 0.9187707805346093
from
  rec t1
  join truth t2 on (t1.userid = t2.userid)
;
"""

# The seven binary measures in the order of the note's section 4 tables:
# recall / precision / AP / AUC / RR / hit / nDCG.
MEASURES = ("recall_at", "precision_at", "average_precision", "auc", "mrr", "hitrate", "ndcg")
NAN = math.nan


@pytest.fixture(scope="module")
def hcon() -> duckdb.DuckDBPyConnection:
    """One connection for the module (registering takes a moment); tests replace their tables."""
    connection = duckrank.connect(hivemall=True)
    yield connection
    connection.close()


def mean_of_identical_rows(value: float, rows: int = 3) -> float:
    """Hivemall's mean of `rows` identical rows: added in double precision, divided once."""
    total = 0.0
    for _ in range(rows):
        total += value
    return total / rows


def same(actual: float, expected: float) -> bool:
    """Equal to the bit, NaN equal to NaN."""
    if math.isnan(expected):
        return math.isnan(actual)
    return actual == expected


def row_values(con, rec: str, truth: str, k: str | None) -> tuple[float, ...]:
    """The seven measures of one (rec, truth, k) row, each as Hivemall's aggregate over that row."""
    args = "rec, truth" if k is None else f"rec, truth, {k}"
    calls = ", ".join(f"{m}({args})" for m in MEASURES)
    return con.execute(f"SELECT {calls} FROM (SELECT {rec} AS rec, {truth} AS truth)").fetchall()[0]


# --- the guide's queries ------------------------------------------------------------------------

def test_guide_binary_query_pasted_unchanged(hcon):
    hcon.execute(GUIDE_BINARY_TABLES)
    rows = hcon.execute(GUIDE_BINARY_QUERY).fetchall()
    assert len(rows) == 1
    # Per-row values [note 4, table "Doc example ... for each k", k = 4 and k = 2]; each measure
    # is the mean of three identical rows (one per user), as Hivemall sums and divides.
    per_row = [
        0.6666666666666666, 0.3333333333333333,  # recall
        0.5, 0.5,  # precision
        0.8333333333333333, 1.0,  # average precision (hits found, not the guide's 0.5556/0.3333)
        0.75, 1.0,  # AUC
        1.0, 1.0,  # MRR
        0.7039180890341348, 0.6131471927654585,  # nDCG
    ]
    expected = [mean_of_identical_rows(v) for v in per_row]
    assert list(rows[0]) == expected
    # [note 6.1]: the means print as 0.8333333333333334 and 0.7039180890341349 (the guide's NDCG).
    assert expected[4] == 0.8333333333333334 and expected[10] == 0.7039180890341349
    # The acceptance tolerance against the per-row values.
    assert rows[0] == pytest.approx(per_row, abs=1e-12)


def test_guide_binary_table_matches_except_the_stale_map_row(hcon):
    hcon.execute(GUIDE_BINARY_TABLES)
    values = hcon.execute(GUIDE_BINARY_QUERY).fetchall()[0]
    # [guide] its output table; MAP (0.5555555555555555, 0.3333333333333333) comes from the
    # pre-2017 formula that divided by |truth| [note 2.3, 6.1], Hivemall's code divides by hits.
    guide = [0.6666666666666666, 0.3333333333333333, 0.5, 0.5, None, None,
             0.75, 1.0, 1.0, 1.0, 0.7039180890341349, 0.6131471927654585]
    for value, printed in zip(values, guide, strict=True):
        if printed is not None:
            assert value == printed
    # The guide's own MAP formula gives its numbers: (1/1 + 2/3) / |truth| = 0.5555..., and
    # 1/1 / 3 at k = 2; duckrank's main average_precision uses that formula too.
    guide_formula = (1 / 1 + 2 / 3) / 3
    assert guide_formula == pytest.approx(0.5555555555555555, abs=1e-15)
    main = scalar(hcon, "SELECT main.average_precision([1, 3, 2, 6], [1, 2, 4], 4)")
    assert main == pytest.approx(0.5555555555555555, abs=1e-15)


def test_guide_graded_query_through_hive_sql(hcon):
    hcon.execute(GUIDE_GRADED_TABLE)
    rows = hcon.execute(duckrank.hive_sql(GUIDE_GRADED_QUERY)).fetchall()
    # [guide] "=> 0.8128912838590544" and "=> 0.9187707805346093" (three identical users).
    assert rows == [(mean_of_identical_rows(0.8128912838590544),
                     mean_of_identical_rows(0.9187707805346093))]
    assert rows[0] == pytest.approx((0.8128912838590544, 0.9187707805346093), abs=1e-12)


def test_graded_query_without_translation_reads_the_double_quotes_as_a_column(hcon):
    hcon.execute(GUIDE_GRADED_TABLE)
    with pytest.raises(duckdb.BinderException, match="-reverse"):
        hcon.execute(GUIDE_GRADED_QUERY)
    # With the one-character change (single quotes) it runs as DuckDB SQL too.
    fixed = GUIDE_GRADED_QUERY.replace('"-reverse"', "'-reverse'")
    assert hcon.execute(fixed).fetchall() == hcon.execute(
        duckrank.hive_sql(GUIDE_GRADED_QUERY)).fetchall()


def test_guide_binary_query_through_hive_sql_gives_the_same_row(hcon):
    hcon.execute(GUIDE_BINARY_TABLES)
    assert hcon.execute(duckrank.hive_sql(GUIDE_BINARY_QUERY)).fetchall() == hcon.execute(
        GUIDE_BINARY_QUERY).fetchall()


def test_hive_sql_translation():
    translated = duckrank.hive_sql('select to_ordered_list(struct(a, b), s, "-reverse") from t')
    assert "'-reverse'" in translated and '"-reverse"' not in translated
    assert duckrank.hive_sql("select 1; select 2") == "SELECT 1;\nSELECT 2"


# --- the note's section 4 tables, one row per test ---------------------------------------------

EDGE_ROWS = [
    # Empty lists and extreme k.
    ("[]", "[]", "2", (1.0, 1.0, 1.0, 0.5, 0.0, 0.0, 0.0)),
    ("[]", "[]", "0", (1.0, 1.0, 1.0, 0.5, 0.0, 0.0, 0.0)),
    ("[]", "[1, 2, 4]", "2", (0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0)),
    ("[]", "[1, 2, 4]", "0", (0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0)),
    ("[1, 3, 2, 6]", "[]", "2", (0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0)),
    ("[1, 3, 2, 6]", "[]", "0", (0.0, NAN, 0.0, 0.5, 0.0, 0.0, 0.0)),
    ("[1, 3, 2, 6]", "[1, 2, 4]", "0", (0.0, NAN, 0.0, 0.5, 0.0, 0.0, 0.0)),
    ("[1, 3, 2, 6]", "[1, 2, 4]", "7",
     (0.6666666666666666, 0.5, 0.8333333333333333, 0.3, 1.0, 1.0, 0.7039180890341348)),
    # Duplicates, short lists, nulls.
    ("[1, 1, 2]", "[1]", "3",
     (2.0, 0.6666666666666666, 1.0, 1.0, 1.0, 1.0, 1.6309297535714573)),
    ("[1, 1, 1]", "[1, 2]", "3", (1.5, 1.0, 1.0, 0.5, 1.0, 1.0, 1.3065735963827292)),
    ("[1, 3]", "[1, 1, 2]", "2",
     (0.3333333333333333, 0.5, 1.0, 1.0, 1.0, 1.0, 0.6131471927654585)),
    ("[1]", "[1, 2, 3]", "3", (0.3333333333333333, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0)),
    ("[1]", "[1, 2, 3]", "10", (0.3333333333333333, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0)),
    ("[NULL, 1, 5]", "[NULL, 2]", "3",
     (0.5, 0.3333333333333333, 1.0, 1.0, 1.0, 1.0, 0.6131471927654585)),
    # Reversed rec and other lists.
    ("[6, 2, 3, 1]", "[1, 2, 4]", "4",
     (0.6666666666666666, 0.5, 0.5, 0.25, 0.5, 1.0, 0.49818925746641285)),
    ("[1, 3, 2, 6, 4, 5]", "[1, 2, 4]", "6",
     (1.0, 0.5, 0.7555555555555555, 0.6666666666666666, 1.0, 1.0, 0.8854598815714875)),
    ("[1, 3, 2, 4, 6, 5]", "[1, 2, 4]", "6",
     (1.0, 0.5, 0.8055555555555555, 0.7777777777777778, 1.0, 1.0, 0.9060254355346824)),
]

# [note 4] "Doc example rec [1,3,2,6], truth [1,2,4], for each k".
DOC_EXAMPLE_BY_K = {
    1: (0.3333333333333333, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0),
    2: (0.3333333333333333, 0.5, 1.0, 1.0, 1.0, 1.0, 0.6131471927654585),
    3: (0.6666666666666666, 0.6666666666666666, 0.8333333333333333, 0.5, 1.0, 1.0,
        0.7039180890341348),
    4: (0.6666666666666666, 0.5, 0.8333333333333333, 0.75, 1.0, 1.0, 0.7039180890341348),
    5: (0.6666666666666666, 0.5, 0.8333333333333333, 0.5, 1.0, 1.0, 0.7039180890341348),
    6: (0.6666666666666666, 0.5, 0.8333333333333333, 0.375, 1.0, 1.0, 0.7039180890341348),
}


@pytest.mark.parametrize(("rec", "truth", "k", "expected"), EDGE_ROWS)
def test_note_edge_case_table(hcon, rec, truth, k, expected):
    actual = row_values(hcon, rec, truth, k)
    assert all(same(a, e) for a, e in zip(actual, expected, strict=True)), (actual, expected)


@pytest.mark.parametrize(("k", "expected"), DOC_EXAMPLE_BY_K.items())
def test_note_doc_example_for_each_k(hcon, k, expected):
    actual = row_values(hcon, "[1, 3, 2, 6]", "[1, 2, 4]", str(k))
    assert all(same(a, e) for a, e in zip(actual, expected, strict=True)), (actual, expected)


@pytest.mark.parametrize("function", MEASURES)
def test_negative_k_is_hivemalls_error(hcon, function):
    # [note 4] "any | any | -1 | error", message from [note 1.2].
    message = (f"{function}: The third argument `int recommendSize` must be in greater than or "
               "equals to 0: -1")
    with pytest.raises(duckdb.InvalidInputException, match=message.replace("`", ".")):
        hcon.execute(f"SELECT {function}([1, 3, 2, 6], [1, 2, 4], -1)").fetchall()


@pytest.mark.parametrize("function", MEASURES)
def test_items_of_different_types_are_an_error_not_hivemalls_zero(hcon, function):
    # [note 4] "int [1,2,3] | long [1,2] | 3 | 0 / 0 / 0 / 0.5 / 0 / 0 / 0": Hivemall never matches
    # int with bigint. DuckDB would cast them and match, so neither number would be Hivemall's
    # intent: the hivemall schema stops with an error naming both types (docs/hivemall.md).
    with pytest.raises(duckdb.InvalidInputException,
                       match=f"{function}: rec items are INTEGER but truth items are BIGINT"):
        hcon.execute(f"SELECT {function}([1, 2, 3]::INTEGER[], [1, 2]::BIGINT[], 3)").fetchall()
    # Cast one side and the items match as they would in Hive with equal types.
    assert row_values(hcon, "[1, 2, 3]::BIGINT[]", "[1, 2]::BIGINT[]", "3")[0] == 1.0


# --- graded nDCG [note 4, graded table; note 2.7] ----------------------------------------------

GRADED_REC = "[{'rel': 5, 'item': 1}, {'rel': 2, 'item': 3}, {'rel': 4, 'item': 2}, " \
             "{'rel': 1, 'item': 6}, {'rel': 3, 'item': 4}]"


@pytest.mark.parametrize(("truth", "k", "expected"), [
    ("[5, 4, 3]", 0, NAN),
    ("[5, 4, 3]", 1, 1.0),
    ("[5, 4, 3]", 2, 0.8128912838590544),
    ("[5, 4, 3]", 3, 0.9187707805346093),
    ("[5, 4, 3]", 4, 0.9285669110980388),
    ("[5, 4, 3]", 5, 0.9901621471567678),
    ("[5, 4, 3]", 6, 0.9901621471567678),
    ("[5, 4, 3, 2, 1]", 2, 0.8128912838590544),
    ("[5, 4, 3, 2, 1]", 3, 0.9187707805346093),
    ("[5, 4, 3, 2, 1]", 5, 0.9537409627799037),
])
def test_graded_ndcg_table(hcon, truth, k, expected):
    assert same(scalar(hcon, f"SELECT ndcg({GRADED_REC}, {truth}, {k})"), expected)


def test_graded_ndcg_edge_cases(hcon):
    # [note 2.7] an unsorted truth can push nDCG above 1; rec shorter than k is penalised,
    # the default k is len(rec); no zero guard: 0/0 is NaN and x/0 is +Infinity.
    assert scalar(hcon, f"SELECT ndcg({GRADED_REC}, [3, 4, 5], 3)") == 1.2636984456515816
    assert scalar(hcon, "SELECT ndcg([{'r': 3.0}], [3.0, 2, 1], 3)") == 0.7452525342261977
    assert scalar(hcon, "SELECT ndcg([{'r': 3.0}], [3.0, 2, 1])") == 1.0
    assert math.isnan(scalar(hcon, "SELECT ndcg([{'r': 0.0}], [0.0])"))
    assert scalar(hcon, "SELECT ndcg([{'r': 1.0}], [0.0])") == math.inf
    # Only field 0 is read, whatever the name; the other fields (item ids) are ignored.
    assert scalar(hcon, "SELECT ndcg([{'x': 1.0, 'item': 'a'}], [1.0])") == 1.0
    # Hand calculation, graded DCG with exponential gain: rec [2, 0] truth [2, 1], k = 2:
    # DCG = 3/log2(2) = 3; IDCG = 3 + 1/log2(3).
    assert scalar(hcon, "SELECT ndcg([{'r': 2}, {'r': 0}], [2, 1], 2)") == pytest.approx(
        3 / (3 + 1 / math.log2(3)), abs=1e-15)


def test_graded_ndcg_errors(hcon):
    # [note 2.7] Hivemall's messages for a NULL relevance and a NULL grade.
    with pytest.raises(duckdb.InvalidInputException,
                       match="ndcg: Field 0 of a struct field is null"):
        hcon.execute("SELECT ndcg([{'r': NULL::DOUBLE, 'i': 1}], [1.0])").fetchall()
    with pytest.raises(duckdb.InvalidInputException, match="ndcg: Found null in the ground truth"):
        hcon.execute("SELECT ndcg([{'r': 1.0}], [1.0, NULL])").fetchall()


# --- aggregation and per-row rules [note 1.2, 1.3] ---------------------------------------------

def test_null_truth_skips_the_row_null_rec_counts_as_empty(hcon):
    rows = "(VALUES ([1, 2], [1]), ([3], NULL), (NULL, [1])) t(rec, truth)"
    # Counted rows: ([1,2],[1]) -> recall 1.0, and (NULL -> [], [1]) -> recall 0.0; mean 0.5.
    assert scalar(hcon, f"SELECT recall_at(rec, truth) FROM {rows}") == 0.5
    # precision: 1/2 and (empty rec, non-empty truth) 0.0 -> 0.25.
    assert scalar(hcon, f"SELECT precision_at(rec, truth, 2) FROM {rows}") == 0.25


@pytest.mark.parametrize("function", MEASURES)
def test_empty_group_gives_zero(hcon, function):
    # [note 1.3] count = 0 gives 0.0, not NULL: no rows, or every truth NULL.
    assert scalar(hcon, f"SELECT {function}([1], [1]) FROM range(0)") == 0.0
    assert scalar(hcon, f"SELECT {function}([1], NULL::INTEGER[], 1) FROM range(3)") == 0.0


def test_mean_per_group_sums_in_double_then_divides_once(hcon):
    # Three rows: nDCG 1.0, 0.6131471927654585, 0.0 [note 4: k = 1, k = 2 rows; no hit].
    values = [1.0, 0.6131471927654585, 0.0]
    got = hcon.execute("""
        SELECT g, ndcg(rec, truth, k) FROM (VALUES
          (1, [1, 3, 2, 6], [1, 2, 4], 1), (1, [1, 3, 2, 6], [1, 2, 4], 2), (1, [9], [1], 1),
          (2, [1, 3, 2, 6], [1, 2, 4], 0)) t(g, rec, truth, k)
        GROUP BY g ORDER BY g""").fetchall()
    assert got == [(1, (values[0] + values[1] + values[2]) / 3), (2, 0.0)]


def test_nan_row_spreads_into_the_mean(hcon):
    # [note 2.2] precision with k = 0 and a non-empty rec is 0/0 = NaN, and so is the mean.
    assert math.isnan(scalar(hcon, """SELECT precision_at(rec, truth, k) FROM (VALUES
        ([1], [1], 1), ([1], [1], 0)) t(rec, truth, k)"""))


def test_k_per_row_from_a_column_and_default_k(hcon):
    # [note 1.1] the third argument is read row by row; omitted it is len(rec).
    got = scalar(hcon, """SELECT recall_at(rec, truth, k) FROM (VALUES
        ([1, 3, 2, 6], [1, 2, 4], 2), ([1, 3, 2, 6], [1, 2, 4], 4)) t(rec, truth, k)""")
    assert got == (0.3333333333333333 + 0.6666666666666666) / 2
    assert scalar(hcon, "SELECT auc([1, 3, 2, 6], [1, 2, 4])") == 0.75


@pytest.mark.parametrize("k_sql", ["2::TINYINT", "2::SMALLINT", "2::BIGINT", "2::UINTEGER"])
def test_k_accepts_integer_types(hcon, k_sql):
    assert scalar(hcon, f"SELECT recall_at([1, 3, 2, 6], [1, 2, 4], {k_sql})") == (
        0.3333333333333333)


@pytest.mark.parametrize(("k_sql", "typename"), [("2.0", "DECIMAL(2,1)"), ("'2'", "VARCHAR"),
                                                 ("2::DOUBLE", "DOUBLE"), ("NULL", '"NULL"')])
def test_k_of_another_type_is_hivemalls_error(hcon, k_sql, typename):
    # [note 1.1] "Unexpected type '<type>' is passed." (a literal NULL is Hive's void type).
    with pytest.raises(duckdb.InvalidInputException,
                       match=re.escape(f"ndcg: Unexpected type '{typename}' is passed")):
        hcon.execute(f"SELECT ndcg([1, 3, 2, 6], [1, 2, 4], {k_sql})").fetchall()


def test_null_k_in_a_column_is_an_error(hcon):
    # [note 1.2] Hivemall fails with a NullPointerException; here a message says so.
    with pytest.raises(duckdb.InvalidInputException, match="mrr: the third argument .* is NULL"):
        hcon.execute("SELECT mrr([1], [1], k) FROM (VALUES (NULL::INTEGER)) t(k)").fetchall()


@pytest.mark.parametrize("function", [m for m in MEASURES if m != "ndcg"])
def test_struct_items_only_for_ndcg(hcon, function):
    # [note 1.1] only ndcg takes struct elements.
    with pytest.raises(duckdb.InvalidInputException, match=f"{function}: The first argument"):
        hcon.execute(f"SELECT {function}([{{'r': 1.0}}], [1.0])").fetchall()


def test_string_items_and_duplicated_truth(hcon):
    # [note 1.4] duplicates in truth count in |truth|: recall 1/3, nDCG IDCG over min(3, 2) = 2.
    got = row_values(hcon, "['a', 'c']", "['a', 'a', 'b']", "2")
    assert got == row_values(hcon, "[1, 3]", "[1, 1, 2]", "2")


# --- reference implementation on random rows [reference] ----------------------------------------

def reference_row(rec: list, truth: list, k: int) -> tuple[float, ...]:
    """The note's section 2 formulas, written out in Python (per row)."""
    top = min(len(rec), k)
    hits = [i + 1 for i in range(top) if rec[i] in truth]  # NULL (None) matches None
    tp, size = len(hits), len(truth)
    empty_rule = 1.0 if not rec else 0.0
    recall = empty_rule if size == 0 else tp / size
    precision = (1.0 if size == 0 else 0.0) if not rec else (tp / top if top else NAN)
    if size == 0:
        ap = empty_rule
    elif tp == 0:
        ap = 0.0
    else:
        ap = sum((j + 1) / p for j, p in enumerate(hits)) / tp
    pairs = tp * (k - tp)
    correct = sum((top - p) - (tp - (j + 1)) for j, p in enumerate(hits))
    auc = 0.5 if pairs == 0 else correct / pairs
    rr = 1 / hits[0] if hits else 0.0
    hit = 1.0 if hits else 0.0
    ideal = min(size, top)
    if ideal == 0:
        ndcg = 0.0
    else:
        dcg = sum(1 / (math.log(p + 1) / math.log(2)) for p in hits)
        idcg = sum(1 / (math.log(i + 1) / math.log(2)) for i in range(1, ideal + 1))
        ndcg = dcg / idcg
    return (recall, precision, ap, auc, rr, hit, ndcg)


def test_agrees_with_the_note_formulas_on_random_rows(hcon):
    generator = random.Random(5)
    for _ in range(60):
        items = [None, 1, 2, 3, 4, 5, 6]
        rec = [generator.choice(items) for _ in range(generator.randint(0, 7))]
        truth = [generator.choice(items) for _ in range(generator.randint(0, 4))]
        k = generator.randint(0, 9)
        actual = hcon.execute(
            "SELECT " + ", ".join(f"{m}(?::INTEGER[], ?::INTEGER[], ?)" for m in MEASURES),
            [rec, truth, k] * len(MEASURES)).fetchall()[0]
        expected = reference_row(rec, truth, k)
        assert all(same(a, e) for a, e in zip(actual, expected, strict=True)), (
            rec, truth, k, actual, expected)


# --- classification AUC [note 3] ---------------------------------------------------------------

def trapezoid_auc(rows: list[tuple[float, int]]) -> float:
    """[reference] Hivemall's classification AUC (note 3) on rows in arrival order: a new ROC
    point at each change of score, trapezoids in (FP, TP) counts, area / (P * N)."""
    area, tp, fp, tp_prev, fp_prev, score_prev = 0.0, 0, 0, 0, 0, math.inf
    for score, label in rows:
        if score != score_prev:
            area += abs(fp - fp_prev) * (tp + tp_prev) / 2.0
            tp_prev, fp_prev, score_prev = tp, fp, score
        if label == 1:
            tp += 1
        else:
            fp += 1
    area += abs(fp - fp_prev) * (tp + tp_prev) / 2.0
    return area / (tp * fp)


def test_classification_auc_doc_example(hcon):
    # [note 6.3, guide auc.md] 0.83333, fed in ORDER BY prob DESC.
    data = [(0.5, 0), (0.3, 1), (0.2, 0), (0.8, 1), (0.7, 1)]
    got = scalar(hcon, """SELECT auc(prob, label) FROM (SELECT * FROM (VALUES
        (0.5, 0), (0.3, 1), (0.2, 0), (0.8, 1), (0.7, 1)) t(prob, label) ORDER BY prob DESC)""")
    assert round(got, 5) == 0.83333
    assert got == trapezoid_auc(sorted(data, reverse=True)) == 5 / 6
    # [sklearn] the same AUC (it normalises before integrating, so only to rounding).
    labels, scores = [label for _, label in data], [score for score, _ in data]
    assert got == pytest.approx(roc_auc_score(labels, scores), abs=1e-15)


def test_classification_auc_ties_labels_and_nulls_against_sklearn(hcon):
    # Ties at half credit, -1 as the negative label, NULL score or label skipped [note 3].
    generator = random.Random(3)
    for _ in range(5):
        scores = [generator.choice([0.0, 0.1, 0.25, 0.5, 0.5, 0.9, 1.0]) for _ in range(40)]
        labels = [generator.choice([-1, 0, 1]) for _ in range(40)]
        rows = [*zip(scores, labels, strict=True), (None, 1), (0.3, None)]
        hcon.execute("CREATE OR REPLACE TABLE scored (score DOUBLE, label INTEGER)")
        hcon.executemany("INSERT INTO scored VALUES (?, ?)", [list(r) for r in rows])
        by_score_desc = sorted(zip(scores, labels, strict=True), key=lambda r: -r[0])
        expected = trapezoid_auc(by_score_desc)
        # Hivemall needs ORDER BY score DESC; this implementation gives the same either way.
        assert scalar(hcon, "SELECT auc(score, label) FROM scored") == expected
        assert scalar(hcon, "SELECT auc(score, label) FROM (FROM scored ORDER BY score DESC)") == (
            expected)
        binary = [1 if label == 1 else 0 for label in labels]
        assert expected == pytest.approx(roc_auc_score(binary, scores), abs=1e-15)


def test_classification_and_list_auc_in_one_query(hcon):
    # The arity clash: two arguments of number types pick the classification form, lists the
    # list form, in the same query.
    got = hcon.execute("""SELECT auc(s, l), auc(rec, truth) FROM (VALUES
        (0.9, 1, [1, 3, 2, 6], [1, 2, 4]), (0.1, 0, [1, 3, 2, 6], [1, 2, 4])) t(s, l, rec, truth)
        """).fetchall()
    assert got == [(1.0, 0.75)]


@pytest.mark.parametrize(("rows", "message"), [
    ("(0.5, 1), (0.4, 1)", "auc: AUC score is not defined because there is only one class"),
    ("(0.5, 1), (1.5, 0)", r"auc: score value MUST be in range \[0,1\]: 1.5"),
    ("(0.5, 1), (0.4, 2)", "auc: label MUST be 0/1 or -1/1: 2"),
])
def test_classification_auc_errors(hcon, rows, message):
    with pytest.raises(duckdb.InvalidInputException, match=message):
        hcon.execute(f"SELECT auc(s, l) FROM (VALUES {rows}) t(s, l)").fetchall()


def test_classification_auc_without_rows_is_an_error(hcon):
    with pytest.raises(duckdb.InvalidInputException, match="only one class"):
        hcon.execute("SELECT auc(0.5::DOUBLE, 1) FROM range(0)").fetchall()


# --- collections: to_ordered_list, to_ordered_map, collect_set, struct -------------------------

HELP_TEXT_DATA = """(VALUES (5, 'apple'), (3, 'banana'), (4, 'candy'), (1, 'donut'), (2, 'egg'),
  (4, 'candy')) t(key, value)"""


@pytest.mark.parametrize(("call", "expected"), [
    # [note 6.4] to_ordered_list help-text table.
    ("value, key, '-reverse'", ["apple", "candy", "candy", "banana", "egg", "donut"]),
    ("value, key, '-k 2'", ["apple", "candy"]),
    ("value, key, '-k 100'", ["apple", "candy", "candy", "banana", "egg", "donut"]),
    ("value, key, '-k 2 -reverse'", ["donut", "egg"]),
    ("value, key", ["donut", "egg", "banana", "candy", "candy", "apple"]),
    ("value, key, '-k -2'", ["donut", "egg"]),
    ("value, key, '-k -2 -reverse'", ["apple", "candy"]),
    ("value, '-k 2'", ["egg", "donut"]),
    ("key, '-k -2 -reverse'", [5, 4]),
    ("key", [1, 2, 3, 4, 4, 5]),
    ("value, key, '-k 4 -dedup'", ["apple", "candy", "banana", "egg"]),
    ("value, key, '-k 4'", ["apple", "candy", "candy", "banana"]),
])
def test_hivemall_to_ordered_list(hcon, call, expected):
    # Qualified, so it is the hivemall schema's aggregate whatever the search path.
    assert scalar(hcon, f"SELECT hivemall.to_ordered_list({call}) FROM {HELP_TEXT_DATA}") == (
        expected)


def test_to_ordered_list_of_nothing_is_null(hcon):
    # [note 7.5] no rows left gives NULL, not [].
    assert scalar(hcon, "SELECT to_ordered_list(x, 1) FROM (VALUES (NULL::INT)) t(x)") is None


def test_to_ordered_map_collapses_tied_scores(hcon):
    # [guide, Caution] map_values(to_ordered_map(score, itemid, true)) keeps one item per score.
    data = "(VALUES (10.0, 1), (8.0, 3), (8.0, 5), (6.0, 2)) t(score, itemid)"
    got = scalar(hcon, f"SELECT map_values(to_ordered_map(score, itemid, true)) FROM {data}")
    # Tied items 3 and 5 collapse to one; the greatest value stands for Hivemall's
    # "last row to arrive" (docs/hivemall.md).
    assert got == [1, 5, 2]
    assert scalar(hcon, f"SELECT to_ordered_list(itemid, score, '-reverse') FROM {data}") == [
        1, 5, 3, 2]
    # On the guide's data, without ties, it gives the guide's rec.
    hcon.execute(GUIDE_BINARY_TABLES)
    assert hcon.execute("""SELECT map_values(to_ordered_map(score, itemid, true)) FROM dummy_rec
        GROUP BY userid""").fetchall() == [([1, 3, 2, 6],)] * 3


def test_to_ordered_map_forms(hcon):
    # [note 7.8] and UDAFToOrderedMap: ascending; true descending; k > 0 the k largest keys
    # descending; k < 0 the |k| smallest ascending; NULL keys skipped, NULL values kept.
    data = "(VALUES (2, 'b'), (1, 'a'), (3, NULL), (NULL, 'z')) t(k, v)"
    got = hcon.execute(f"""SELECT to_ordered_map(k, v), to_ordered_map(k, v, false),
        to_ordered_map(k, v, true), to_ordered_map(k, v, 2), to_ordered_map(k, v, -2)
        FROM {data}""").fetchall()[0]
    assert got == ({1: "a", 2: "b", 3: None}, {1: "a", 2: "b", 3: None},
                   {3: None, 2: "b", 1: "a"}, {3: None, 2: "b"}, {1: "a", 2: "b"})
    with pytest.raises(duckdb.InvalidInputException, match="Map size must be nonzero: 0"):
        hcon.execute(f"SELECT to_ordered_map(k, v, 0) FROM {data}").fetchall()
    with pytest.raises(duckdb.InvalidInputException, match="must be boolean or integer type"):
        hcon.execute(f"SELECT to_ordered_map(k, v, 'x') FROM {data}").fetchall()


def test_collect_set_collect_list_and_struct(hcon):
    data = "(VALUES (1, 2), (1, 2), (1, NULL), (2, NULL)) t(g, x)"
    got = hcon.execute(f"""SELECT g, collect_set(x), collect_list(x) FROM {data}
        GROUP BY g ORDER BY g""").fetchall()
    # Hive skips NULLs and gives [] for a group without values (so truth is [] and the row
    # counts, rather than NULL which would skip it).
    assert got == [(1, [2], [2, 2]), (2, [], [])]
    assert scalar(hcon, "SELECT struct(1, 'a', 2.5)") == {"col1": 1, "col2": "a", "col3": 2.5}


# --- schema placement --------------------------------------------------------------------------

def test_main_functions_keep_their_scalar_meaning_without_the_search_path(con):
    # duckrank.connect() without hivemall=True: ndcg is main's scalar; hivemall.* is the
    # aggregate, reachable qualified.
    assert scalar(con, "SELECT ndcg([1, 3, 2, 6], [1, 2, 4], 2)") == pytest.approx(
        0.6131471927654585, abs=1e-15)
    two_rows = "(VALUES ([1], [1]), ([2], [1])) t(rec, truth)"
    assert con.execute(f"SELECT ndcg(rec, truth, 2) FROM {two_rows}").fetchall() == [
        (1.0,), (0.0,)]
    assert scalar(con, """SELECT hivemall.ndcg(rec, truth, 2)
        FROM (VALUES ([1], [1]), ([2], [1])) t(rec, truth)""") == 0.5
    assert scalar(con, "SELECT average_precision([1, 3, 2, 6], [1, 2, 4], 2)") == (
        pytest.approx(1 / 3, abs=1e-15))


def test_schema_works_in_plain_duckdb_from_a_database_file(tmp_path):
    path = str(tmp_path / "hm.duckdb")
    duckrank.connect(path).close()
    plain = duckdb.connect(path)
    plain.execute("SET search_path = 'hivemall,main'")
    assert plain.execute(f"SELECT ndcg({GRADED_REC}, [5, 4, 3], 2), "
                         "recall_at([1, 3, 2, 6], [1, 2, 4], 2)").fetchall() == [
        (0.8128912838590544, 0.3333333333333333)]
    plain.close()


@pytest.mark.parametrize("database", [":memory:", "file"])
def test_hivemall_names_win_on_native_connections(tmp_path, database):
    """connect(hivemall=True) puts the hivemall schema first; the native step's TEMP helper
    macros, which come before every schema, have none of its names. The guide's table
    (seed 001): recall@2 of its two users is 1/3 each, one aggregate row; main's scalar would
    give a row per user."""
    path = database if database == ":memory:" else str(tmp_path / "hm.duckdb")
    with duckrank.connect(path, hivemall=True) as con:
        assert con.execute(
            "SELECT recall_at(rec, truth, 2) FROM (VALUES ([1, 3, 2, 6], [1, 2, 4]), "
            "([6, 2, 3, 1], [1, 2, 4])) t(rec, truth)"
        ).fetchall() == [(0.3333333333333333,)]
        # main's functions, qualified, are still main's (per row).
        assert con.execute("SELECT main.recall_at([1, 3, 2, 6], [1, 2, 4], 2)").fetchall() == [
            (0.3333333333333333,)]


TWO_USERS = "(VALUES ([1, 3, 2, 6], [1, 2, 4]), ([6, 2, 3, 1], [1, 2, 4])) t(rec, truth)"


def test_hivemall_names_win_on_a_read_only_database_registered_by_this_build(tmp_path):
    """A read-only database holding this build's macros gets no TEMP copy of main's (only the
    native helpers): with hivemall=True, ndcg is Hivemall's aggregate, the guide's table (seed
    001: ndcg@2 of its two users 0.6131 and 0.3869, mean 0.5); main's stays qualified. Before,
    a TEMP copy of every main macro came first, per row, in silence (recall_at too)."""
    path = str(tmp_path / "ro.duckdb")
    duckrank.connect(path).close()
    with duckrank.connect(path, read_only=True, hivemall=True) as con:
        assert con.execute(f"SELECT ndcg(rec, truth, 2) FROM {TWO_USERS}").fetchall() == [
            (0.5,)]
        assert con.execute(f"SELECT recall_at(rec, truth, 2) FROM {TWO_USERS}").fetchall() == [
            (0.3333333333333333,)]
        assert len(con.execute(f"SELECT main.ndcg(rec, truth, 2) FROM {TWO_USERS}").fetchall()
                   ) == 2


def test_functions_on_a_registered_database_add_no_copy_of_its_functions():
    """register(con, functions=...) on a database holding this build's macros adds only the
    TEMP macros that differ from them: a TEMP ndcg would hide hivemall.ndcg under the hivemall
    search path."""
    with duckrank.connect() as con:
        duckrank.register(con, functions=["ndcg", "recall_at"])
        con.execute("SET search_path = 'hivemall,main'")
        assert con.execute(f"SELECT ndcg(rec, truth, 2) FROM {TWO_USERS}").fetchall() == [
            (0.5,)]


def test_a_bare_search_path_on_a_native_connection_gives_hivemalls_functions():
    """With 'hivemall,main' set by hand on a native connection, every name resolves as the search
    path says: the native step is reached through TEMP helper macros whose names are duckrank's
    own, and no TEMP macro of the connection has a name of the hivemall schema (a TEMP macro
    comes before every schema: it would answer per row where the user asked for Hivemall's
    aggregate). Two rows, one aggregate row each: Hivemall's recall@2 of one row (1 hit of 3),
    and its ndcg@2 averaged over ([1], [1]) (1.0) and ([2], [1]) (0.0)."""
    with duckrank.connect() as con:
        temp = {name for (name,) in con.execute(
            "SELECT function_name FROM duckdb_functions() WHERE database_name = 'temp'"
        ).fetchall()}
        assert "duckrank_graded_match" in temp
        hivemall_names = {name for (name,) in con.execute(
            "SELECT function_name FROM duckdb_functions() WHERE schema_name = 'hivemall'"
        ).fetchall()}
        assert hivemall_names and not temp & hivemall_names
        con.execute("SET search_path = 'hivemall,main'")
        assert con.execute("SELECT recall_at([1, 3, 2, 6], [1, 2, 4], 2)").fetchall() == [
            (1 / 3,)]
        assert con.execute("SELECT ndcg(rec, truth, 2) FROM (VALUES ([1], [1]), ([2], [1])) "
                           "t(rec, truth)").fetchall() == [(0.5,)]
        assert con.execute("SELECT hivemall.recall_at([1, 3, 2, 6], [1, 2, 4], 2)").fetchall() == [
            (1 / 3,)]
