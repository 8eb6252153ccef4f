"""What a duckrank function *is*: one declarative record per metric.

Every adapter is derived from these records: the DuckDB macros (``duckrank.render.macros``), the
plain-SQL file in ``sql/``, the function reference in the docs, the CLI's ``-m ndcg@10`` parser
and the Spark registration. Adding a metric means adding one record (in a module of
``duckrank.metrics``) and its tests.

A metric is written twice, side by side in its record, over the *same* matched representation of
a row (see ``duckrank.matching``):

* ``sql``: a DuckDB SQL expression, used inside the generated macro. Native list functions scale
  with DuckDB's threads and avoid the Python call cost (see benchmarks/RESULTS.md).
* ``kernel``: a numpy function over a whole Arrow batch, used where there is no DuckDB (Spark,
  ``duckrank.evaluate`` on Arrow data) and as an independent check of the SQL in the tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Option:
    """A named SQL parameter of a function (``gain := 'linear'``)."""

    name: str
    default: str | int | float
    doc: str
    choices: tuple[str, ...] = ()

    def sql_default(self) -> str:
        if isinstance(self.default, str):
            return "'" + self.default.replace("'", "''") + "'"
        return repr(self.default)


@dataclass(frozen=True)
class Metric:
    """One ranking metric.

    ``inputs`` names the matching step that feeds ``sql`` and ``kernel``:

    * ``"hits"``: binary relevance. Placeholders in ``sql``: ``{pos}`` the 1-based positions of
      the hits in the top K (in no particular order), ``{K}`` = min(k, len(rec)), ``{k}`` the
      cut-off (len(rec) when omitted), ``{n}`` the number of distinct relevant items. ``kernel``
      receives a ``duckrank.matching.arrays.Hits``.
    * ``"grades"``: graded relevance. truth is a MAP(VARCHAR, DOUBLE) of item -> grade when
      ``truth_type`` says so, else a LIST (grade 1 for each item). Placeholders: ``{top}`` the
      grades of the top K in rec order (DOUBLE[], 0 where an item has none), ``{ideal}`` the
      min(k, n) largest positive grades of truth, largest first, ``{n}`` the number of positive
      grades, ``{K}``, ``{k}`` as above; option parameters are referenced by name. ``kernel``
      receives a ``duckrank.matching.arrays.Grades`` from ``match_grades``.
    * ``"grade_lists"``: the same placeholders and ``Grades``, from grades given directly
      (Hivemall's graded form: rec a list of structs whose first field is the grade, truth a list
      of grades); numpy matching is ``duckrank.matching.arrays.match_grade_lists``.

    * ``"preferences"``, ``"system_preferences"``, ``"ranked_grades"``: no pure-SQL form
      (``sql`` is empty); DuckDB runs the kernel as a Python UDF behind a TEMP macro
      (``duckrank.engines.python_udfs``); ``duckrank.matching.preferences`` turns the Arrow
      columns into the kernel's input, for DuckDB and Spark alike. ``preferences``:
      ``(rec, truth)`` with truth a list of (preferred, other) structs, kernel input
      ``duckrank.matching.preferences.PreferenceRows``; ``system_preferences``: the same with the
      system's output a list of preferences too (first argument ``system``); ``ranked_grades``:
      ``(rec, truth MAP)``, kernel input ``duckrank.matching.preferences.RankedGrades``. These
      functions take no ``k``.

    A ``kernel`` takes the matched batch and the record's options as keyword arguments.

    ``truth_type`` is the SQL type of the truth parameter ("" = untyped, for LISTs of any id type).
    Records that share a ``name`` become overloads of one macro, told apart by ``truth_type``.
    """

    name: str
    summary: str
    formula: str
    undefined: str
    sql: str
    kernel: Callable[..., np.ndarray] | None
    inputs: str = "hits"
    truth_type: str = ""
    aliases: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    peers: str = ""
    source: str = ""
    cutoff: bool = True  # False: the function takes no k
    first_argument: str = "rec"

    @property
    def cli_names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def signature(self) -> str:
        """How the function is called in SQL: ``ndcg(rec, truth [, k], gain := 'exponential')``."""
        truth = f"truth {self.truth_type}" if self.truth_type else "truth"
        k = " [, k]" if self.cutoff else ""
        options = "".join(f", {o.name} := {o.sql_default()}" for o in self.options)
        return f"{self.name}({self.first_argument}, {truth}{k}{options})"
