"""spearman, kendall_tau, ap_correlation and fcp through real DuckDB.

Expected values: the paper's Table 2 (Ackerman & Chen, CEUR-WS Vol-811, paper 11: tau_ap = 1/3),
hand calculations written out below, scipy.stats.spearmanr / kendalltau (tau-b) on random cases with
ties, and plain-Python pair counts written from the definitions for fcp and tau_ap.
"""

from __future__ import annotations

import math
import random

import duckdb
import pytest
from conftest import scalar as value
from scipy import stats

import duckrank
import duckrank.metrics.correlation as correlation

FUNCTIONS = ("spearman", "kendall_tau", "ap_correlation", "fcp")
TABLE2 = "MAP {'A': 5, 'B': 4, 'C': 3, 'D': 2}"


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckrank.connect()
    yield connection
    connection.close()


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        # System B, A, C, D against grades A 5, B 4, C 3, D 2 (paper, Table 2).
        # Rank differences 1, 1, 0, 0: rho = 1 - 6 * 2 / (4 * 15) = 0.8.
        ("spearman", 0.8),
        # 6 pairs, only (B, A) discordant, no ties: (5 - 1) / 6.
        ("kendall_tau", 2 / 3),
        # Paper, section 3.2: 2/3 * (0/1 + 2/2 + 3/3) - 1 = 1/3.
        ("ap_correlation", 1 / 3),
        # 5 of 6 pairs concordant.
        ("fcp", 5 / 6),
    ],
)
def test_table2(con, function, expected):
    got = value(con, f"SELECT {function}(['B', 'A', 'C', 'D'], {TABLE2})")
    assert got == pytest.approx(expected, abs=1e-12)


def test_ties_by_hand(con):
    # System x, y, z, w with grades 2, 3, 3, 1. Pairs: (x,y) d, (x,z) d, (x,w) c, (y,z) tie,
    # (y,w) c, (z,w) c: 3 concordant, 2 discordant, 1 tied of 6.
    truth = "MAP {'x': 2, 'y': 3, 'z': 3, 'w': 1}"
    rec = "['x', 'y', 'z', 'w']"
    assert value(con, f"SELECT fcp({rec}, {truth})") == pytest.approx(3 / 5)
    assert value(con, f"SELECT kendall_tau({rec}, {truth})") == pytest.approx(
        1 / math.sqrt(6 * 5))
    # tau_ap: C(y) = 0 (x has a lower grade), C(z) = 0 + 1/2 (y ties), C(w) = 3;
    # 2/3 * (0/1 + 0.5/2 + 3/3) - 1 = -1/6.
    assert value(con, f"SELECT ap_correlation({rec}, {truth})") == pytest.approx(-1 / 6)
    # Truth ranks (1 = best, ties averaged): y 1.5, z 1.5, x 3, w 4; system ranks 1..4.
    # Deviations from the mean 2.5: system -1.5, -0.5, 0.5, 1.5; truth 0.5, -1, -1, 1.5.
    # rho = (-0.75 + 0.5 - 0.5 + 2.25) / sqrt(5 * 4.5) = 1.5 / sqrt(22.5) = 0.316...
    assert value(con, f"SELECT spearman({rec}, {truth})") == pytest.approx(
        1.5 / math.sqrt(5 * 4.5))


def brute_pairs(grades: list[float]) -> tuple[int, int, float]:
    """(concordant, discordant, sum over positions i >= 2 of C(i)/(i - 1)) by pair counting."""
    concordant = discordant = 0
    ap_sum = 0.0
    for i, grade in enumerate(grades):
        correct = 0.0
        for above in grades[:i]:
            concordant += above > grade
            discordant += above < grade
            correct += 1.0 if above > grade else 0.5 if above == grade else 0.0
        if i:
            ap_sum += correct / i
    return concordant, discordant, ap_sum


def random_cases(seed: int, count: int) -> list[tuple[list[int], dict[int, float]]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        pool = rng.randint(0, 40)
        rec = [rng.randrange(pool + 5) for _ in range(rng.randint(0, pool + 5))]  # repeats
        graded = rng.sample(range(pool + 5), rng.randint(0, pool + 5))
        levels = rng.choice([2, 3, 5, 1000])
        cases.append((rec, {item: float(rng.randrange(levels)) for item in graded}))
    return cases


def compared_grades(rec: list[int], truth: dict[int, float]) -> list[float]:
    seen: set[int] = set()
    grades = []
    for item in rec:
        if item in truth and item not in seen:
            grades.append(truth[item])
        seen.add(item)
    return grades


def run(con, function: str, cases) -> list[float | None]:
    # 3,000 rows: more than one DuckDB vector.
    return [
        row[0]
        for row in con.execute(
            f"SELECT {function}(rec, map(k, v)) FROM "
            "(SELECT unnest($1) AS rec, unnest($2) AS k, unnest($3) AS v)",
            [[c[0] for c in cases], [list(c[1]) for c in cases],
             [list(c[1].values()) for c in cases]],
        ).fetchall()
    ]


@pytest.fixture(scope="module")
def cases():
    return random_cases(5, 3000)


def defined(grades: list[float]) -> bool:
    return len(grades) >= 2 and len(set(grades)) > 1


@pytest.mark.parametrize("function", ["spearman", "kendall_tau"])
def test_random_cases_match_scipy(con, cases, function):
    # scipy ranks ascending; the system's position 0 is its best, so correlate positions with
    # the negated grades (variant 'b' is kendalltau's default).
    scipy_function = {"spearman": stats.spearmanr, "kendall_tau": stats.kendalltau}[function]
    for (rec, truth), got in zip(cases, run(con, function, cases), strict=True):
        grades = compared_grades(rec, truth)
        if not defined(grades):
            assert got is None, (rec, truth)
            continue
        expected = scipy_function(range(len(grades)), [-g for g in grades]).statistic
        assert got == pytest.approx(expected, abs=1e-12), (rec, truth)


def test_random_cases_fcp_and_tau_ap(con, cases):
    fcp_values = run(con, "fcp", cases)
    ap_values = run(con, "ap_correlation", cases)
    for (rec, truth), fcp, ap in zip(cases, fcp_values, ap_values, strict=True):
        grades = compared_grades(rec, truth)
        if not defined(grades):
            assert fcp is None and ap is None
            continue
        concordant, discordant, ap_sum = brute_pairs(grades)
        assert fcp == pytest.approx(concordant / (concordant + discordant), abs=1e-12)
        assert ap == pytest.approx(2 / (len(grades) - 1) * ap_sum - 1, abs=1e-12)


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize(
    ("rec", "truth"),
    [
        ("['a']", "MAP {'a': 1}"),  # one compared item
        ("['a', 'b', 'c']", "MAP {'a': 2, 'b': 2, 'z': 1}"),  # all compared grades equal
        ("['a', 'b']", "MAP {'y': 2, 'z': 1}"),  # nothing in common
        ("[]::VARCHAR[]", "MAP {'a': 2, 'b': 1}"),
        ("NULL::VARCHAR[]", "MAP {'a': 2, 'b': 1}"),
        ("['a', 'b']", "NULL::MAP(VARCHAR, DOUBLE)"),
    ],
)
def test_undefined_values_are_null(con, function, rec, truth):
    assert value(con, f"SELECT {function}({rec}, {truth})") is None


@pytest.mark.parametrize("function", FUNCTIONS)
def test_only_items_in_both_count_once_each(con, function):
    # Unknown items, repeats and NULL elements of rec are skipped; so are unranked truth items.
    clean = value(con, f"SELECT {function}(['B', 'A', 'C', 'D'], {TABLE2})")
    noisy = value(
        con, f"SELECT {function}(['B', NULL, 'q', 'A', 'B', 'C', 'A', 'D'], "
        "MAP {'A': 5, 'B': 4, 'C': 3, 'D': 2, 'E': 9})"
    )
    assert noisy == pytest.approx(clean, abs=1e-12)


@pytest.mark.parametrize(
    ("rec", "truth"),
    [
        ("[2, 1, 3, 4]", "map([1, 2, 3, 4], [5, 4, 3, 2])"),
        ("[2, 1, 3, 4]::BIGINT[]", "map([1::TINYINT, 2, 3, 4], [5.0, 4.0, 3.0, 2.0])"),
        ("[2, 1, 3, 4]::HUGEINT[]", "map([1::UBIGINT, 2, 3, 4], [5, 4, 3, 2])"),
        ("['2', '1', '3', '4']", "map([1, 2, 3, 4], [5, 4, 3, 2])"),
        ("[-2, -1, -3, -4]", "map([-1, -2, -3, -4], [-1, -2, -3, -4])"),  # negative grades
    ],
)
def test_id_and_grade_types(con, rec, truth):
    # Ids match as text, like the graded metrics' MAP truth; the order is Table 2's.
    assert value(con, f"SELECT ap_correlation({rec}, {truth})") == pytest.approx(1 / 3)


@pytest.mark.parametrize("grade", ["NULL", "'NaN'::DOUBLE", "'inf'::DOUBLE"])
def test_a_grade_that_is_not_a_finite_number_is_an_error_naming_the_item(con, grade):
    with pytest.raises(duckdb.Error, match="spearman: the grade of item 'b' in truth must be a "
                       "finite number"):
        value(con, f"SELECT spearman(['a', 'b'], map(['a', 'b'], [1.0, {grade}]))")


@pytest.mark.parametrize("pairwise_items", [0, 3, 128], ids=["sorted", "mixed", "pairwise"])
def test_both_pair_counts_give_scipy_and_brute_force(con, monkeypatch, pairwise_items):
    # Rows of up to _PAIRWISE_ITEMS compared items compare every pair at once; longer rows sort.
    # Expected values: scipy (spearman, kendall_tau) and brute_pairs (fcp, tau_ap); rows of up
    # to 180 items, so that the default limit (128) splits them too.
    monkeypatch.setattr(correlation, "_PAIRWISE_ITEMS", pairwise_items)
    rng = random.Random(17)
    cases = []
    for _ in range(60):
        pool = rng.randint(0, 180)
        rec = rng.sample(range(pool + 5), rng.randint(0, pool + 5))
        graded = rng.sample(range(pool + 5), rng.randint(0, pool + 5))
        levels = rng.choice([2, 5, 1000])
        cases.append((rec, {item: float(rng.randrange(levels)) for item in graded}))
    results = {function: run(con, function, cases) for function in FUNCTIONS}
    for i, (rec, truth) in enumerate(cases):
        grades = compared_grades(rec, truth)
        if not defined(grades):
            assert all(results[f][i] is None for f in FUNCTIONS)
            continue
        negated = [-g for g in grades]
        concordant, discordant, ap_sum = brute_pairs(grades)
        expected = {
            "spearman": stats.spearmanr(range(len(grades)), negated).statistic,
            "kendall_tau": stats.kendalltau(range(len(grades)), negated).statistic,
            "ap_correlation": 2 / (len(grades) - 1) * ap_sum - 1,
            "fcp": concordant / (concordant + discordant),
        }
        for function in FUNCTIONS:
            assert results[function][i] == pytest.approx(expected[function], abs=1e-12)
