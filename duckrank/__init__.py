"""duckrank: ranking-evaluation metrics as DuckDB SQL functions.

    >>> import duckrank
    >>> con = duckrank.connect()
    >>> con.sql("select ndcg([1, 3, 2, 6], [1, 2, 4], 2)").fetchall()[0][0]  # doctest: +ELLIPSIS
    0.6131471927654...
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from duckrank._version import __version__
from duckrank.lazy import lazy_exports

# When this process first imported duckrank: a source file changed after it may be older than
# the module this process runs (``duckrank.engines.catalog`` then keeps no prepared catalog).
_IMPORTED_AT_NS = time.time_ns()

if TYPE_CHECKING:
    from duckrank.engines.duckdb import connect, register
    from duckrank.evaluation import evaluate
    from duckrank.hivemall.translate import hive_sql
    from duckrank.reports.compare import compare
    from duckrank.reports.fusion import fuse

# Each public name and the module that defines it, imported on first use (PEP 562): `import
# duckrank` then costs about `import duckdb` alone, and `import duckrank.x` (the command line,
# a submodule) does not pay for numpy, pyarrow and every record of the package (issue 32).
_LAZY = {
    "connect": "duckrank.engines.duckdb",
    "register": "duckrank.engines.duckdb",
    "evaluate": "duckrank.evaluation",
    "hive_sql": "duckrank.hivemall.translate",
    "compare": "duckrank.reports.compare",
    "fuse": "duckrank.reports.fusion",
}

__all__ = ["__version__", "compare", "connect", "evaluate", "fuse", "hive_sql", "off_policy",
           "register"]

# `duckrank.off_policy` is the function below, while duckrank/off_policy/ is the layer of the
# estimators' records. Python sets a package's attribute to a subpackage when it first imports
# it, which would replace the function; importing the records here first (pure Python, no numpy)
# means that never happens later. Their modules stay importable by name
# (`from duckrank.off_policy.arrays import bandit_log`).
import duckrank.off_policy  # noqa: E402, F401


def off_policy(*args: Any, **kwargs: Any) -> Any:  # noqa: F811
    """Off-policy estimates of a policy's value from a bandit log:
    ``duckrank.reports.off_policy.off_policy`` (docs/off-policy.md), imported on first use."""
    from duckrank.reports.off_policy import off_policy as estimate

    return estimate(*args, **kwargs)


__getattr__, _ = lazy_exports(globals(), _LAZY)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
