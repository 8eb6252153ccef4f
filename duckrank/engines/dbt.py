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
functions live on the database instance; the TEMP macros that call them (and those that use the
native matching step) belong to one cursor, so each cursor is registered too.
``duckrank.register`` is idempotent and thread-safe, so both hooks simply call it.

Like ``duckrank.connect``, the plugin opens the database with ``allow_unsigned_extensions`` so
that duckrank's native matching step can load (README, "Speed"); ``config: {native: false}``
under the plugin's entry keeps DuckDB's default and the SQL matching step. ``native`` is read as
dbt reads booleans: ``true``/``false`` in any case, ``yes``/``no``, ``1``/``0``, as YAML values
or as the strings ``env_var()`` gives; anything else is an error, never a guess.
"""

from __future__ import annotations

from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin

from duckrank.engines.duckdb import register
from duckrank.matching import native

_BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def _boolean_option(plugin_config: dict[str, Any], option: str, default: bool) -> bool:
    """A plugin option that is true or false. ``bool("false")`` is True, so strings (what
    ``env_var()`` returns) are parsed, and any value that is not clearly one or the other is an
    error naming it."""
    value = plugin_config.get(option, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _BOOLEANS:
        return _BOOLEANS[value.strip().lower()]
    raise ValueError(
        f"duckrank.dbt plugin: config option {option!r} must be true or false (also yes/no or "
        f"1/0, in any case); got {value!r}"
    )


class Plugin(BasePlugin):
    def initialize(self, plugin_config: dict[str, Any]) -> None:
        self.native = _boolean_option(plugin_config, "native", default=True)

    def update_connection_config(self, creds: Any, config: dict[str, Any]) -> None:
        if self.native and native.library_path() is not None:
            config.setdefault("allow_unsigned_extensions", True)

    def configure_connection(self, conn: Any) -> None:
        register(conn, native=self.native)

    def configure_cursor(self, cursor: Any) -> None:
        register(cursor, native=self.native)
