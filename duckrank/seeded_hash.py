"""duckrank's seeded hash: the one source of every reproducible random choice (the protocol's
splits and candidate samples, inter_user_diversity's sampled pairs, the experiment's random
ranking).

DuckDB's own ``hash`` is not promised to stay the same from one release to the next (DuckDB 2.0.1
types or hashes some literals differently from 2.0.0), and Spark has no equal of it. This hash is
written in SQL arithmetic that every DuckDB line from 1.4 computes the same way, and in numpy for
the engines that draw outside DuckDB, so a seed gives the same split and the same sample on every
DuckDB version and engine (tests/test_seeded_hash.py pins values and checks them against the
``mmh3`` package).

Definition: ``hash(seed, v1, ..., vn)`` is MurmurHash3_x86_32 (Appleby's reference, seed 0) of
the bytes of the 64-bit little-endian words of ``seed, v1, ..., vn``, a number in [0, 2^32). A
value's word: an integer of up to 64 bits (TINYINT to BIGINT, UTINYINT to UINTEGER) its two's
complement bits; any other type (text, UBIGINT, HUGEINT, dates...) the first 16 hex digits of the
MD5 (RFC 1321) of its text form ``CAST(x AS VARCHAR)``, read as a number. The seed must be an
integer (callers check it and name their own argument). NULL in gives NULL.

SQL has no 32-bit unsigned wrap-around, so every step is a UBIGINT product of two numbers below
2^32 (exact) masked to its low 32 bits.
"""

from __future__ import annotations

from duckrank.lazy import LazyModule

# numpy only inside the functions: importing the records (which import this) stays numpy-free.
np = LazyModule("numpy")

LOW = 0xFFFFFFFF
# MurmurHash3_x86_32's constants.
_C1, _C2 = 0xCC9E2D51, 0x1B873593
_ADD = 0xE6546B64
_F1, _F2 = 0x85EBCA6B, 0xC2B2AE35

# DuckDB types read as integers (two's complement); every other type is hashed by its text.
# Seeds must have one of them (callers check it).
INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER")
SQL_INTEGER_TYPES = ", ".join(f"'{name}'" for name in INTEGER_TYPES)


def _sql_halves(value: str) -> tuple[str, str]:
    """SQL for the low and high 32-bit halves (UBIGINT) of ``value``'s word. DuckDB folds
    ``typeof`` when it binds the query, so only one branch is ever computed."""
    value = f"({value})"
    integer = f"TRY_CAST({value} AS BIGINT)"
    digest = f"md5(CAST({value} AS VARCHAR))"

    def half(shift: int, first_digit: int) -> str:
        return (f"CASE WHEN typeof({value}) IN ({SQL_INTEGER_TYPES}) "
                f"THEN CAST(({integer} >> {shift}) & {LOW} AS UBIGINT) "
                f"ELSE CAST('0x' || substr({digest}, {first_digit}, 8) AS UBIGINT) END")

    # the digest's first 8 hex digits are the word's high half
    return half(0, 9), half(32, 1)


def _sql_times(x: str, factor: int) -> str:
    return f"(({x} * {factor}::UBIGINT) & {LOW}::UBIGINT)"


def _sql_rotate(x: str, bits: int) -> str:
    return f"((({x} << {bits}) | ({x} >> {32 - bits})) & {LOW}::UBIGINT)"


def _sql_block(h: str, k: str) -> str:
    """One 4-byte block ``k`` mixed into the state ``h`` (both names of lambda variables)."""
    k = _sql_times(_sql_rotate(_sql_times(k, _C1), 15), _C2)
    return f"((({_sql_rotate(f'xor({h}, {k})', 13)}) * 5 + {_ADD}::UBIGINT) & {LOW}::UBIGINT)"


def _sql_finish(h: str) -> str:
    """MurmurHash3's finaliser (fmix32) of ``h``, a name or a cheap expression (it appears 8
    times). A BIGINT."""
    h = _sql_times(f"xor({h}, {h} >> 16)", _F1)
    h = _sql_times(f"xor({h}, {h} >> 13)", _F2)
    return f"CAST(xor({h}, {h} >> 16) AS BIGINT)"


def sql(seed: str, *values: str) -> str:
    """SQL for ``hash(seed, *values)``: a BIGINT in [0, 2^32). ``seed`` and ``values`` are SQL
    expressions (columns, parameters of a macro, literals).

    The state goes through a ``list_reduce`` over the blocks and the finalisation through a
    ``list_transform`` lambda, so that each intermediate value is named once: written as
    nested expressions, every step would repeat its whole input."""
    blocks = ", ".join(half for value in (seed, *values) for half in _sql_halves(value))
    state = f"list_reduce([{blocks}], lambda h, k: {_sql_block('h', 'k')}, 0::UBIGINT)"
    length = 8 * (1 + len(values))
    return f"list_transform([xor({state}, {length}::UBIGINT)], lambda h: {_sql_finish('h')})[1]"


def sql_round(value: str, key: str) -> str:
    """SQL for the keyed round function of the candidate sampling's Feistel network
    (render/protocol.py): MurmurHash3's finaliser of ``value xor key``, for a ``value`` in
    [0, 2^32) and a BIGINT ``key`` (its low 32 bits are used): lambda names or cheap expressions.
    A BIGINT in [0, 2^32)."""
    return _sql_finish(f"xor(CAST({value} AS UBIGINT), CAST({key} & {LOW} AS UBIGINT))")


def _np_finish(h: np.ndarray) -> np.ndarray:
    h = _np_times(h ^ (h >> np.uint64(16)), _F1)
    h = _np_times(h ^ (h >> np.uint64(13)), _F2)
    return h ^ (h >> np.uint64(16))


def _np_times(x: np.ndarray, factor: int) -> np.ndarray:
    return (x * np.uint64(factor)) & np.uint64(LOW)


def _np_rotate(x: np.ndarray, bits: int) -> np.ndarray:
    return ((x << np.uint64(bits)) | (x >> np.uint64(32 - bits))) & np.uint64(LOW)


def of_integers(seed: int, *values: int | np.ndarray) -> np.ndarray:
    """``hash(seed, *values)`` for integer seed and values (scalars or int64 arrays, broadcast),
    as uint64 in [0, 2^32): the numpy form of :func:`sql` for engines that draw outside DuckDB."""
    h = np.uint64(0)
    for value in (seed, *values):
        word = np.asarray(value, dtype=np.int64).view(np.uint64)
        for k in (word & np.uint64(LOW), word >> np.uint64(32)):
            k = _np_times(_np_rotate(_np_times(k, _C1), 15), _C2)
            h = (_np_rotate(h ^ k, 13) * np.uint64(5) + np.uint64(_ADD)) & np.uint64(LOW)
    return _np_finish(h ^ np.uint64(8 * (1 + len(values))))
