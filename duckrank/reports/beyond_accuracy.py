"""The beyond-accuracy metrics (coverage, novelty, diversity, list similarity, serendipity and
inverse-propensity weighted accuracy) of a run from Python: files or data frames in, one row out
(``beyond_accuracy``), like ``duckrank.evaluate``'s means. The work is
``duckrank.engines.beyond_accuracy.beyond_values``; this module reads the inputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from duckrank.engines.beyond_accuracy import RunColumns, beyond_values
from duckrank.evaluation import as_relation, side_relation
from duckrank.render.spelling import PYTHON, Spelling

if TYPE_CHECKING:
    import pandas


def beyond_accuracy(
    run: Any,
    metrics: Sequence[str] | str,
    *,
    qrels: Any = None,
    other: Any = None,
    train: Any = None,
    catalog: Any = None,
    catalog_size: int | None = None,
    embeddings: Any = None,
    categories: Any = None,
    propensities: Any = None,
    item_groups: Any = None,
    user_column: str = "user",
    item_column: str = "item",
    score_column: str = "score",
    rank_column: str | None = None,
    grade_column: str | None = None,
    connection: duckdb.DuckDBPyConnection | None = None,
    spelling: Spelling = PYTHON,
) -> pandas.DataFrame:
    """Beyond-accuracy metrics of a run, as a one-row pandas DataFrame: ``users`` (the users with
    a list) and one column per request (``catalog_coverage@10``, ``rbo(p=0.8)@10``, ...; see
    ``duckrank.engines.beyond_accuracy.parse_request``), named as written. Catalogue metrics are
    one value for the run; per-user ones are averaged over its users (undefined values skipped);
    list similarities over the users both runs have.

    ``run`` (and ``other``, a second system, for ``overlap_at``, ``jaccard_at`` and ``rbo``):
    long tables with a row per (user, item, score), or ranked by ``rank_column`` (1 = best).
    ``qrels``: (user, item) rows of the users' relevant items, for ``serendipity``, ``epc``,
    ``efd``, ``pop_reo``, ``reo`` and the ``ips_*`` metrics, and the users ``user_coverage``
    covers (with ``grade_column``, the rows with a grade above 0). Side tables, in
    the columns the macros read (docs/beyond-accuracy.md): ``train`` (user, item), ``catalog``
    (item) or ``catalog_size``, ``embeddings`` (item, embedding), ``categories`` (item,
    category), ``propensities`` (item, propensity; without it the ``ips_*`` metrics estimate
    them from ``train``), ``item_groups`` (item, group; for ``reo``, ``rsp`` and
    ``group_expected_exposure``). Each may be a Parquet or CSV path, a DuckDB relation of
    ``connection``, or a pandas / polars / Arrow table. ``spelling``: how errors name the
    arguments (``duckrank beyond`` passes ``duckrank.evaluation.COMMAND_LINE``: its flags).
    """
    import pandas

    from duckrank.engines.duckdb import connect, register

    columns = RunColumns(user_column, item_column, score_column, rank_column, grade_column)
    con = register(connection) if connection is not None else connect()
    registered: list[str] = []
    roles = {"query": user_column, "item": item_column, "score": rank_column or score_column}
    try:
        side = {"train": train, "catalog": catalog, "embeddings": embeddings,
                "categories": categories, "propensities": propensities,
                "item_groups": item_groups}
        values = beyond_values(
            con, as_relation(con, run, "run", roles, registered),
            [metrics] if isinstance(metrics, str) else metrics,
            qrels=None if qrels is None else as_relation(
                con, qrels, "qrels", {"query": user_column, "item": item_column,
                                      **({"grade": grade_column} if grade_column else {})},
                registered),
            other=None if other is None else as_relation(con, other, "run", roles, registered),
            tables={name: side_relation(con, table, name, (user_column, item_column),
                                        registered, spelling)
                    for name, table in side.items() if table is not None},
            catalog_size=catalog_size, columns=columns, spelling=spelling,
        )
        return pandas.DataFrame([values])
    finally:
        for name in registered:
            con.unregister(name)
        if connection is None:
            con.close()
