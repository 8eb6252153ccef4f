"""The statistical tests through a real DuckDB: against scipy.stats, exact enumeration, and the
documented rules (NULL pairs, small samples, GROUP BY, threads, row order, bad input).

Expected values: ``scipy.stats.ttest_rel`` and ``scipy.stats.wilcoxon`` (default options,
scipy 1.17) to 1e-9; randomization p-values against the exact p-value from all 2^n sign flips
(n <= 16), within Monte Carlo error; bootstrap intervals against
``scipy.stats.bootstrap(method="percentile")`` within Monte Carlo error; hand calculations written
out in the tests.
"""

from __future__ import annotations

import math
import warnings

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

import duckrank

TRIALS = 10_000


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckrank.connect()
    yield connection
    connection.close()


def load(con: duckdb.DuckDBPyConnection, name: str, cases: list[tuple[np.ndarray, np.ndarray]]
         ) -> None:
    """A table ``name(case_id, x, y)`` with one group per case; NaN in the arrays become NULL
    (a case of NULL pairs only is a group with n = 0)."""
    ids = np.concatenate([np.full(len(x), i) for i, (x, _) in enumerate(cases)])
    xs = np.concatenate([x for x, _ in cases]).astype(np.float64)
    ys = np.concatenate([y for _, y in cases]).astype(np.float64)
    table = pa.table({
        "case_id": pa.array(ids, pa.int64()),
        "x": pa.array(xs, mask=np.isnan(xs)),
        "y": pa.array(ys, mask=np.isnan(ys)),
    })
    con.register(f"{name}_arrow", table)
    con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM {name}_arrow")


def by_case(con: duckdb.DuckDBPyConnection, call: str, table: str) -> list[dict]:
    rows = con.execute(
        f"SELECT case_id, {call} FROM {table} GROUP BY case_id ORDER BY case_id"
    ).fetchall()
    return [row[1] for row in rows]


def pairs(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = ~np.isnan(x) & ~np.isnan(y)
    return x[keep], y[keep]


def same(ours: float | None, expected: float, rel: float = 1e-9) -> bool:
    """NULL where scipy gives nan; otherwise equal to ``rel`` (exactly for infinities)."""
    if expected is None or math.isnan(expected):
        return ours is None
    return ours is not None and math.isclose(ours, expected, rel_tol=rel, abs_tol=0.0)


def _metric_like(rng: np.random.Generator, n: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    if kind == "continuous":
        x = rng.random(n)
        return x, x + rng.normal(0.02, 0.1, n)
    if kind == "discrete":  # metric values with few levels: ties and zero differences
        x = rng.integers(0, 5, n) / 4
        return x, np.clip(x + rng.integers(-1, 2, n) / 4, 0, 1)
    x = rng.random(n)  # with NULLs on either side
    y = x + rng.normal(-0.01, 0.2, n)
    x[rng.random(n) < 0.1] = np.nan
    y[rng.random(n) < 0.1] = np.nan
    return x, y


def _cases(seed: int, sizes: tuple[int, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [_metric_like(rng, n, kind) for n in sizes
            for kind in ("continuous", "discrete", "nulls")]


# --- paired_ttest -------------------------------------------------------------------------------

def test_paired_ttest_equals_scipy_ttest_rel(con: duckdb.DuckDBPyConnection) -> None:
    cases = _cases(1, (2, 3, 4, 5, 10, 30, 50, 51, 200, 1000, 20000))
    load(con, "t_cases", cases)
    for (x, y), got in zip(cases, by_case(con, "paired_ttest(x, y)", "t_cases"), strict=True):
        x, y = pairs(x, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = stats.ttest_rel(x, y)
        assert got["n"] == len(x)
        assert same(got["statistic"], expected.statistic), (len(x), got, expected)
        assert same(got["p_value"], expected.pvalue), (len(x), got, expected)
        assert same(got["mean_x"], np.mean(x), 1e-12) and same(got["mean_y"], np.mean(y), 1e-12)
        assert same(got["mean_diff"], np.mean(x - y), 1e-12)


def test_paired_ttest_small_and_degenerate_samples(con: duckdb.DuckDBPyConnection) -> None:
    cases = [
        (np.array([np.nan]), np.array([1.0])),  # n = 0 (a group of NULL pairs): all NULL
        (np.array([0.75]), np.array([0.25])),  # n = 1: means, but no variance
        (np.array([0.5, 0.25, 1.0]), np.array([0.5, 0.25, 1.0])),  # all differences 0: 0/0
        (np.array([1.0, np.nan, 0.25]), np.array([0.5, 2.0, 0.0])),  # NULL pair skipped
        (np.array([1.0, float("nan"), 0.25]), np.array([np.nan, np.nan, 0.0])),  # one pair left
    ]
    load(con, "t_small", cases)
    got = by_case(con, "paired_ttest(x, y)", "t_small")
    null = {"statistic": None, "p_value": None}
    assert got[0] == {"n": 0, "mean_x": None, "mean_y": None, "mean_diff": None, **null}
    assert got[1] == {"n": 1, "mean_x": 0.75, "mean_y": 0.25, "mean_diff": 0.5, **null}
    assert got[2] | {"mean_x": 0} == {"n": 3, "mean_x": 0, "mean_y": 0.5833333333333334,
                                      "mean_diff": 0.0, **null}
    # Pairs (1, 0.5), (0.25, 0): d = 0.5, 0.25; mean 0.375, sd = 0.1767767, t = 3, df = 1,
    # p = 1 - 2 atan(3) / pi = 0.2048327646991335.
    assert got[3]["n"] == 2 and got[3]["statistic"] == pytest.approx(3.0, rel=1e-12)
    assert got[3]["p_value"] == pytest.approx(1 - 2 * math.atan(3) / math.pi, rel=1e-12)
    assert got[4]["n"] == 1 and got[4]["statistic"] is None


@pytest.mark.parametrize("d", [[0.5, 0.5, 0.5], [1.0, 1.0, 1.0 + 2.0**-30]])
def test_paired_ttest_refuses_differences_it_cannot_tell_from_constant(
    con: duckdb.DuckDBPyConnection, d: list[float]
) -> None:
    """One-pass sums give SS = 0 for both: exactly for all 0.5 (scipy: t = inf), by cancellation
    for [1, 1, 1 + 2^-30] (scipy: t = 3.22e9). They cannot be told apart from the sums, so both
    are an error rather than t = inf for the second."""
    load(con, "t_constant", [(np.array(d), np.zeros(3))])
    with pytest.raises(duckdb.Error, match="too nearly constant"):
        con.execute("SELECT paired_ttest(x, y) FROM t_constant").fetchall()


@pytest.mark.parametrize(("x", "y"), [
    # Differences 1 + k * 1e-13, k = 0..9: their sum of squared deviations (8e-25) is far below
    # the rounding bound of the one-pass sums (3 n u sum d^2 = 3e-14).
    (1 + np.arange(10) * 1e-13, np.zeros(10)),
    # All differences 0.1 - 0 = 0.1 (not exact in binary, so the sums do not cancel exactly;
    # scipy's two-pass variance gives t = -1.02e16 here, from its own rounding).
    (np.zeros(3), np.full(3, 0.1)),
])
def test_paired_ttest_refuses_an_imprecise_variance(con: duckdb.DuckDBPyConnection, x: np.ndarray,
                                                    y: np.ndarray) -> None:
    # An error with the values and the alternative, not a t with fewer than 6 exact digits.
    load(con, "t_flat", [(x, y)])
    with pytest.raises(duckdb.Error, match=r"paired_ttest: the differences x - y are too nearly "
                                           rf"constant .* over {len(x)} pairs\); compute t as "
                                           r"avg\(x - y\) / stddev_samp"):
        con.execute("SELECT paired_ttest(x, y) FROM t_flat").fetchall()


# --- wilcoxon ---------------------------------------------------------------------------------

def _wilcoxon_cases() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(2)
    cases = []
    for n in (*range(1, 17), 20, 30, 49, 50, 51, 52, 80, 300):
        cases.append((rng.integers(-3, 4, n) / 4, np.zeros(n)))  # ties and zeros
        cases.append((rng.integers(1, 4, n) * rng.choice([-1, 1], n) / 8, np.zeros(n)))  # ties
        cases.append((rng.normal(0.1, 1, n), rng.normal(0, 1, n)))  # neither
        cases.append((rng.normal(0.3, 1, n).round(1), np.zeros(n)))  # a few zeros and ties
    cases += [(np.zeros(n), np.zeros(n)) for n in (5, 20, 60)]
    cases += [(np.array([np.nan]), np.array([1.0])), (np.array([2.0]), np.array([1.0]))]
    return cases


def test_wilcoxon_equals_scipy_with_its_default_options(con: duckdb.DuckDBPyConnection) -> None:
    # n <= 13 with ties or zeros (scipy: permutation test over all 2^n flips), n <= 50 without
    # (exact), 13 < n <= 50 with ties or zeros and n > 50 (normal approximation), all zeros,
    # n = 0 and 1.
    cases = _wilcoxon_cases()
    load(con, "w_cases", cases)
    for (x, y), got in zip(cases, by_case(con, "wilcoxon(x, y)", "w_cases"), strict=True):
        x, y = pairs(x, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = stats.wilcoxon(x, y)
        assert got["n"] == len(x)
        assert same(got["statistic"], expected.statistic), (x - y, got, expected)
        assert same(got["p_value"], expected.pvalue), (x - y, got, expected)


def test_wilcoxon_hand_calculation(con: duckdb.DuckDBPyConnection) -> None:
    # d = 0.5, -0.25, 0, 1, 1: the zero is dropped; |d| ranks 2, 1, 3.5, 3.5; r+ = 9, r- = 1.
    # n = 5 <= 13 with a zero: exact over the 2^4 sign patterns of ranks (1, 2, 3.5, 3.5):
    # P(R+ <= 1) = #{0, 1} = 2 / 16, so p = 2 * 2 / 16 = 0.25.
    x, y = np.array([1.5, 0.75, 2.0, 3.0, 1.0]), np.array([1.0, 1.0, 2.0, 2.0, 0.0])
    load(con, "w_hand", [(x, y)])
    assert con.execute("SELECT wilcoxon(x, y) FROM w_hand").fetchall()[0][0] == {
        "n": 5, "statistic": 1.0, "p_value": 0.25,
    }


# --- randomization_test -----------------------------------------------------------------------

def exact_sign_flip_p(d: np.ndarray) -> float:
    """The exact two-sided p-value over all 2^n equally likely sign flips (d exact in binary:
    every sum below is exact)."""
    n = len(d)
    signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
    sums = signs @ d
    return float(np.mean(np.abs(sums) >= abs(d.sum())))


def test_randomization_p_values_against_all_sign_flips(con: duckdb.DuckDBPyConnection) -> None:
    # p = (count + 1) / (trials + 1) estimates p_exact: E p = (T p_exact + 1) / (T + 1), standard
    # error sqrt(p_exact (1 - p_exact) / T) T / (T + 1). Allowed: 5 standard errors (a false
    # failure has probability 6e-7 per case) plus rounding.
    rng = np.random.default_rng(3)
    cases = []
    for n in range(2, 17):
        cases.append((rng.integers(-4, 5, n) / 8, np.zeros(n)))  # ties and zeros, exact sums
        cases.append((rng.integers(-2, 9, n) / 16, np.zeros(n)))  # mostly positive: small p
        cases.append((np.full(n, 0.25), np.zeros(n)))  # p_exact = 2 / 2^n
    cases.append((np.zeros(6), np.zeros(6)))  # every flip ties the observed 0: p = 1 exactly
    load(con, "r_cases", cases)
    got = by_case(con, "randomization_test(x, y)", "r_cases")
    for (x, y), result in zip(cases, got, strict=True):
        d = x - y
        exact = exact_sign_flip_p(d)
        expected = (TRIALS * exact + 1) / (TRIALS + 1)
        error = math.sqrt(exact * (1 - exact) / TRIALS) * TRIALS / (TRIALS + 1)
        assert abs(result["p_value"] - expected) <= 5 * error + 1e-12, (d, exact, result)
        assert result["n"] == len(d) and result["mean_diff"] == pytest.approx(d.mean(), abs=1e-15)
    assert got[-1]["p_value"] == 1.0


def test_randomization_continuous_values_against_all_sign_flips(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # Values with no ties: float rounding in the sums never decides a comparison.
    rng = np.random.default_rng(4)
    cases = [(rng.normal(0.3, 1, n), np.zeros(n)) for n in (3, 8, 12, 16, 16)]
    load(con, "r_cont", cases)
    for (x, _), result in zip(cases, by_case(con, "randomization_test(x, y)", "r_cont"),
                              strict=True):
        exact = exact_sign_flip_p(x)
        error = math.sqrt(exact * (1 - exact) / TRIALS)
        assert abs(result["p_value"] - (TRIALS * exact + 1) / (TRIALS + 1)) <= 5 * error + 1e-12


def test_randomization_small_samples(con: duckdb.DuckDBPyConnection) -> None:
    load(con, "r_small", [(np.array([np.nan]), np.array([0.0])), (np.array([0.5]), np.array([0.0])),
                          (np.array([1.0, np.nan]), np.array([0.0, 1.0]))])
    assert by_case(con, "randomization_test(x, y, trials := 99)", "r_small") == [
        {"n": 0, "mean_diff": None, "p_value": None},
        {"n": 1, "mean_diff": 0.5, "p_value": None},
        {"n": 1, "mean_diff": 1.0, "p_value": None},
    ]


def test_randomization_trials_and_seed(con: duckdb.DuckDBPyConnection) -> None:
    load(con, "r_seed", [(np.random.default_rng(5).normal(0.1, 1, 40), np.zeros(40))])

    def p_value(trials: int, seed: int) -> float:
        return con.execute(f"SELECT randomization_test(x, y, trials := {trials}, seed := {seed})"
                           ".p_value FROM r_seed").fetchall()[0][0]

    by_seed = [p_value(999, seed) for seed in range(5)]
    assert p_value(999, 0) == by_seed[0]  # the same seed, the same answer
    assert len(set(by_seed)) > 1  # other seeds, other draws
    for trials, value in [(999, v) for v in by_seed] + [(1, p_value(1, 0))]:
        # p = (count + 1) / (trials + 1) with count in 0 .. trials
        assert value * (trials + 1) == pytest.approx(round(value * (trials + 1)))
        assert 1 / (trials + 1) <= value <= 1


def test_options_by_name_or_position(con: duckdb.DuckDBPyConnection) -> None:
    load(con, "opt_case", [(np.arange(30) / 10, np.arange(30) % 7 / 10)])
    assert con.execute(
        "SELECT randomization_test(x, y, 500) = randomization_test(x, y, trials := 500), "
        "randomization_test(x, y, seed := 3, trials := 40) = randomization_test(x, y, 40, 3), "
        "bootstrap_ci(x, 0.9, 300, 2) = bootstrap_ci(x, level := 0.9, trials := 300, seed := 2) "
        "FROM opt_case"
    ).fetchall() == [(True, True, True)]


# --- bootstrap_ci and paired_bootstrap_ci -----------------------------------------------------

def _percentile_tolerance(level: float, standard_error: float) -> float:
    """5 standard errors of the difference of two independent Monte Carlo quantile estimates
    (ours and scipy's, each from TRIALS resamples): the q-quantile's standard error is
    sqrt(q (1 - q) / T) / density at the quantile, the density of the bootstrap means being
    about normal with sd ``standard_error``."""
    q = (1 - level) / 2
    z = stats.norm.ppf(q)
    density = stats.norm.pdf(z) / standard_error
    return 5 * math.sqrt(2) * math.sqrt(q * (1 - q) / TRIALS) / density


@pytest.mark.parametrize("level", [0.9, 0.95])
def test_bootstrap_ci_against_scipy_bootstrap(con: duckdb.DuckDBPyConnection, level: float
                                              ) -> None:
    rng = np.random.default_rng(6)
    cases = [(rng.exponential(0.3, n), np.full(n, np.nan)) for n in (20, 200, 2000)]
    load(con, "b_cases", cases)
    got = by_case(con, f"bootstrap_ci(x, level := {level})", "b_cases")
    for (x, _), result in zip(cases, got, strict=True):
        expected = stats.bootstrap((x,), np.mean, method="percentile", n_resamples=TRIALS,
                                   confidence_level=level, rng=np.random.default_rng(7))
        tolerance = _percentile_tolerance(level, expected.standard_error)
        assert result["n"] == len(x) and result["mean"] == pytest.approx(np.mean(x), rel=1e-12)
        assert abs(result["ci_low"] - expected.confidence_interval.low) <= tolerance
        assert abs(result["ci_high"] - expected.confidence_interval.high) <= tolerance


def test_paired_bootstrap_ci_against_scipy_bootstrap(con: duckdb.DuckDBPyConnection) -> None:
    rng = np.random.default_rng(8)
    cases = [_metric_like(rng, n, "continuous") for n in (30, 500)]
    load(con, "pb_cases", cases)
    for (x, y), result in zip(cases, by_case(con, "paired_bootstrap_ci(x, y)", "pb_cases"),
                              strict=True):
        expected = stats.bootstrap(
            (x, y), lambda a, b, axis: np.mean(a - b, axis=axis), paired=True, vectorized=True,
            method="percentile", n_resamples=TRIALS, rng=np.random.default_rng(9),
        )
        tolerance = _percentile_tolerance(0.95, expected.standard_error)
        assert result["mean"] == pytest.approx(np.mean(x - y), rel=1e-12)
        assert abs(result["ci_low"] - expected.confidence_interval.low) <= tolerance
        assert abs(result["ci_high"] - expected.confidence_interval.high) <= tolerance


def test_bootstrap_small_samples(con: duckdb.DuckDBPyConnection) -> None:
    # Two values 0 and 1: the resample means are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4, so
    # with 10,000 trials the 2.5% and 97.5% quantiles are 0 and 1 (as scipy's interval, which
    # refuses a single value).
    load(con, "b_small", [(np.array([np.nan]), np.array([0.0])), (np.array([0.4]), np.array([0.0])),
                          (np.array([0.0, 1.0]), np.array([0.0, 0.0])),
                          (np.zeros(4), np.zeros(4))])
    assert by_case(con, "bootstrap_ci(x)", "b_small") == [
        {"n": 0, "mean": None, "ci_low": None, "ci_high": None},
        {"n": 1, "mean": 0.4, "ci_low": None, "ci_high": None},
        {"n": 2, "mean": 0.5, "ci_low": 0.0, "ci_high": 1.0},
        {"n": 4, "mean": 0.0, "ci_low": 0.0, "ci_high": 0.0},
    ]
    assert by_case(con, "paired_bootstrap_ci(x, y)", "b_small")[1]["ci_low"] is None


# --- shared rules -----------------------------------------------------------------------------

CALLS = ("paired_ttest(x, y)", "wilcoxon(x, y)", "randomization_test(x, y, trials := 500)",
         "bootstrap_ci(x, trials := 500)", "paired_bootstrap_ci(x, y, trials := 500)",
         "paired_effect_size(x, y, trials := 500)")


@pytest.mark.parametrize("call", CALLS)
def test_group_by_gives_each_group_its_own_answer(con: duckdb.DuckDBPyConnection, call: str
                                                  ) -> None:
    cases = _cases(10, (5, 40, 300))
    load(con, "g_cases", cases)
    grouped = by_case(con, call, "g_cases")
    alone = [con.execute(f"SELECT {call} FROM g_cases WHERE case_id = {i}").fetchall()[0][0]
             for i in range(len(cases))]
    assert grouped == alone


@pytest.mark.parametrize("call", CALLS)
def test_null_pairs_are_skipped(con: duckdb.DuckDBPyConnection, call: str) -> None:
    x, y = _metric_like(np.random.default_rng(12), 200, "nulls")
    load(con, "n_with", [(x, y)])
    keep = ~np.isnan(x) & ~np.isnan(y)
    if call.startswith("bootstrap_ci"):
        keep = ~np.isnan(x)  # one column: only x matters
    load(con, "n_without", [(x[keep], np.where(np.isnan(y), 0.0, y)[keep])])
    with_nulls = con.execute(f"SELECT {call} FROM n_with").fetchall()[0][0]
    assert with_nulls == con.execute(f"SELECT {call} FROM n_without").fetchall()[0][0]
    assert with_nulls["n"] == keep.sum() < 200


@pytest.mark.parametrize("call", CALLS)
def test_nan_makes_the_fields_null(con: duckdb.DuckDBPyConnection, call: str) -> None:
    con.execute("CREATE OR REPLACE TABLE nan_case AS SELECT * FROM (VALUES "
                "(0, 0.5, 0.1), (0, 'NaN'::DOUBLE, 0.2), (0, 0.9, 0.3)) t(case_id, x, y)")
    result = con.execute(f"SELECT {call} FROM nan_case").fetchall()[0][0]
    assert result.pop("n") == 3
    if call.startswith("paired_ttest"):
        # y holds no NaN: its mean is defined, (0.1 + 0.2 + 0.3) / 3 (its own sum, not
        # sum(x) - sum(x - y), which a NaN x or a large x would spoil).
        assert result.pop("mean_y") == pytest.approx(0.2, rel=1e-15)
    assert set(result.values()) == {None}


@pytest.mark.parametrize("column_type", ["INTEGER", "BIGINT", "DECIMAL(10, 2)", "FLOAT"])
def test_numeric_types(con: duckdb.DuckDBPyConnection, column_type: str) -> None:
    # Values exact in every type: the same answers as DOUBLE.
    load(con, "types_double", [(np.array([3.0, 1, 4, 1, 5, 9, 2, 6]), np.arange(8.0))])
    con.execute(f"CREATE OR REPLACE TABLE types_cast AS SELECT case_id, x::{column_type} AS x, "
                f"y::{column_type} AS y FROM types_double")
    for call in CALLS:
        assert con.execute(f"SELECT {call} FROM types_cast").fetchall() == \
            con.execute(f"SELECT {call} FROM types_double").fetchall()


def test_reproducible_across_threads_and_row_orders() -> None:
    # 300,000 rows (several row groups, so DuckDB aggregates in parallel and list() meets the
    # rows in varying order) in 3 groups, stored in two row orders, queried on 1 and on 4
    # threads: the same answers, bit for bit.
    rng = np.random.default_rng(13)
    n = 300_000
    x = rng.integers(0, 11, n) / 10
    y = np.clip(x + rng.integers(-2, 3, n) / 10, 0, 1)
    order = rng.permutation(n)
    query = ("SELECT g, randomization_test(x, y, trials := 300, seed := 5), "
             "bootstrap_ci(x, trials := 200, seed := 5), "
             "paired_bootstrap_ci(x, y, trials := 200, seed := 9), wilcoxon(x, y) "
             "FROM {table} GROUP BY g ORDER BY g")
    con = duckrank.connect()
    con.register("ordered", pa.table({"g": np.arange(n) % 3, "x": x, "y": y}))
    con.register("shuffled", pa.table({"g": (np.arange(n) % 3)[order], "x": x[order],
                                       "y": y[order]}))
    results = []
    for threads in (1, 4):
        con.execute(f"SET threads = {threads}")
        for table in ("ordered", "shuffled"):
            con.execute(f"CREATE OR REPLACE TABLE t_{table} AS SELECT * FROM {table}")
            results.append(con.execute(query.format(table=f"t_{table}")).fetchall())
    first_values = {
        tuple(con.execute(f"SELECT list(x)[1:20] FROM t_{t} WHERE g = 0").fetchall()[0][0])
        for t in ("ordered", "shuffled")
    }
    con.close()
    assert len(first_values) == 2  # list() really met the rows in different orders
    assert all(r == results[0] for r in results[1:])


@pytest.mark.parametrize("call", [
    "paired_ttest(s, s)", "wilcoxon(s, x)", "randomization_test(x, s)", "bootstrap_ci(s)",
    "paired_bootstrap_ci(b, x)",
])
def test_non_numeric_values_are_refused_by_the_binder(con: duckdb.DuckDBPyConnection, call: str
                                                      ) -> None:
    # DuckDB's own error (the macro's parameters are DOUBLE), which names the function.
    name = call.split("(")[0]
    with pytest.raises(duckdb.BinderException, match=rf"Macro {name}\(\) does not support"):
        con.execute(f"SELECT {call} FROM (VALUES ('a', 1.0, true)) t(s, x, b)").fetchall()


@pytest.mark.parametrize(("call", "message"), [
    ("randomization_test(x, y, trials := 0)", "randomization_test: trials must be a positive "
     "integer, got '0'"),
    ("randomization_test(x, y, trials := -3)", "randomization_test: trials must be a positive "
     "integer, got '-3'"),
    ("randomization_test(x, y, trials := 2.5)", "randomization_test: trials must be a positive "
     "integer, got '2.5'"),
    ("randomization_test(x, y, trials := 'many')", "randomization_test: trials must be a "
     "positive integer, got 'many'"),
    ("randomization_test(x, y, trials := NULL)", "randomization_test: trials must be a positive "
     "integer, got NULL"),
    ("randomization_test(x, y, seed := -1)", "randomization_test: seed must be a non-negative "
     "integer, got '-1'"),
    ("bootstrap_ci(x, level := 0)", "bootstrap_ci: level must be a number in (0, 1), got '0'"),
    ("bootstrap_ci(x, level := 1)", "bootstrap_ci: level must be a number in (0, 1), got '1'"),
    ("bootstrap_ci(x, level := 95)", "bootstrap_ci: level must be a number in (0, 1), got '95'"),
    ("bootstrap_ci(x, trials := 1e4)", "bootstrap_ci: trials must be a positive integer, got "
     "'10000.0'"),
    ("paired_bootstrap_ci(x, y, level := -0.5)", "paired_bootstrap_ci: level must be a number "
     "in (0, 1), got '-0.5'"),
])
def test_bad_options_name_function_option_and_value(con: duckdb.DuckDBPyConnection, call: str,
                                                    message: str) -> None:
    with pytest.raises(duckdb.Error) as error:
        con.execute(f"SELECT {call} FROM (VALUES (1.0, 2.0), (3.0, 1.0)) t(x, y)").fetchall()
    assert message in str(error.value)


def test_registration_is_idempotent_per_cursor_and_stores_nothing(tmp_path) -> None:
    path = str(tmp_path / "stats.duckdb")
    con = duckrank.connect(path)
    duckrank.register(con)  # again: no "already exists"
    cursor = con.cursor()
    with pytest.raises(duckdb.CatalogException):  # TEMP macros: private to the connection
        cursor.execute("SELECT paired_ttest(1, 2)").fetchall()
    duckrank.register(cursor)
    assert cursor.execute("SELECT paired_ttest(1, 2).n").fetchall() == [(1,)]
    con.close()
    plain = duckdb.connect(path)  # the file holds no macro that calls Python
    stored = plain.execute("SELECT function_name FROM duckdb_functions() WHERE function_name IN "
                           "('paired_ttest', 'wilcoxon', 'randomization_test', 'bootstrap_ci', "
                           "'paired_bootstrap_ci')").fetchall()
    plain.close()
    assert stored == []


def test_paired_ttest_mean_y_when_x_is_much_larger(con: duckdb.DuckDBPyConnection) -> None:
    """x = 1e9 (i mod 3), y = 1e-7 (i + 1) for i = 0..9: mean_y is avg(y) = 5.5e-7 (by hand:
    1e-7 x 55 / 10); sum(x) - sum(x - y) would cancel to 5.72e-7."""
    i = np.arange(10.0)
    load(con, "t_scales", [(1e9 * (i % 3), 1e-7 * (i + 1))])
    got = con.execute("SELECT paired_ttest(x, y).mean_y FROM t_scales").fetchall()[0][0]
    assert got == pytest.approx(5.5e-7, rel=1e-12)
