"""Beyond-accuracy metrics (issues 17 and 28): coverage, popularity and novelty, diversity, and
the similarity of two systems' lists. One ``BeyondMetric`` record per metric: formula, conventions,
peers, source, the SQL body that ``duckrank.render.beyond_accuracy`` turns into a DuckDB macro,
and a numpy/Python kernel that is the tests' independent check. One module per family:
``coverage``, ``novelty`` (popularity and novelty), ``diversity``, ``similarity`` (of two
systems' lists), ``fairness`` (popularity bias and item groups; ``exposure``, Diaz et al.'s
expected exposure, listed with it), with what they share in
``common``; ``duckrank.metrics.beyond_accuracy`` gathers their ``METRICS``.

Why these are not ``record.Metric``s: most need data that is not in the row (training
interactions, item embeddings, categories, a catalogue) and several are one number over all users.
Copying a catalogue-sized MAP into every row would cost O(users x catalogue); instead the metrics
that read such tables are *table macros* over ``query_table(name)``: they unnest each user's top k
once (``duckrank_top_items``) and join it with the side table, so the work is O(users x k +
catalogue) and runs in DuckDB's parallel hash joins and aggregates. The list-similarity metrics
need only the two lists of a row, so they are scalar macros like the accuracy metrics.

Kinds (``BeyondMetric.kind``):

* ``"catalogue"``: a table macro giving one row for the whole recommendations table;
* ``"per_user"``: a table macro giving one row per user of the recommendations table, ``user``
  and the value (NULL where undefined, so that ``avg`` skips it as it skips undefined accuracy);
* ``"pair"``: a scalar macro of two lists, one value per row.

Shared input conventions (every table macro): ``recs`` names a table or view (as a string) with
a user column (``user_col``, default ``'user'``) and a LIST column of recommended items, best
first (``rec_col``, default ``'rec'``); the top k is ``rec[1:k]``. Side tables name their item
column ``item_col`` (default ``'item'``; training interactions also use ``user_col``). A user with
an empty or NULL list has a row (value NULL). NULL elements are not items (their positions still
count as ranks). Lists are assumed to hold each item once, as the peers assume; a repeated item
counts at each of its positions.
"""
