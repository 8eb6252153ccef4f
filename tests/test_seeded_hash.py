"""duckrank's seeded hash (duckrank/seeded_hash.py), the seed of every split, candidate sample and
sampled pair: the SQL form (in the installed DuckDB and in the DuckDB shell of the oldest
supported line), the numpy form, and an independent reference written here from the definition
in the module's docstring with hashlib's MD5 and the mmh3 package's MurmurHash3, agree; and a
few values are pinned, so that a change of the definition (which would change every user's
splits) cannot pass unnoticed."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import mmh3
import numpy as np
import pytest

from duckrank import seeded_hash


def _word(value: int | str) -> int:
    """An integer's two's complement bits; text: the first 16 hex digits of its MD5."""
    if isinstance(value, int):
        return value % 2**64
    return int(hashlib.md5(value.encode()).hexdigest()[:16], 16)


def _reference(seed: int, *values: int | str) -> int:
    """MurmurHash3_x86_32 (the mmh3 package, seed 0) of the words' little-endian bytes."""
    data = b"".join(_word(value).to_bytes(8, "little") for value in (seed, *values))
    return mmh3.hash(data, 0, signed=False)


def _one(sql: str) -> tuple:
    """The one row of ``sql``, on a connection of its own (fetched whole: DuckDB 2.0.0 keeps a
    connection busy until its result is)."""
    with duckdb.connect() as con:
        return con.execute(sql).fetchall()[0]


def _literal(value: int | str) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return f"CAST({value} AS BIGINT)"


CASES = [
    (0, 1, 2), (0, 2, 1), (42, 7), (-1, -1, -1), (-(2**31), 2**31 - 1),
    (2**63 - 1, -(2**63), 0), (3, "user 7", "item 9"), (3, "é", ""), (0, 5, "random"),
]


# The reference's values for CASES, computed once (2026-11-28) and pinned: they must never change,
# since every split and sample of every user depends on them.
PINNED = [2861039940, 1784159408, 1713287821, 2902918215, 1929987202, 2076458115,
          665957282, 709743020, 1476349341]


@pytest.mark.parametrize("case", CASES)
def test_sql_equals_the_reference(case: tuple) -> None:
    seed, *values = case
    expression = seeded_hash.sql(str(seed), *map(_literal, values))
    assert _one(f"SELECT {expression}")[0] == _reference(seed, *values)


def test_numpy_equals_the_reference() -> None:
    j = np.array([0, 1, -1, 2**62, -(2**63), 2**63 - 1], dtype=np.int64)
    for seed in (0, -7, 2**40):
        got = seeded_hash.of_integers(seed, j, 1)
        assert [int(x) for x in got] == [_reference(seed, int(x), 1) for x in j]


def test_pinned_values() -> None:
    assert [_reference(*case) for case in CASES] == PINNED
    assert int(seeded_hash.of_integers(7, 0, 0)) == 2728435078
    assert _one(f"SELECT {seeded_hash.sql('0', '5')}, {seeded_hash.sql('0', _literal('5'))}"
                ) == (2432271766, 4259071100)


def test_integer_types_hash_alike_and_text_by_its_text() -> None:
    """A value's word depends on whether it is an integer, not on its width; other types hash
    by their text form (so a DATE and its text hash alike)."""
    values = ["CAST(5 AS TINYINT)", "CAST(5 AS UINTEGER)", "CAST(5 AS BIGINT)",
              _literal("2024-01-02"), "DATE '2024-01-02'"]
    rows = _one("SELECT " + ", ".join(seeded_hash.sql("1", value) for value in values))
    assert rows[0] == rows[1] == rows[2] == _reference(1, 5)
    assert rows[3] == rows[4] == _reference(1, "2024-01-02")


def test_null_gives_null() -> None:
    assert _one(f"SELECT {seeded_hash.sql('0', 'NULL::BIGINT')}") == (None,)


def _shell() -> str | None:
    found = Path(sys.executable).parent / "duckdb"
    return str(found) if found.exists() else shutil.which("duckdb")


# The shell is the same in both of scripts/test's runs: the oldest-DuckDB venv (test-core) has
# none, and the whole suite runs this.
@pytest.mark.whole_suite_only
def test_the_oldest_duckdb_shell_computes_the_same() -> None:
    """The test extra installs the DuckDB shell of the oldest supported line (1.4): the same
    SQL gives the same values there, so a seed draws the same rows in every supported DuckDB."""
    shell = _shell()
    if shell is None:
        pytest.skip("no duckdb shell: pip install -e '.[test]'")
    selects = ", ".join(seeded_hash.sql(str(seed), *map(_literal, values))
                        for seed, *values in CASES)
    out = subprocess.run([shell, "-csv", "-noheader", "-c", f"SELECT {selects}"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert [int(x) for x in out.strip().split(",")] == [_reference(*case) for case in CASES]
