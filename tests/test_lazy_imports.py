"""The metric records import without numpy and pyarrow (issue 32: the command line's start-up).

``duckrank trec_eval`` and ``evaluate``'s request parsing read the records, not their kernels;
importing numpy and pyarrow cost about 80 ms of a 0.38 s ``duckrank trec_eval`` on a 3-query
file. The record modules bind them with ``duckrank.lazy.LazyModule``, so the kernels import
them on their first call; any module-level use (a constant, a table, a type alias made at run
time) would import them again, which this catches. In a fresh interpreter: this one has them.
"""

from __future__ import annotations

import subprocess
import sys

MODULES = (
    "duckrank.metrics",
    "duckrank.engines.beyond_accuracy",
    "duckrank.evaluation.metric_requests",
    "duckrank.reports.trec_eval.command",
)


def test_records_import_without_numpy_and_pyarrow() -> None:
    code = (
        f"import sys\nimport {', '.join(MODULES)}\n"
        "print(' '.join(m for m in ('numpy', 'pyarrow') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "", (
        f"importing {', '.join(MODULES)} imports {result.stdout.strip()} "
        "(python -X importtime shows by which module)"
    )


def test_tables_built_without_numpy_are_the_kernels() -> None:
    # binary.py builds its SQL's constant tables at import without numpy: the same doubles as
    # the kernels' numpy sums, to the last bit.
    import numpy as np

    from duckrank.metrics import binary

    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, binary._HARMONIC_TABLE_SIZE))])
    assert harmonic.tolist() == list(binary._harmonic_values())
    ideal = binary._ideal_binary_dcg(np.arange(1, binary._IDEAL_DCG_TABLE_SIZE + 1), "log2", 2)
    assert ideal.tolist() == list(binary._ideal_binary_dcg_values())


def test_the_lazy_packages_list_what_they_export() -> None:
    """``__all__`` (written out for the linters) names exactly the lazily exported names, and a
    package's submodules are still its attributes (``duckrank.evaluation.api``), as when it
    imported them eagerly."""
    import duckrank.evaluation
    import duckrank.reports.fusion

    assert sorted(duckrank.evaluation.__all__) == sorted(duckrank.evaluation._EXPORTS)
    assert duckrank.evaluation.api.__name__ == "duckrank.evaluation.api"
    assert duckrank.reports.fusion.api.__name__ == "duckrank.reports.fusion.api"
