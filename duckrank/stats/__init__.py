"""Statistical tests over paired per-user values: one ``record.StatTest`` per test (its SQL
signature, output fields, null hypothesis, p-value convention, when to prefer it, source) with its
numpy math (``t_test``, ``wilcoxon``, ``resampling``, ``anova``: ANOVA and Tukey's HSD over
many systems; null distributions in ``distributions``; the multiple-comparison corrections in
``corrections``),
and, for the tests the comparison report offers, how it runs them (``record.InReport``).
Pure numpy: the DuckDB wiring is ``duckrank.engines.stats``, the docs
``duckrank.render.compare``, the report ``duckrank.reports.compare``."""

from duckrank.stats.anova import ANOVA_ONEWAY, ANOVA_TWOWAY, TUKEY_HSD, TUKEY_HSD_BLOCKED
from duckrank.stats.effect import PAIRED_EFFECT_SIZE
from duckrank.stats.record import StatTest
from duckrank.stats.resampling import BOOTSTRAP_CI, PAIRED_BOOTSTRAP_CI, RANDOMIZATION_TEST
from duckrank.stats.t_test import PAIRED_TTEST
from duckrank.stats.wilcoxon import WILCOXON

TESTS: tuple[StatTest, ...] = (
    PAIRED_TTEST, WILCOXON, RANDOMIZATION_TEST, BOOTSTRAP_CI, PAIRED_BOOTSTRAP_CI,
    PAIRED_EFFECT_SIZE, ANOVA_ONEWAY, ANOVA_TWOWAY, TUKEY_HSD, TUKEY_HSD_BLOCKED,
)

# The tests the comparison report runs (``duckrank.compare``'s ``test=``, ``duckrank compare
# --test``): those whose record says how (``StatTest.report``), by their report alias, in the
# aliases' order.
_REPORTED = [(t.report.alias, t) for t in TESTS if t.report is not None]
REPORT_TESTS: dict[str, StatTest] = dict(sorted(_REPORTED, key=lambda pair: pair[0]))
if len(REPORT_TESTS) < len(_REPORTED):
    raise ValueError("two statistical tests have the same report alias")


def by_name(name: str) -> StatTest:
    """A test by its SQL name (case-insensitive)."""
    for test in TESTS:
        if test.name == name.lower():
            return test
    known = ", ".join(t.name for t in TESTS)
    raise KeyError(f"unknown statistical test {name!r}; known tests: {known}")
