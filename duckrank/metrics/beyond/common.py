"""What the beyond-accuracy records share: the record types, the SQL helper macros and
text (checks of k and options, top-k unnesting, catalogue size, side tables read once per
item) and the kernels' reading of the lists."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace

from duckrank.options import POSITIVE_INTEGER, PROPORTION, Bounds, Option

Lists = dict[Hashable, Sequence[Hashable] | None]


@dataclass(frozen=True)
class Parameter:
    """A macro parameter: its ``duckrank.options.Option`` (name, default, doc and, for an option
    that takes a value rather than a table's or a column's name, its domain: the macro's SQL
    check, Spark's Python check and the reference's words are derived from it), and whether it
    must be given (``required``: by position, without a default: recs, k, a side table)."""

    option: Option
    required: bool = False

    @property
    def name(self) -> str:
        return self.option.name

    @property
    def doc(self) -> str:
        return self.option.doc

    @property
    def default(self) -> str | None:
        """The default as SQL text (``'user'``, ``NULL``, ``true``); None when it must be given."""
        return None if self.required else self.option.sql_default()


def required(name: str, doc: str, **domain: object) -> Parameter:
    """A parameter without a default (given by position); ``domain``: ``Option``'s."""
    return Parameter(Option(name, None, doc, **domain), required=True)


def optional(name: str, default: str | float | None, doc: str, **domain: object) -> Parameter:
    """A parameter with a default (a Python value: ``'user'``, ``True``, ``0.85``, None for
    NULL); ``domain``: ``Option``'s (``choices``, ``bounds``, ``boolean``)."""
    return Parameter(Option(name, default, doc, **domain))


@dataclass(frozen=True)
class BeyondMetric:
    name: str
    kind: str
    summary: str
    formula: str
    undefined: str
    conventions: str
    peers: str
    source: str
    parameters: tuple[Parameter, ...]
    sql: str
    kernel: Callable[..., object]
    # "map": truth_col holds graded judgments (a MAP item -> grade), which the lists that
    # duckrank.evaluate builds do not carry: such a metric is called in SQL or Spark.
    truth: str = "list"

    @property
    def signature(self) -> str:
        """How the macro is called: ``catalog_coverage(recs, k, catalog := NULL, ...)``."""
        return f"{self.name}({self.parameter_list})"

    @property
    def parameter_list(self) -> str:
        return ", ".join(
            p.name if p.default is None else f"{p.name} := {p.default}" for p in self.parameters
        )

    def option(self, name: str) -> Option:
        """The option of the parameter ``name``: its default and domain (Spark reads and checks
        a value with it)."""
        for parameter in self.parameters:
            if parameter.name == name:
                return parameter.option
        raise KeyError(f"{self.name} has no parameter {name!r}")


# --- shared SQL -------------------------------------------------------------------------------


def _column(parameter: str) -> str:
    """The column whose name is the value of a macro parameter, matched exactly (``COLUMNS('x')``
    alone is a regular expression: 'rec' would also pick 'rec_b')."""
    return f"COLUMNS(lambda c: c = {parameter})"


# The parameters the macros share. Table and column names take no domain (a name is checked
# where the table or column is read); an option's domain is checked by the macro and by Spark.
_RECS = required("recs", "name of the table or view of recommendations (a string)")
_K = required("k", "cut-off: the top k of each list", bounds=POSITIVE_INTEGER)
_USER = optional("user_col", "user", "user column of recs (and of train)")
_REC = optional("rec_col", "rec", "LIST column of recs, best first")
_ITEM = optional("item_col", "item", "item column of the side table")
_CATALOG_SIZE = optional("catalog_size", None, "the number of items in the catalogue (NULL: "
                         "read from catalog)", bounds=replace(POSITIVE_INTEGER, nullable=True))
_CATALOG = (optional("catalog", None, "name of a table of the catalogue's items (distinct "
                     "item_col values)"), _CATALOG_SIZE)
_TRUTH = optional("truth_col", "truth", "LIST column of recs: the user's relevant items")
_ITEM_GROUPS = required("item_groups", "name of a table of item_col and group_col, one group "
                        "per item")
_GROUP_COL = optional("group_col", "group", "group column of item_groups")
_TRAIN = required("train", "name of the table of training interactions (user_col, item_col)")
# Elliot's relevance threshold over graded (MAP) truth: extended_epc, extended_efd and the MAD
# of rankings.
_GRADES = optional("truth_col", "truth", "MAP column of recs: the user's graded items (item -> "
                   "grade)")
_THRESHOLD = optional("threshold", 1, "the smallest relevant grade (Elliot's relevance "
                      "threshold)", bounds=Bounds())


def _when_invalid(fn: str, parameters: Sequence[Parameter], named_by: str | None = None) -> str:
    """``WHEN <value outside the domain> THEN <its error>`` for each of ``parameters``, in order
    (``Option.error_sql``: the error names ``fn``, or the function ``named_by`` gives, the option
    and the value)."""
    return " ".join("WHEN {} THEN {}".format(*p.option.error_sql(fn, named_by=named_by))
                    for p in parameters)


def checked_sql(fn: str, value: str, *parameters: Parameter, named_by: str | None = None) -> str:
    """SQL of ``value``, or the error of the first of ``parameters`` whose value is outside its
    domain."""
    return f"CASE {_when_invalid(fn, parameters, named_by)} ELSE {value} END"


def _value(fn: str, parameter: Parameter) -> str:
    """The value of an option, checked (a true/false option as BOOLEAN): a CASE would read NULL
    as false, or a misspelt choice as another form, and give another form's number in
    silence."""
    name = parameter.name
    return checked_sql(fn, f"{name}::BOOLEAN" if parameter.option.boolean else name, parameter)


# k checked in the helper macros, which are given their caller's name as the parameter fn.
_K_OF_FN = checked_sql("", "k::BIGINT", _K, named_by="fn")


def _k(name: str) -> str:
    """k, checked, as BIGINT."""
    return checked_sql(name, "k::BIGINT", _K)


def _lists_sql(fn: str) -> str:
    """One row per row of recs, read as it is (no unnesting): ``"user"``, ``top`` (its top k;
    NULL for a NULL list) and ``kk`` (k, checked). The list is sliced a level up: DuckDB 1.4 and
    1.5 cannot parse COLUMNS(...)[1:k]."""
    return (f"SELECT \"user\", l[1:{_k(fn)}] AS top, k::BIGINT AS kk FROM (SELECT "
            f"{_column('user_col')} AS \"user\", {_column('rec_col')} AS l FROM "
            "query_table(recs))")


def _top_items_macro(name: str, truth: bool) -> str:
    """Each user's top k, one row per position: (user, item, pos), and with ``truth`` also
    ``truth`` (the row's truth_col list, for the metrics that need relevance). A user whose top k
    is empty gets one row (pos and item NULL), so that the per-user macros give it a row with a
    NULL value."""
    extra_parameter, extra_column, passed = (
        (", truth_col", f", {_column('truth_col')} AS truth", ", truth") if truth else ("", "", "")
    )
    return (
        f"CREATE OR REPLACE MACRO {name}(fn, recs, k, user_col, rec_col{extra_parameter}) "
        "AS TABLE\n"
        f"SELECT \"user\"{passed}, unnest(CASE WHEN coalesce(len(top), 0) = 0 THEN [NULL] "
        "ELSE top END) AS item,\n"
        "  unnest(CASE WHEN coalesce(len(top), 0) = 0 THEN [NULL] ELSE range(1, len(top) + 1) "
        "END) AS pos\n"
        # The list is sliced a level up: DuckDB 1.4 and 1.5 cannot parse COLUMNS(...)[1:k].
        f"FROM (SELECT \"user\", r[1:{_K_OF_FN}] AS top{passed} FROM (SELECT "
        f"{_column('user_col')} AS \"user\", {_column('rec_col')} AS r{extra_column} "
        "FROM query_table(recs)))"
    )


TOP_ITEMS = _top_items_macro("duckrank_top_items", truth=False)
TOP_ITEMS_WITH_TRUTH = _top_items_macro("duckrank_top_items_truth", truth=True)

# The items of every top k, one row per position that holds an item, and nothing else: what the
# catalogue metrics read. Through duckrank_top_items (users, positions, a row for an empty list)
# catalog_coverage took 1.8x the time at 1,000,000 users x top 10, slower than RecTools'
# CatalogCoverage on its ready-made long frame.
RECOMMENDED_ITEMS = (
    "CREATE OR REPLACE MACRO duckrank_recommended_items(fn, recs, k, rec_col) AS TABLE\n"
    f"SELECT item FROM (SELECT unnest(r[1:{_K_OF_FN}]) AS item FROM (SELECT "
    f"{_column('rec_col')} AS r FROM query_table(recs))) WHERE item IS NOT NULL"
)

# How often each item is in a top k, over all users.
EXPOSURE = (
    "CREATE OR REPLACE MACRO duckrank_exposure(fn, recs, k, user_col, rec_col) AS TABLE\n"
    "SELECT item, count(*)::DOUBLE AS n "
    "FROM duckrank_recommended_items(fn, recs, k, rec_col) GROUP BY item"
)

def quoted_identifier_sql(parameter: str) -> str:
    """SQL text giving the value of a macro parameter as a quoted identifier, for a query()
    string: a column name, never SQL."""
    return f"'\"' || replace({parameter}, '\"', '\"\"') || '\"'"


def named_table_sql(parameter: str) -> str:
    """SQL text giving ``query_table('<value>')`` for a query() string: the table named by a
    macro parameter, as a string literal (quotes doubled) that query_table reads as a name ('my
    table', 's.t', '"a.b"'), never as SQL. Spliced in as it is, a value bound as a query
    parameter ran as SQL (a subquery read a file), and a name that needs quoting failed. query()
    is there only because query_table(NULL) does not bind: the caller reads the table when the
    parameter is not NULL."""
    return f"'query_table(''' || replace({parameter}, '''', '''''') || ''')'"


# The catalogue's items (column c): the item_col values of the table named by catalog, none
# when it is NULL.
_CATALOG_ITEMS = (
    "query(CASE WHEN catalog IS NULL THEN 'SELECT NULL AS c LIMIT 0' ELSE 'SELECT ' || "
    f"{quoted_identifier_sql('item_col')} || ' AS c FROM ' || {named_table_sql('catalog')} END)"
)

# The catalogue size: given as a number, or the distinct non-NULL items of a table's column.
CATALOG_SIZE = (
    "CREATE OR REPLACE MACRO duckrank_catalog_size(fn, catalog, catalog_size, item_col) AS\n"
    "CASE WHEN catalog IS NULL AND catalog_size IS NULL THEN error(fn || ': give catalog (a "
    "table name) or catalog_size (a number of items)')\n"
    "  WHEN catalog IS NOT NULL AND catalog_size IS NOT NULL THEN error(fn || ': give catalog or "
    "catalog_size, not both')\n"
    f"  {_when_invalid('', [_CATALOG_SIZE], named_by='fn')}\n"
    f"  ELSE coalesce(catalog_size, (SELECT count(DISTINCT c) FROM {_CATALOG_ITEMS}))::DOUBLE END"
)

HELPERS = (TOP_ITEMS, TOP_ITEMS_WITH_TRUTH, RECOMMENDED_ITEMS, EXPOSURE, CATALOG_SIZE)


# --- rank discounts (arp, self_information, the exposure metrics, epc, efd, entropy) --------------

DISCOUNTS = ("none", "log", "rbp")
DEFAULT_PERSISTENCE = 0.85  # LensKit's GeometricRankWeight (duckrank's rbp metric takes 0.9)


def discount_parameters(default: str) -> tuple[Parameter, Parameter]:
    """The ``discount`` option (``default`` its default) and the rbp discount's persistence."""
    return (
        optional("discount", default, "the weight of rank r: 'none' (1), 'log' (ndcg's 1 / "
                 "log2(r + 1)) or 'rbp' (rbp's persistence^(r - 1))", choices=DISCOUNTS),
        optional("persistence", DEFAULT_PERSISTENCE, "the 'rbp' discount's p",
                 bounds=PROPORTION),
    )


_DISCOUNT, _PERSISTENCE = discount_parameters("none")  # their domains, whatever the default


def _weight(fn: str, pos: str = "pos") -> str:
    """SQL of the discount of rank ``pos``, checking discount and persistence (persistence only
    where it is read)."""
    return checked_sql(fn, f"CASE WHEN discount = 'none' THEN 1.0 WHEN discount = 'log' THEN "
                       f"1.0 / log2({pos} + 1) ELSE pow({_value(fn, _PERSISTENCE)}, {pos} - 1) "
                       "END", _DISCOUNT)


def discount_weight(rank: int, discount: str = "none",
                    persistence: float = DEFAULT_PERSISTENCE) -> float:
    """The kernels' discount of ``rank`` (from 1), from the formulas: ndcg's and rbp's."""
    if discount == "log":
        return 1.0 / math.log2(rank + 1)
    if discount == "rbp":
        return persistence ** (rank - 1)
    return 1.0


def _positioned(recs: Lists, k: int) -> dict[Hashable, list[tuple[int, Hashable]]]:
    """Each user's top k as (rank, item), NULL elements left out with their ranks kept."""
    return {u: [(r, i) for r, i in enumerate(list(items or [])[:k], start=1) if i is not None]
            for u, items in recs.items()}


def _discounted_mean(recs: Lists, k: int, value: Callable[[Hashable], float],
                     discount: str = "none", persistence: float = DEFAULT_PERSISTENCE
                     ) -> dict[Hashable, float | None]:
    """Per user: sum of w(r) value(i) over its top k / sum of w(r); NULL without an item."""
    out: dict[Hashable, float | None] = {}
    for user, ranked in _positioned(recs, k).items():
        weights = [discount_weight(r, discount, persistence) for r, _ in ranked]
        out[user] = (sum(w * value(i) for w, (_, i) in zip(weights, ranked, strict=True))
                     / sum(weights)) if ranked else None
    return out


def _top(fn: str) -> str:
    return f"duckrank_top_items('{fn}', recs, k, user_col, rec_col)"


def _recommended(fn: str) -> str:
    return f"duckrank_recommended_items('{fn}', recs, k, rec_col)"


def _weighted_top(fn: str, truth: bool = False) -> str:
    """Each user's top k as _top gives it (with ``truth``: and the truth_col list), with ``w``,
    the discount of the position (NULL where the position holds no item)."""
    top = (f"duckrank_top_items_truth('{fn}', recs, k, user_col, rec_col, truth_col)" if truth
           else _top(fn))
    return f"(SELECT *, CASE WHEN item IS NOT NULL THEN {_weight(fn)} END AS w FROM {top})"


def _exposure(fn: str) -> str:
    return f"duckrank_exposure('{fn}', recs, k, user_col, rec_col)"


def _discounted_exposure(fn: str) -> str:
    """(item, n): n = the sum over the top-k positions holding the item of their discount; with
    discount 'none' the count of duckrank_exposure (the other branch is planned away)."""
    return (f"(FROM {_exposure(fn)} WHERE discount = 'none' UNION ALL SELECT item, sum(w) AS n "
            f"FROM {_weighted_top(fn)} WHERE item IS NOT NULL AND discount IS DISTINCT FROM "
            "'none' GROUP BY item)")


def _weighted_exposure_counts(recs: Lists, k: int, discount: str = "none",
                              persistence: float = DEFAULT_PERSISTENCE) -> dict[Hashable, float]:
    """The kernels' exposure: per item, the sum of the discounts of the positions holding it."""
    counts: dict[Hashable, float] = {}
    for ranked in _positioned(recs, k).values():
        for rank, item in ranked:
            counts[item] = counts.get(item, 0.0) + discount_weight(rank, discount, persistence)
    return counts


def _catalog_size(fn: str) -> str:
    return f"duckrank_catalog_size('{fn}', catalog, catalog_size, item_col)"


def _one_row_per_item(fn: str, table: str, rows: str) -> str:
    """``rows`` (a query with an ``item`` column, read from the side table ``table``), refusing
    an item given twice: the join would count it twice, a wrong number without a sign."""
    return (
        f"SELECT * EXCLUDE (duckrank_rows) FROM (SELECT *, count(*) OVER (PARTITION BY item) "
        f"AS duckrank_rows FROM ({rows})) WHERE CASE WHEN item IS NOT NULL AND duckrank_rows > 1 "
        f"THEN error('{fn}: {table} holds item ' || item::VARCHAR || ' more than once') "
        "ELSE true END"
    )


def _given_groups_sql(fn: str) -> str:
    """g(item, grp) from the item_groups table, one group per item."""
    return ("g AS (SELECT * FROM (" + _one_row_per_item(
        fn, "item_groups", f"SELECT {_column('item_col')} AS item, {_column('group_col')} AS grp "
        "FROM query_table(item_groups)") + ") WHERE item IS NOT NULL AND grp IS NOT NULL)")


def _train_items() -> str:
    return f"SELECT {_column('item_col')} AS item FROM query_table(train)"


# --- kernels' shared reading (plain Python over dicts of lists) -----------------------------


def _tops(recs: Lists, k: int) -> dict[Hashable, list[Hashable]]:
    return {u: [i for i in (items or [])[:k] if i is not None] for u, items in recs.items()}


def _exposure_counts(recs: Lists, k: int) -> Counter:
    return Counter(i for items in _tops(recs, k).values() for i in items)


def _per_user(recs: Lists, k: int, value: Callable[[list[Hashable]], float | None]
              ) -> dict[Hashable, float | None]:
    return {u: (value(items) if items else None) for u, items in _tops(recs, k).items()}


def _jaccard_distance(a: set, b: set) -> float | None:
    union = len(a | b)
    return None if union == 0 else 1.0 - len(a & b) / union


