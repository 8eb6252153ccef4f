"""The statistical tests that can be plain SQL, for DuckDB without Python (issue 30).

Only Student's paired t-test can: its statistic is SQL aggregates, and its p-value, the
regularised incomplete beta function I_x(df/2, 1/2), is a continued fraction that SQL can
evaluate with ``list_reduce`` over a fixed number of steps (``STEPS``; modified Lentz's method,
Press et al., *Numerical Recipes*, 5.2, so nothing overflows), the same fractions and the same
choice between them as ``duckrank.stats.distributions.student_t_two_sided`` (Abramowitz and
Stegun 26.5.8 and 26.5.9), with log1p written out (Goldberg 1991's ``ln(1 + u) u / ((1 + u) -
1)``: DuckDB has no log1p) and log B(a, 1/2) from lgamma below 10 and Stirling's series above.
Equal to ``scipy.stats.ttest_rel`` to 1e-9 over df = 1 .. 10^7
(tests/stats/test_stats_sql_plain.py), in DuckDB 1.4 and 2.0. Every literal of the fraction's
state is cast to DOUBLE: DuckDB 1.4 reads ``1.0`` as DECIMAL(2, 1), and a state of DECIMALs
keeps no digits.

Why the others cannot (docs/compare.md, "What is not plain SQL"): ``wilcoxon`` needs the exact
null distribution of its rank sums (a dynamic program) and ranks with ties inside an aggregate;
the resampling tests need thousands of seeded random resamples per group, reproducible whatever
DuckDB's threads; ANOVA the F distribution and Tukey's test the studentized range, which have no
short continued fraction.

``MACROS`` are the statements; ``duckrank.render.macros.render_sql_file`` adds them to
sql/duckrank.sql (not to what a connection registers: it has the Python aggregate of the same
name). The aggregate differs from the Python one in two
documented ways: its variance is DuckDB's ``var_samp`` (Welford), so nearly constant differences
keep their digits instead of raising an error, and differences that are all equal (not only all
0) give a NULL statistic and p-value.
"""

from __future__ import annotations

STEPS = 300  # the fractions converge within about 100 steps for any t and df (distributions)

# The state of a continued fraction 1 + c_1 / (1 + c_2 / (1 + ...)) by modified Lentz: value
# f_j = f_{j-1} C_j D_j, C_j = 1 + c_j / C_{j-1}, D_j = 1 / (1 + c_j D_{j-1}).
_STATE = "{{'step': {step}, 'value': {value}, 'upper': {upper}, 'lower': {lower}}}"
_START = _STATE.format(step="0::DOUBLE", value="1::DOUBLE", upper="1::DOUBLE",
                       lower="0::DOUBLE")
_STEPS = (f"list_transform(range({STEPS}), lambda i: "
          + _STATE.format(step="i::DOUBLE", value="0::DOUBLE", upper="0::DOUBLE",
                          lower="0::DOUBLE") + ")")
_M = "floor((acc.step + 1) / 2)"  # m = j // 2 for the step j = acc.step + 1
_ODD = "(acc.step + 1)::BIGINT % 2 = 1"


def _fraction(name: str, parameters: str, odd: str, even: str) -> str:
    """A macro evaluating the fraction whose c_j is ``odd`` or ``even`` (over m and the macro's
    parameters), ``STEPS`` steps."""
    return (f"CREATE OR REPLACE MACRO {name}({parameters}) AS list_reduce({_STEPS},\n"
            f"    lambda acc, e: duckrank_lentz(acc, CASE WHEN {_ODD}\n"
            f"        THEN {odd.format(m=_M)}\n        ELSE {even.format(m=_M)} END),\n"
            f"    {_START}).value")


MACROS: tuple[str, ...] = (
    "CREATE OR REPLACE MACRO duckrank_log1p(u) AS CASE WHEN 1 + u = 1 THEN u\n"
    "    ELSE ln(1 + u) * u / ((1 + u) - 1) END",
    "CREATE OR REPLACE MACRO duckrank_lentz(acc, coefficient) AS "
    + _STATE.format(step="acc.step + 1",
                    value="acc.value * (1 + coefficient / acc.upper) "
                          "/ (1 + coefficient * acc.lower)",
                    upper="1 + coefficient / acc.upper",
                    lower="1 / (1 + coefficient * acc.lower)"),
    # lgamma(z) - ((z - 1/2) ln z - z + ln(2 pi) / 2), Stirling's series (z >= 10).
    "CREATE OR REPLACE MACRO duckrank_stirling(z) AS (1 / z) * (1 / 12 - (1 / z ^ 2) * (\n"
    "    1 / 360 - (1 / z ^ 2) * (1 / 1260 - (1 / z ^ 2) * (1 / 1680 - (1 / z ^ 2) / 1188))))",
    "CREATE OR REPLACE MACRO duckrank_log_beta_half(a) AS CASE WHEN a < 10\n"
    "    THEN lgamma(a) + lgamma(0.5) - lgamma(a + 0.5)\n"
    "    ELSE 0.5 * ln(pi()) - (a - 0.5) * duckrank_log1p(0.5 / a) - 0.5 * ln(a + 0.5) + 0.5\n"
    "         + duckrank_stirling(a) - duckrank_stirling(a + 0.5) END",
    # I_x(a, 1/2) x^-a (1 - x)^(1/2) a B(a, 1/2) = 1 / this, A&S 26.5.9 in z = x / (1 - x).
    _fraction("duckrank_beta_fraction_large_x", "a, z",
              "-(a + {m}) * (0.5 - {m} - 1) / ((a + 2 * {m}) * (a + 2 * {m} + 1)) * z",
              "{m} * (a - 0.5 + {m}) / ((a + 2 * {m} - 1) * (a + 2 * {m})) * z"),
    # I_y(1/2, b) y^-(1/2) (1 - y)^-b B(1/2, b) / 2 = 1 / this, A&S 26.5.8.
    _fraction("duckrank_beta_fraction_small_x", "b, y",
              "-(0.5 + {m}) * (0.5 + b + {m}) * y / ((0.5 + 2 * {m}) * (0.5 + 2 * {m} + 1))",
              "{m} * (b - {m}) * y / ((0.5 + 2 * {m} - 1) * (0.5 + 2 * {m}))"),
    # x^a (1 - x)^(1/2) / B(a, 1/2) at x = df / (df + t^2), a = df / 2.
    "CREATE OR REPLACE MACRO duckrank_t_front(t, df) AS exp(\n"
    "    -df / 2 * duckrank_log1p(t * t / df) + 0.5 * ln(t * t / (df + t * t))\n"
    "    - duckrank_log_beta_half(df / 2))",
    # P(|T| >= |t|) for Student's t with df degrees of freedom: I_x(df/2, 1/2) at
    # x = df / (df + t^2), directly (26.5.9) beyond |t| = 2 or below the usual switch point,
    # else 1 - I_y(1/2, df/2) (26.5.8), as duckrank.stats.distributions.
    "CREATE OR REPLACE MACRO duckrank_t_two_sided(t, df) AS CASE\n"
    "    WHEN t IS NULL OR df IS NULL OR isnan(t) OR isnan(df) OR df <= 0 THEN NULL\n"
    "    WHEN isinf(t) THEN 0.0\n"
    "    WHEN t * t > 4 OR df / (df + t * t) < (df / 2 + 1) / (df / 2 + 2.5)\n"
    "    THEN duckrank_t_front(t, df) / (t * t / (df + t * t) * df / 2)\n"
    "         / duckrank_beta_fraction_large_x(df / 2, df / (t * t))\n"
    "    ELSE 1 - duckrank_t_front(t, df) / 0.5\n"
    "         / duckrank_beta_fraction_small_x(df / 2, t * t / (df + t * t)) END",
    # The aggregate: a macro of aggregates is an aggregate (GROUP BY works).
    "CREATE OR REPLACE MACRO duckrank_paired_t(d) AS CASE WHEN count(d) >= 2\n"
    "    AND var_samp(d) > 0 AND isfinite(var_samp(d)) AND isfinite(avg(d))\n"
    "    THEN avg(d) / sqrt(var_samp(d) / count(d)) END",
    "CREATE OR REPLACE MACRO paired_ttest(x, y) AS struct_pack(\n"
    "    n := count(x - y),\n"
    "    mean_x := avg(x) FILTER (WHERE y IS NOT NULL),\n"
    "    mean_y := avg(y) FILTER (WHERE x IS NOT NULL),\n"
    "    mean_diff := avg(x - y),\n"
    "    statistic := duckrank_paired_t(x - y),\n"
    "    p_value := duckrank_t_two_sided(duckrank_paired_t(x - y), count(x - y) - 1))",
)
