"""Statistical tests over paired per-user values: one ``record.StatTest`` per test (its SQL
signature, output fields, null hypothesis, p-value convention, when to prefer it, source) with its
numpy math (``t_test``, ``wilcoxon``, ``resampling``; null distributions in ``distributions``).
Pure numpy: the DuckDB wiring is ``duckrank.engines.stats``, the docs
``duckrank.render.compare``."""

from duckrank.stats.record import StatTest
from duckrank.stats.resampling import BOOTSTRAP_CI, PAIRED_BOOTSTRAP_CI, RANDOMIZATION_TEST
from duckrank.stats.t_test import PAIRED_TTEST
from duckrank.stats.wilcoxon import WILCOXON

TESTS: tuple[StatTest, ...] = (
    PAIRED_TTEST, WILCOXON, RANDOMIZATION_TEST, BOOTSTRAP_CI, PAIRED_BOOTSTRAP_CI
)


def by_name(name: str) -> StatTest:
    """A test by its SQL name (case-insensitive)."""
    for test in TESTS:
        if test.name == name.lower():
            return test
    known = ", ".join(t.name for t in TESTS)
    raise KeyError(f"unknown statistical test {name!r}; known tests: {known}")
