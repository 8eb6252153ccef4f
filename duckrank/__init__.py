"""duckrank: ranking-evaluation metrics as DuckDB SQL functions.

    >>> import duckrank
    >>> con = duckrank.connect()
    >>> con.sql("select ndcg([1, 3, 2, 6], [1, 2, 4], 2)").fetchall()[0][0]  # doctest: +ELLIPSIS
    0.6131471927654...
"""

__version__ = "0.1.0"

from duckrank.duckdb_adapter import connect, register  # noqa: E402
from duckrank.evaluate import evaluate  # noqa: E402
from duckrank.hive_sql import hive_sql  # noqa: E402

__all__ = ["__version__", "connect", "evaluate", "hive_sql", "register"]
