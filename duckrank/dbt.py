"""A dbt-duckdb plugin that registers duckrank on every connection dbt opens.

Enable it with one entry in ``profiles.yml`` (install ``duckrank[dbt]``)::

    my_project:
      target: dev
      outputs:
        dev:
          type: duckdb
          path: eval.duckdb
          threads: 4
          plugins:
            - module: duckrank.dbt

dbt-duckdb opens one DuckDB connection per run (``configure_connection``) and a cursor of it per
thread (``configure_cursor``). The pure-SQL macros are stored in the database once; the Python
functions live on the database instance; the TEMP macros that call them belong to one cursor, so
each cursor is registered too. ``duckrank.register`` is idempotent, so both hooks simply call it.
"""

from __future__ import annotations

from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin

from duckrank.duckdb_adapter import register


class Plugin(BasePlugin):
    def configure_connection(self, conn: Any) -> None:
        register(conn)

    def configure_cursor(self, cursor: Any) -> None:
        register(cursor)
