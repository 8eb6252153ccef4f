"""The null distributions of duckrank.stats, without DuckDB.

Expected values: mpmath at 50 digits (the regularized incomplete beta function, log B, erfc),
plain enumeration of every sign pattern for the signed-rank counts, and hand-checked option
texts. mpmath rather than scipy for the t distribution: scipy's own t.sf is off by 3e-9 at
t = 1e-8, df = 1 (it returns 0.99999999051; 1 - 2 atan(1e-8) / pi = 0.99999999363).
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import mpmath
import numpy as np
import pytest

from duckrank.options import NON_NEGATIVE_INTEGER, POSITIVE_INTEGER, PROPORTION
from duckrank.stats.distributions import (
    log_beta_half,
    normal_two_sided,
    signed_rank_tails,
    student_t_two_sided,
)
from duckrank.stats.record import Option

mpmath.mp.dps = 50


def _t_reference(t: float, df: float) -> float:
    """P(|T| >= |t|) = I_x(df/2, 1/2), x = df / (df + t^2), integrated on the side that is
    small (so that mpmath does not subtract from 1)."""
    a, t2 = mpmath.mpf(df) / 2, mpmath.mpf(t) ** 2
    if t2 > 1:
        return float(mpmath.betainc(a, 0.5, 0, df / (df + t2), regularized=True))
    return float(mpmath.betainc(0.5, a, t2 / (df + t2), 1, regularized=True))


DFS = (1, 2, 3, 4, 5, 8, 13, 30, 99, 1000, 12345, 999_999)
TS = (0.0, 1e-8, 0.3, 1.0, 1.7, 1.99, 2.0, 2.01, 3.0, 4.0, 6.0, 10.0, 25.0)


def test_student_t_matches_mpmath_over_df_and_t() -> None:
    # Both sides of every switch in student_t_two_sided: |t| = 2, the point (a + 1) / (a + 2.5),
    # small and very large df, and the far tail (p down to about 1e-130).
    t, df = (np.array(v, dtype=np.float64).ravel() for v in np.meshgrid(TS, DFS))
    ours = student_t_two_sided(t, df)
    expected = np.array([_t_reference(*pair) for pair in zip(t, df, strict=True)])
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=0)


def test_student_t_random_points() -> None:
    rng = np.random.default_rng(11)
    df = np.floor(10 ** rng.uniform(0, 6, 60))
    t = rng.normal(0, 4, 60)
    expected = [_t_reference(*pair) for pair in zip(t, df, strict=True)]
    np.testing.assert_allclose(student_t_two_sided(t, df), expected, rtol=1e-12, atol=0)


def test_student_t_same_one_by_one_and_all_at_once() -> None:
    # Up to 16 elements the continued fraction runs on Python floats, beyond on numpy arrays:
    # the same recurrence, so the same values (an element may take a few more steps when run
    # with slower ones, hence not bit for bit).
    rng = np.random.default_rng(12)
    t, df = rng.normal(0, 5, 200), np.floor(10 ** rng.uniform(0, 7, 200))
    one_by_one = [student_t_two_sided(t[i : i + 1], df[i : i + 1])[0] for i in range(200)]
    np.testing.assert_allclose(student_t_two_sided(t, df), one_by_one, rtol=1e-14, atol=0)


def test_student_t_edges() -> None:
    # t = +-inf: p = 0; t = 0: p = 1; NaN in, NaN out; df = 1 is the Cauchy distribution,
    # P(|T| >= 1) = 1 - 2 atan(1) / pi = 1/2.
    p = student_t_two_sided(np.array([np.inf, -np.inf, 0.0, np.nan, 1.0, 1.0]),
                            np.array([3.0, 3.0, 3.0, 3.0, np.nan, 1.0]))
    assert p[:3].tolist() == [0.0, 0.0, 1.0]
    assert np.isnan(p[3]) and np.isnan(p[4])
    assert p[5] == pytest.approx(0.5, rel=1e-15)


@pytest.mark.parametrize("a", [0.5, 1.0, 3.3, 9.99, 10.0, 10.01, 57.5, 1e3, 5e5, 1e7])
def test_log_beta_half_matches_mpmath(a: float) -> None:
    # Both sides of the switch at a = 10 (lgamma below, Stirling's series above).
    expected = float(mpmath.log(mpmath.beta(a, 0.5)))
    assert log_beta_half(np.array([a]))[0] == pytest.approx(expected, abs=1e-14)


def test_normal_two_sided_matches_mpmath() -> None:
    z = np.array([0.0, 0.5, -1.96, 5.0, 10.0, 30.0])
    expected = [float(mpmath.erfc(abs(v) / mpmath.sqrt(2))) for v in z]
    # math.erfc is good to about 1e-13 relative in the far tail (z = 30: p = 1e-197).
    np.testing.assert_allclose(normal_two_sided(z), expected, rtol=1e-12)


@pytest.mark.parametrize("doubled", [
    [], [2], [2, 4, 6], [3, 3, 6, 9, 9, 9], [2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24],
    [5, 5, 5, 5, 10, 13, 13, 16, 18, 21],
])
def test_signed_rank_tails_count_every_sign_pattern(doubled: list[int]) -> None:
    # Doubled average ranks (ties: 3 3 for ranks 1.5 1.5, ...): every observed sum compared with
    # the plain enumeration of the 2^m patterns.
    sums = np.array([sum(r for r, s in zip(doubled, signs, strict=True) if s)
                     for signs in itertools.product((0, 1), repeat=len(doubled))])
    for observed in range(sum(doubled) + 1):
        expected = (int((sums <= observed).sum()), int((sums >= observed).sum()))
        assert signed_rank_tails(np.array(doubled, dtype=np.int64), observed) == expected


def test_signed_rank_tails_stay_exact_at_50_ranks() -> None:
    # The largest exact case scipy uses: n = 50, no ties. 2^50 patterns in all; by symmetry
    # P(R+ <= 637) = P(R+ >= 638) and the two tails at the centre 637.5 cover every pattern.
    doubled = np.arange(2, 102, 2)
    below, _ = signed_rank_tails(doubled, 2 * 637)
    _, above = signed_rank_tails(doubled, 2 * 638)
    assert below == above and below + above == 2**50


_KINDS = {"positive integer": POSITIVE_INTEGER, "non-negative integer": NON_NEGATIVE_INTEGER,
          "number in (0, 1)": PROPORTION}


@pytest.mark.parametrize(("kind", "text", "value"), [
    ("positive integer", "10000", 10000),
    ("positive integer", " +7 ", 7),
    ("non-negative integer", "0", 0),
    ("non-negative integer", "18446744073709551615", 2**64 - 1),
    ("number in (0, 1)", "0.95", 0.95),
    ("number in (0, 1)", "1e-3", 0.001),
])
def test_option_values(kind: str, text: str, value: float) -> None:
    assert Option("trials", 1, "", bounds=_KINDS[kind]).parse("f", text) == value


@pytest.mark.parametrize(("kind", "text"), [
    ("positive integer", "0"), ("positive integer", "-5"), ("positive integer", "2.5"),
    ("positive integer", "10000.0"), ("positive integer", "abc"), ("positive integer", None),
    ("non-negative integer", "-1"), ("number in (0, 1)", "0"), ("number in (0, 1)", "1"),
    ("number in (0, 1)", "1.5"), ("number in (0, 1)", "nan"), ("number in (0, 1)", "inf"),
    ("number in (0, 1)", "high"),
])
def test_option_errors_name_function_option_and_value(kind: str, text: str | None) -> None:
    got = "NULL" if text is None else repr(text)
    with pytest.raises(ValueError) as error:
        Option("level", 1, "", bounds=_KINDS[kind]).parse("f", text)
    assert str(error.value) == f"f: level must be a {kind}, got {got}"


def test_the_math_imports_no_scipy() -> None:
    # scipy is a test dependency only (core: duckdb, pyarrow, numpy): no module imports it when
    # it is imported. Issue 30: the distributions duckrank does not implement (the studentized
    # range, F with very many degrees of freedom, noncentral t and F for planning) import it
    # inside the one function that needs it, which says to install it when it is absent
    # (duckrank.stats.anova, duckrank.stats.planning); every other module imports none.
    package = Path(__file__).resolve().parents[2] / "duckrank"
    lazy = {"anova.py", "planning.py"}
    for path in [*(package / "stats").glob("*.py"), package / "engines" / "stats.py"]:
        tree = ast.parse(path.read_text())
        nodes = tree.body if path.name in lazy else list(ast.walk(tree))
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
                assert not any(n.split(".")[0] == "scipy" for n in names), path
