"""``to_ordered_list``: build ranked lists from long tables without losing tied items.

Hivemall's aggregate (Apache Hivemall's to_ordered_list UDAF, apache/incubator-hivemall at commit
34079778), as DuckDB SQL macros:

* ``to_ordered_list(value)``, ``(value, options)``, ``(value, key)``, ``(value, key, options)``.
* No option sorts ascending by key; ``-reverse`` (``-reverse_order``) descending; ``-k n`` keeps
  the n largest, descending; ``-k -n`` the n smallest, ascending; ``-reverse`` flips either.
* Ties: every row is kept. The output is the (key, value) pairs sorted ascending (keys first, then
  values) or exactly the reverse of that order, so equal keys come out ordered by value and the same
  query returns the same list on every run (Hivemall's own tie order depends on arrival order).
* ``-dedup`` drops repeated (key, value) pairs. Rows with a NULL key or value are skipped; a group
  with none left gives NULL.
* A two-argument call reads a VARCHAR second argument as options (Hivemall does so only for a
  constant string; a macro cannot tell constants from columns). To sort by a string key, pass the
  options explicitly: ``to_ordered_list(value, key, '')``.
* ``-kv_map`` / ``-vk_map`` return a MAP in Hivemall. A DuckDB function cannot return a LIST or a
  MAP depending on a string, so those options are an error that names ``to_ordered_kv_map`` /
  ``to_ordered_vk_map``, which return the map.
"""

from __future__ import annotations

KNOWN = "-k n, -reverse, -reverse_order, -dedup"

OPTIONS_MACROS = (
    r"""
CREATE OR REPLACE MACRO duckrank_option_tokens(options) AS
  list_filter(string_split_regex(coalesce(options, ''), '\s+'), lambda t: t <> '')
""",
    """
CREATE OR REPLACE MACRO duckrank_unknown_options(tokens) AS
  list_filter(tokens, lambda t, i: t NOT IN ('-k', '-reverse', '-reverse_order', '-dedup',
    '-kv_map', '-kv', '-vk_map', '-vk') AND (i = 1 OR tokens[i - 1] <> '-k'))
""",
    """
CREATE OR REPLACE MACRO duckrank_k_option(tokens) AS
  CASE WHEN list_position(tokens, '-k') > 0
    THEN coalesce(tokens[list_position(tokens, '-k') + 1], '') END
""",
    f"""
CREATE OR REPLACE MACRO duckrank_ordered_options(fn, options) AS CASE
    WHEN len(duckrank_unknown_options(duckrank_option_tokens(options))) > 0
      THEN error(fn || ': unknown option ''' || duckrank_unknown_options(
        duckrank_option_tokens(options))[1] || ''' in options ''' || options
        || '''; known options: {KNOWN}')
    WHEN list_has_any(duckrank_option_tokens(options), ['-kv_map', '-kv'])
        AND list_has_any(duckrank_option_tokens(options), ['-vk_map', '-vk'])
      THEN error(fn || ': both -kv_map and -vk_map were given in options '''
        || options || '''')
    WHEN fn = 'to_ordered_list'
        AND list_has_any(duckrank_option_tokens(options), ['-kv_map', '-kv'])
      THEN error('to_ordered_list: option -kv_map returns a MAP; use to_ordered_kv_map(value, key'
        || ' [, options]) instead')
    WHEN fn = 'to_ordered_list'
        AND list_has_any(duckrank_option_tokens(options), ['-vk_map', '-vk'])
      THEN error('to_ordered_list: option -vk_map returns a MAP; use to_ordered_vk_map(value, key'
        || ' [, options]) instead')
    WHEN NOT regexp_full_match(coalesce(duckrank_k_option(duckrank_option_tokens(options)), '1'),
        '-?0*[1-9][0-9]*')
      THEN error(fn || ': option -k needs a non-zero integer, got '''
        || duckrank_k_option(duckrank_option_tokens(options)) || ''' in options '''
        || options || '''')
    ELSE {{'k': try_cast(duckrank_k_option(duckrank_option_tokens(options)) AS BIGINT),
           'reverse': list_has_any(duckrank_option_tokens(options), ['-reverse', '-reverse_order']),
           'dedup': list_contains(duckrank_option_tokens(options), '-dedup')}}
  END
""",
)

# pairs: LIST of {'k': key, 'v': value}; opts: the struct above.
ORDER_MACRO = """
CREATE OR REPLACE MACRO duckrank_ordered_pairs(pairs, opts) AS (
  CASE WHEN opts.reverse <> (coalesce(opts.k, 0) > 0)
    THEN list_reverse_sort(CASE WHEN opts.dedup THEN list_distinct(pairs) ELSE pairs END)
    ELSE list_sort(CASE WHEN opts.dedup THEN list_distinct(pairs) ELSE pairs END)
  END[1:coalesce(abs(opts.k), len(pairs))]
)
"""

_PAIRS = "list({'k': %s, 'v': value}) FILTER (WHERE %s IS NOT NULL AND value IS NOT NULL)"


def _ordered(fn: str, key: str, options: str) -> str:
    return (
        f"list_transform(duckrank_ordered_pairs({_PAIRS % (key, key)}, "
        f"duckrank_ordered_options('{fn}', {options})), lambda e: e.v)"
    )


def _map(fn: str, first: str, second: str, options: str) -> str:
    # Hivemall HEAD keeps the first occurrence of a repeated map key, in output order.
    pairs = (
        f"duckrank_ordered_pairs({_PAIRS % ('key', 'key')}, "
        f"duckrank_ordered_options('{fn}', {options}))"
    )
    return (
        f"map_from_entries(list_filter(list_transform({pairs}, "
        f"lambda e: {{'key': e.{first}, 'value': e.{second}}}), "
        f"lambda e, i: list_position(list_transform({pairs}, lambda x: x.{first}), e.key) = i))"
    )


def to_ordered_list_macro(name: str = "to_ordered_list") -> str:
    """The CREATE MACRO statement of to_ordered_list under ``name`` (the hivemall schema creates
    the same aggregate as ``hivemall.to_ordered_list``)."""
    return f"""
CREATE OR REPLACE MACRO {name}(value) AS {_ordered('to_ordered_list', 'value', 'NULL')},
  (value, key_or_options) AS CASE WHEN typeof(any_value(key_or_options)) = 'VARCHAR'
    THEN {_ordered('to_ordered_list', 'value', 'any_value(key_or_options)::VARCHAR')}
    ELSE {_ordered('to_ordered_list', 'key_or_options', 'NULL')} END,
  (value, key, options) AS {_ordered('to_ordered_list', 'key', 'options')}
"""


MACROS = (
    *OPTIONS_MACROS,
    ORDER_MACRO,
    to_ordered_list_macro(),
    f"""
CREATE OR REPLACE MACRO to_ordered_kv_map(value, key) AS
  {_map('to_ordered_kv_map', 'k', 'v', 'NULL')},
  (value, key, options) AS {_map('to_ordered_kv_map', 'k', 'v', 'options')}
""",
    f"""
CREATE OR REPLACE MACRO to_ordered_vk_map(value, key) AS
  {_map('to_ordered_vk_map', 'v', 'k', 'NULL')},
  (value, key, options) AS {_map('to_ordered_vk_map', 'v', 'k', 'options')}
""",
)
