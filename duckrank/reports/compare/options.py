"""The comparison report's options (``Options``: baseline, test, correction, alpha, the
interval's level, trials, seed, and their checks), the tests and corrections it offers, and its
``runs`` argument read as ``Systems``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duckrank.render.spelling import PYTHON, Spelling
from duckrank.stats import REPORT_TESTS
from duckrank.stats.corrections import BY_NAME, Correction
from duckrank.stats.record import InReport, StatTest

# test= and --test choose among the statistical tests whose record says how the report runs
# them (``StatTest.report``: duckrank.stats.REPORT_TESTS, by alias); a new test is a record.
DEFAULT_TEST = "randomization"
# The report's options that a test's aggregate may take (by the option's name); the intervals
# take ``level`` too.
RESAMPLING = ("trials", "seed")
# correction= and --correction: statsmodels' names of its multipletests methods that apply
# (duckrank.stats.corrections says which do not, and why), Holm first (the default), and None.
CORRECTIONS = ("holm", *(name for name in BY_NAME if name != "holm"), None)
CORRECTION_NAMES = {name: c.title for name, c in BY_NAME.items()}
# Bootstrap resamples and randomization trials: 10,000 bootstrap resamples took 3.7 s per
# interval at 100,000 users; 1,000 move the ends of a 95% interval by about a tenth of the mean's
# standard error from one seed to another (docs/compare.md, bootstrap_ci).
TRIALS = 1000


@dataclass(frozen=True)
class Options:
    """How the systems are compared (see ``compare``)."""

    baseline: str | tuple[str, ...] | None = None
    test: str = DEFAULT_TEST
    alpha: float = 0.05
    correction: str | None = "holm"
    level: float | None = 0.95
    trials: int = TRIALS
    seed: int = 0

    def check(self, spelling: Spelling = PYTHON) -> None:
        def bad(keyword: str, value: Any, must: str) -> ValueError:
            shown = "none" if value is None and spelling.cli else value
            return _error(spelling, f"{spelling.argument(keyword, shown)}: {must}")

        if self.baseline is not None and (
                not self.baselines or len(set(self.baselines)) < len(self.baselines)
                or not all(isinstance(name, str) for name in self.baselines)):
            raise bad("baseline", self.baseline, "must be a system's name, or several different "
                      "names")
        if self.test not in REPORT_TESTS:
            raise bad("test", self.test, f"must be one of {', '.join(REPORT_TESTS)}")
        if self.correction not in CORRECTIONS:
            named = ", ".join(c for c in CORRECTIONS if c is not None)
            raise bad("correction", self.correction, f"must be one of {named}, or "
                      + ("none" if spelling.cli else "None"))
        if not (isinstance(self.alpha, int | float) and 0 < self.alpha < 1):
            raise bad("alpha", self.alpha, "must be a number strictly between 0 and 1")
        if self.level is not None and not (isinstance(self.level, int | float)
                                           and 0 < self.level < 1):
            raise bad("level", self.level, "must be a number strictly between 0 and 1"
                      + ("" if spelling.cli else ", or None for no interval"))
        if isinstance(self.trials, bool) or not isinstance(self.trials, int) or self.trials < 1:
            raise bad("trials", self.trials, "must be a positive integer")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise bad("seed", self.seed, "must be a non-negative integer")

    @property
    def baselines(self) -> tuple[str, ...]:
        """The baselines, in the order given: ``baseline`` is one name or several."""
        if self.baseline is None:
            return ()
        return (self.baseline,) if isinstance(self.baseline, str) else tuple(self.baseline)

    def pairs(self, systems: Sequence[str], spelling: Spelling = PYTHON
              ) -> list[tuple[int, int]]:
        """The comparisons made, as (system, other) indexes: each system against each baseline
        (a pair of baselines once, against the one given first), or every pair."""
        if self.baseline is None:
            return [(a, b) for a in range(len(systems)) for b in range(a + 1, len(systems))]
        made: list[tuple[int, int]] = []
        for baseline in self.baselines:
            if baseline not in systems:
                raise _error(spelling, f"{spelling.argument('baseline', baseline)} is not one "
                             f"of the systems: {', '.join(systems)}")
            base = systems.index(baseline)
            made += [(a, base) for a in range(len(systems))
                     if a != base and (base, a) not in made]
        return made

    @property
    def stat_test(self) -> StatTest:
        """The record of ``test`` (checked by ``check``)."""
        return REPORT_TESTS[self.test]

    @property
    def in_report(self) -> InReport:
        """How the report runs ``test``."""
        report = self.stat_test.report
        assert report is not None  # every REPORT_TESTS record has one
        return report

    @property
    def resampled(self) -> bool:
        """Whether ``test`` draws ``trials`` random trials (a p-value of (count + 1) /
        (trials + 1), as the randomization test's)."""
        return "trials" in self.stat_test.option_names

    @property
    def corrected(self) -> Correction | None:
        """The record of ``correction`` (checked by ``check``); None for no correction."""
        return None if self.correction is None else BY_NAME[self.correction]

    def _smallest_adjusted(self, family: int, trials: int) -> float:
        """The smallest adjusted p-value a family of ``family`` resampled p-values can have:
        every p-value the smallest, 1 / (trials + 1)."""
        assert self.corrected is not None
        return float(self.corrected.adjust([1 / (trials + 1)] * family).min())

    def check_trials(self, family: int, spelling: Spelling = PYTHON) -> None:
        """A resampled test's smallest p-value is 1 / (trials + 1); corrected over ``family``
        comparisons it must still reach alpha, or no mark could ever appear."""
        if not self.resampled or self.correction is None:
            return
        if self._smallest_adjusted(family, self.trials) > self.alpha:
            # The fewest trials that reach alpha: the adjusted value falls with the trials,
            # and Bonferroni's family / alpha - 1 (the most conservative method) always does.
            low, needed = self.trials, math.ceil(family / self.alpha - 1)
            while needed - low > 1:
                middle = (low + needed) // 2
                if self._smallest_adjusted(family, middle) > self.alpha:
                    low = middle
                else:
                    needed = middle
            raise _error(
                spelling,
                f"{spelling.argument('trials', self.trials)} is too few for "
                f"{_plural(family, 'comparison')} per metric with the "
                f"{CORRECTION_NAMES[self.correction]} correction at "
                f"{spelling.argument('alpha', self.alpha)}: the smallest corrected "
                f"p-value would be {self._smallest_adjusted(family, self.trials):.3g} (every "
                f"p-value 1/{self.trials + 1}); use at least "
                f"{needed} trials"
            )


@dataclass(frozen=True)
class Systems:
    """The runs to compare, as given: one run per system (``runs``: name -> run) or one long run
    with a system column (``by``)."""

    runs: tuple[tuple[str, Any], ...] = ()
    long: Any = None
    by: str | None = None


def systems_of(runs: Any, by: str | None, spelling: Spelling = PYTHON) -> Systems:
    """Read ``compare``'s ``runs`` argument: a mapping name -> run, a sequence of paths (named by
    their stems), or with ``by`` one run holding every system."""
    if by is not None:
        if isinstance(runs, Mapping) or (isinstance(runs, Sequence)
                                         and not isinstance(runs, str)):
            raise _error(spelling, f"{spelling.argument('by', by)} reads the systems from one "
                         "run's column: give one run (a path or a table), not several")
        return Systems(long=runs, by=by)
    if isinstance(runs, Mapping):
        named = tuple((str(name), run) for name, run in runs.items())
    elif isinstance(runs, Sequence) and not isinstance(runs, str):
        other = next((run for run in runs if not isinstance(run, str | Path)), None)
        if other is not None:
            raise ValueError("compare: runs= as a list takes file paths (each system is named by "
                             "its file's stem), got a list holding a "
                             f"{type(other).__name__}; name tables with a mapping, "
                             "{'bm25': table, ...}")
        named = tuple((Path(run).stem, run) for run in runs)
        stems = [name for name, _ in named]
        if len(set(stems)) < len(stems):
            twice = sorted({s for s in stems if stems.count(s) > 1})
            fix = ("rename a file" if spelling.cli
                   else "name them with a mapping, {'name': path, ...}")
            raise _error(spelling, f"two runs are named {twice[0]!r} by their file stems; {fix}")
    else:
        raise ValueError(
            "compare: runs= must be a mapping name -> run, a list of run files, or one run with "
            f"a system column and {spelling.argument('by', 'system')}; got "
            f"{type(runs).__name__}"
        )
    return Systems(runs=named)


def _error(spelling: Spelling, message: str) -> ValueError:
    """A ValueError naming ``compare`` from Python (the command line names its command)."""
    return ValueError(message if spelling.cli else f"compare: {message}")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _named(test: StatTest, o: Options) -> dict[str, Any]:
    """The report's values of ``test``'s options, by name, in the record's order: ``trials``
    and ``seed`` (``RESAMPLING``), and the intervals' ``level``."""
    values = {"level": o.level, "trials": o.trials, "seed": o.seed}
    return {name: values[name] for name in test.option_names}


def _check_report_tests() -> None:
    """Each test the report offers takes only options the report gives it (at import: a new
    test's record that the report cannot run fails here, not in a user's report)."""
    if DEFAULT_TEST not in REPORT_TESTS:
        raise ValueError(f"compare: the default test {DEFAULT_TEST!r} is not a report test")
    for test in REPORT_TESTS.values():
        unknown = [name for name in test.option_names if name not in RESAMPLING]
        if unknown:
            raise ValueError(f"compare: {test.name} takes {', '.join(unknown)}, which the "
                             f"report does not give (it gives {', '.join(RESAMPLING)})")


_check_report_tests()
