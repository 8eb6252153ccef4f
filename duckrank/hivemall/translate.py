"""``hive_sql``: translate a HiveQL query (Hivemall's guide) into DuckDB SQL with sqlglot.

What the translation changes matters for Hivemall queries: Hive reads ``"-reverse"`` as a string
(DuckDB would read an identifier), ``struct(a, b)`` becomes a DuckDB struct literal, ``cast``
becomes ``TRY_CAST`` (Hive's cast gives NULL on failure), ``collect_set`` becomes
``LIST(DISTINCT ...)``. Hivemall's own functions (``ndcg``, ``to_ordered_list``, ...) are passed
through by name and resolve to the hivemall schema (``duckrank.connect(hivemall=True)``).
See docs/hivemall.md.
"""

from __future__ import annotations


def hive_sql(text: str, *, pretty: bool = False) -> str:
    """DuckDB SQL for the HiveQL statements in ``text``, joined by ``;`` and newlines.

    Needs sqlglot (``pip install duckrank[hivemall]``).
    """
    try:
        import sqlglot
    except ImportError as missing:
        raise ImportError(
            "duckrank.hivemall.translate needs sqlglot: pip install 'duckrank[hivemall]'"
        ) from missing
    return ";\n".join(sqlglot.transpile(text, read="hive", write="duckdb", pretty=pretty))
