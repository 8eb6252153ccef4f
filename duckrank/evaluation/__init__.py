"""Score a run against judgments: the one implementation behind ``duckrank.evaluate`` and the
``duckrank evaluate`` command line.

A *run* is a long table with one row per (query, item, score); *qrels* (judgments) one row per
(query, item, grade). A query is whatever the lists are ranked for: a search query or a user.
Per query, the run becomes a ranked list (every tied item kept; ties in score broken by the
item id's text, descending, trec_eval's order, whatever the id's type) and the qrels become the
truth, then each requested metric is the SQL function of the same name. When every metric has a
cut-off and the lists are long, only each query's top K is ranked (the same list cut at the
largest cut-off; see ``sql._ranked_sql``). The metric-request language (``ndcg@10``,
``ndcg(gain=linear)@1,5,10``) is ``metric_requests``'s; beyond-accuracy requests are computed by
``duckrank.engines.beyond_accuracy.beyond_values`` from the same run and qrels and the side
tables given (``beyond``), and added as columns.

Memory stays flat in the number of queries: the query ids are split into ranges of about
``ROWS_PER_BUCKET`` input rows (from a sample of the run; a query ranked by its top K counts as
``TOP_K_ROW_WEIGHT`` * K rows) and the lists are built, matched and summed one range at a time;
the run and qrels are scanned once per range instead of being held whole (Parquet sorted by query
skips the row groups outside a range).

Everything the caller supplies (paths, column names, metric names, k, option values) reaches SQL
as a query parameter, a quoted identifier, or a name checked against the registry: never as SQL
text.

One module per job, each importing only those listed before it:

* ``metric_requests``: the metric-request language and the peer conventions (``parse_metric``,
  ``CONVENTIONS``);
* ``inputs``: the column names, the inputs as relations and the checks before anything is
  computed;
* ``planning``: the ranges of query ids, the truth columns and the top-K ranking choice;
* ``sql``: the ranking and scoring query of one range;
* ``beyond``: beyond-accuracy requests and their side inputs;
* ``api``: ``evaluation`` and ``evaluate``.

This package re-exports their public names: ``from duckrank.evaluation import evaluate``.
"""

from typing import TYPE_CHECKING

from duckrank.lazy import lazy_exports

if TYPE_CHECKING:
    from duckrank.evaluation.api import COUNT_COLUMNS, Result, evaluate, evaluation
    from duckrank.evaluation.beyond import SideInputs, side_relation
    from duckrank.evaluation.inputs import (
        ID_MODES,
        QRELS_ROLES,
        RUN_ROLES,
        ColumnNames,
        DroppedRows,
        ShortLists,
        UngradedQrels,
        UnrankedQueries,
        as_relation,
        column_names,
        is_polars,
        reader_columns,
    )
    from duckrank.evaluation.metric_requests import (
        CONVENTIONS,
        FLT_MAX,
        GRADED_LABEL_OPTIONS,
        LABEL_OPTIONS,
        LIST_TRUTH_INPUTS,
        MAX_CUTOFFS,
        RELEVANCE,
        REQUEST_MIN_GRADE,
        Convention,
        MetricRequest,
        convention_named,
        expand_metric,
        float_score_sql,
        is_beyond,
        known_metric_names,
        needed_functions,
        parse_metric,
        parse_metrics,
        split_metrics,
    )
    from duckrank.evaluation.planning import (
        NATIVE_TOP_K_ITEMS,
        NATIVE_TOP_K_KEYS,
        NATIVE_TOP_K_LIMIT,
        ROWS_PER_BUCKET,
        SAMPLE_ROWS,
        TOP_K_RATIO,
        TOP_K_ROW_WEIGHT,
    )

# Each public name and its module, imported on first use (``duckrank.lazy``): importing one
# module of this package (``inputs`` for ``duckrank fuse``) does not import the others.
_EXPORTS = {
    "COUNT_COLUMNS": "duckrank.evaluation.api",
    "Result": "duckrank.evaluation.api",
    "evaluate": "duckrank.evaluation.api",
    "evaluation": "duckrank.evaluation.api",
    "SideInputs": "duckrank.evaluation.beyond",
    "side_relation": "duckrank.evaluation.beyond",
    "ID_MODES": "duckrank.evaluation.inputs",
    "QRELS_ROLES": "duckrank.evaluation.inputs",
    "RUN_ROLES": "duckrank.evaluation.inputs",
    "ColumnNames": "duckrank.evaluation.inputs",
    "DroppedRows": "duckrank.evaluation.inputs",
    "ShortLists": "duckrank.evaluation.inputs",
    "UngradedQrels": "duckrank.evaluation.inputs",
    "UnrankedQueries": "duckrank.evaluation.inputs",
    "as_relation": "duckrank.evaluation.inputs",
    "column_names": "duckrank.evaluation.inputs",
    "is_polars": "duckrank.evaluation.inputs",
    "reader_columns": "duckrank.evaluation.inputs",
    "CONVENTIONS": "duckrank.evaluation.metric_requests",
    "FLT_MAX": "duckrank.evaluation.metric_requests",
    "GRADED_LABEL_OPTIONS": "duckrank.evaluation.metric_requests",
    "LABEL_OPTIONS": "duckrank.evaluation.metric_requests",
    "LIST_TRUTH_INPUTS": "duckrank.evaluation.metric_requests",
    "MAX_CUTOFFS": "duckrank.evaluation.metric_requests",
    "RELEVANCE": "duckrank.evaluation.metric_requests",
    "REQUEST_MIN_GRADE": "duckrank.evaluation.metric_requests",
    "Convention": "duckrank.evaluation.metric_requests",
    "MetricRequest": "duckrank.evaluation.metric_requests",
    "convention_named": "duckrank.evaluation.metric_requests",
    "expand_metric": "duckrank.evaluation.metric_requests",
    "float_score_sql": "duckrank.evaluation.metric_requests",
    "is_beyond": "duckrank.evaluation.metric_requests",
    "known_metric_names": "duckrank.evaluation.metric_requests",
    "needed_functions": "duckrank.evaluation.metric_requests",
    "parse_metric": "duckrank.evaluation.metric_requests",
    "parse_metrics": "duckrank.evaluation.metric_requests",
    "split_metrics": "duckrank.evaluation.metric_requests",
    "NATIVE_TOP_K_ITEMS": "duckrank.evaluation.planning",
    "NATIVE_TOP_K_KEYS": "duckrank.evaluation.planning",
    "NATIVE_TOP_K_LIMIT": "duckrank.evaluation.planning",
    "ROWS_PER_BUCKET": "duckrank.evaluation.planning",
    "SAMPLE_ROWS": "duckrank.evaluation.planning",
    "TOP_K_RATIO": "duckrank.evaluation.planning",
    "TOP_K_ROW_WEIGHT": "duckrank.evaluation.planning",
}
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

__all__ = [
    "CONVENTIONS", "COUNT_COLUMNS", "FLT_MAX", "GRADED_LABEL_OPTIONS", "ID_MODES",
    "LABEL_OPTIONS", "LIST_TRUTH_INPUTS", "MAX_CUTOFFS", "REQUEST_MIN_GRADE", "NATIVE_TOP_K_ITEMS",
    "NATIVE_TOP_K_KEYS", "NATIVE_TOP_K_LIMIT", "QRELS_ROLES", "RELEVANCE", "ROWS_PER_BUCKET",
    "RUN_ROLES", "SAMPLE_ROWS", "TOP_K_RATIO", "TOP_K_ROW_WEIGHT", "ColumnNames", "Convention",
    "DroppedRows", "MetricRequest", "Result", "ShortLists", "SideInputs", "UngradedQrels",
    "UnrankedQueries", "as_relation", "column_names", "convention_named", "evaluate",
    "evaluation", "expand_metric", "float_score_sql", "is_beyond", "is_polars",
    "known_metric_names", "needed_functions", "parse_metric", "parse_metrics", "reader_columns",
    "side_relation", "split_metrics",
]
