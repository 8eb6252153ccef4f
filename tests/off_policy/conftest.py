"""Shared inputs of the off-policy tests: obp's pinned values (obp_pins.npz, written by
make_obp_pins.py in obp's own venv) and a small hand-made log."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from duckrank.off_policy.arrays import bandit_log
from duckrank.render import off_policy

PINS = Path(__file__).with_name("obp_pins.npz")
OBP_PYTHON = Path("/tmp/venv-obp/bin/python")


def pins() -> dict[str, np.ndarray]:
    with np.load(PINS) as data:
        return {k: data[k] for k in data.files}


def obp_log(name: str, data: dict[str, np.ndarray] | None = None) -> pa.Table:
    """The single-action log ``name`` ('binary' or 'continuous') as duckrank's columns."""
    data = pins() if data is None else data
    prefix = f"{name}/input/"
    arrays = {k[len(prefix):]: v for k, v in data.items() if k.startswith(prefix)}
    return pa.table(bandit_log(**arrays))


# Four rounds, by hand: (segment, reward, pscore, action_prob, q_hat, v_hat); the weights
# w = action_prob / pscore are 0.5, 2, 1, 0. The tests write out each expected value from these.
HAND = pa.table({
    "segment": ["a", "a", "b", "b"],
    "reward": [1.0, 0.0, 1.0, 0.0],
    "pscore": [0.5, 0.25, 0.8, 0.5],
    "action_prob": [0.25, 0.5, 0.8, 0.0],
    "q_hat": [0.6, 0.2, 0.9, 0.1],
    "v_hat": [0.5, 0.3, 0.7, 0.4],
})


@pytest.fixture
def plain() -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with only the off-policy macros (no duckrank Python functions) and
    the hand log as table ``hand``."""
    con = duckdb.connect()
    for statement in off_policy.MACROS:
        con.execute(statement)
    con.register("hand_arrow", HAND)
    con.execute("CREATE TABLE hand AS SELECT * FROM hand_arrow")
    yield con
    con.close()
