"""duckrank: ranking-evaluation metrics as DuckDB SQL functions.

    >>> import duckrank
    >>> con = duckrank.connect()
    >>> con.sql("select ndcg([1, 3, 2, 6], [1, 2, 4], 2)").fetchall()[0][0]  # doctest: +ELLIPSIS
    0.6131471927654...
"""

from duckrank._version import __version__
from duckrank.engines.duckdb import connect, register
from duckrank.evaluation import evaluate
from duckrank.hivemall.translate import hive_sql
from duckrank.reports.compare import compare

__all__ = ["__version__", "compare", "connect", "evaluate", "hive_sql", "register"]
