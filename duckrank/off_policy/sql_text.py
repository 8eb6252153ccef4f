"""The SQL text the off-policy records share: an argument checked row by row, and the error
messages, which name the function, the argument and the value. The text keeps to what DuckDB's
and Spark's SQL both read (CAST, CASE, ``||``, least, nullif, isnan); only the error call
differs, ``error`` in DuckDB and ``raise_error`` in Spark (``spark_sql``). The function and
argument names in the messages are the records' own, never a user's: nothing needs quoting."""

from __future__ import annotations

import math
import re

from duckrank.options import sql_number


def error_text(fn: str, name: str, domain: str, value: str) -> str:
    """An ``error()`` call: ``fn: name must be domain, got <value>`` (``value``: SQL)."""
    return (
        f"error('{fn}: {name} must be {domain}, got ' || coalesce(CAST({value} AS STRING), "
        "'NULL'))"
    )


def checked(fn: str, name: str, valid: str, domain: str, value: str | None = None) -> str:
    """``value`` (SQL, default ``name``) where ``valid`` (SQL over it, written with ``{a}``)
    holds, else an error naming ``name``; NULL is an error too (a CASE takes the ELSE branch
    when the condition is NULL). NaN fails every domain written with both bounds or
    ``isfinite``."""
    value = name if value is None else value
    condition = valid.format(a=value)
    return f"(CASE WHEN {condition} THEN {value} ELSE {error_text(fn, name, domain, name)} END)"


def number(fn: str, name: str, valid: str, domain: str) -> str:
    """The argument ``name`` as a DOUBLE, checked: integers, DECIMAL and BOOLEAN (1 and 0)
    rewards read as obp's float64 arrays do, and a NULL literal stays an error (DuckDB folds
    ``NULL * x`` to NULL before any check of an untyped NULL could run)."""
    return checked(fn, name, valid, domain, f"CAST({name} AS DOUBLE)")


INFINITY = sql_number(math.inf)


def finite(value: str) -> str:
    """SQL: ``value`` is a finite number (NaN compares above infinity in DuckDB and Spark, and
    NULL gives NULL)."""
    return f"abs({value}) < {INFINITY}"


def spark_sql(sql: str) -> str:
    """A record's SQL for Spark: its errors raised with ``raise_error``."""
    return re.sub(r"\berror\(", "raise_error(", sql)
