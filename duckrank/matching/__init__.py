"""The matching step: each row's (rec, truth, k) turned into what the metric formulas read (hit
positions, grades of the top K, preferences), in SQL, in C (``native``) and over Arrow batches.

Conventions shared by every binary metric (written once, here):

* K = min(k, len(rec)); k omitted (or ``'all'``) means k = len(rec).
* A hit is an element of the top K that is in truth and has not appeared earlier in rec: a
  duplicate recommendation is a miss, so no metric leaves [0, 1].
* truth is a set: n counts its distinct non-NULL items. NULL elements of rec keep their position
  and are never hits; NULL elements of truth are ignored.

The same step exists three times: as SQL (``sql``: DuckDB's list functions, used by the DuckDB
macros), as C (``native/match.c``, which the macros use instead for most id types when it is
loaded), and as numpy over whole Arrow batches (``arrays``, used by Spark and as an independent
check in the tests). ``preferences`` does the same for the preference-based functions.

Imports nothing else of duckrank: every other layer builds on it.
"""
