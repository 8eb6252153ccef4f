"""The single-action estimators and the diagnostics as SQL aggregates: obp 0.5.7's values on its
synthetic data (pinned, and live when obp's venv exists), hand calculations on a four-round
log, GROUP BY, empty groups, and bad input."""

from __future__ import annotations

import math
import subprocess

import duckdb
import numpy as np
import pytest

from duckrank.off_policy import ESTIMATORS
from duckrank.off_policy.single_action import DR_OS, SG_IPS

from .conftest import HAND, OBP_PYTHON, PINS, obp_log, pins

# The pinned (estimator, lambda_) pairs: make_obp_pins.SINGLE.
PINNED = [
    (name.split("/")[2], None if name.split("/")[3] == "None" else float(name.split("/")[3]))
    for name in pins() if name.startswith("binary/obp/")
]


def _call(name: str, lam: float | None) -> str:
    record = next(e for e in ESTIMATORS if e.name == name)
    named = "" if lam is None else (
        ", lambda_ := 'inf'::DOUBLE" if math.isinf(lam) else f", lambda_ := {lam!r}")
    return f"{name}({', '.join(record.inputs)}{named})"


@pytest.mark.parametrize("dataset", ["binary", "continuous", "positions"])
def test_every_estimator_gives_obps_value(plain: duckdb.DuckDBPyConnection, dataset: str
                                          ) -> None:
    """Expected: obp 0.5.7's estimate_policy_value on SyntheticBanditDataset (seed 12345) and on
    random arrays with three positions (obp's position argument),
    pinned by make_obp_pins.py. Every record is pinned, with several lambda_ each."""
    data = pins()
    plain.register("log", obp_log(dataset, data))
    assert {name for name, _ in PINNED} == {e.name for e in ESTIMATORS}
    calls = ", ".join(_call(name, lam) for name, lam in PINNED)
    values = plain.execute(f"SELECT {calls} FROM log").fetchone()
    for (name, lam), value in zip(PINNED, values, strict=True):
        expected = float(data[f"{dataset}/obp/{name}/{lam}"])
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-12), (name, lam)


@pytest.mark.skipif(not OBP_PYTHON.exists(), reason="obp's venv /tmp/venv-obp is not set up "
                    "(make_obp_pins.py says how)")
def test_the_pins_are_what_obp_gives_now(tmp_path) -> None:
    """Live: make_obp_pins.py run again in obp's venv gives the pinned file's values."""
    out = tmp_path / "pins.npz"
    subprocess.run([str(OBP_PYTHON), str(PINS.with_name("make_obp_pins.py")), str(out)],
                   check=True, capture_output=True)
    with np.load(out) as fresh:
        pinned = pins()
        assert set(fresh.files) == set(pinned)
        for key in fresh.files:
            np.testing.assert_allclose(fresh[key], pinned[key], rtol=1e-12, err_msg=key)


def _one(con: duckdb.DuckDBPyConnection, call: str, where: str = "") -> float | None:
    return con.execute(f"SELECT {call} FROM hand {where}").fetchone()[0]


# Expected values by hand from conftest.HAND (w = 0.5, 2, 1, 0; r = 1, 0, 1, 0;
# q_hat = 0.6, 0.2, 0.9, 0.1; v_hat = 0.5, 0.3, 0.7, 0.4).
HAND_VALUES = [
    # (0.5 + 0.3 + 0.7 + 0.4) / 4
    ("dm(v_hat)", 0.475),
    # (1 * 0.5 + 0 + 1 * 1 + 0) / 4
    ("ips(reward, pscore, action_prob)", 0.375),
    # min(w, 0.75) = 0.5, 0.75, 0.75, 0: (0.5 + 0.75) / 4
    ("ips(reward, pscore, action_prob, lambda_ := 0.75)", 0.3125),
    # sum(w r) / sum(w) = 1.5 / 3.5
    ("snips(reward, pscore, action_prob)", 3 / 7),
    # v + w (r - q): 0.5 + 0.5 * 0.4, 0.3 + 2 * -0.2, 0.7 + 0.1, 0.4: 1.8 / 4
    ("dr(reward, pscore, action_prob, q_hat, v_hat)", 0.45),
    # min(w, 1) = 0.5, 1, 1, 0: 0.7, 0.3 - 0.2, 0.8, 0.4: 2.0 / 4
    ("dr(reward, pscore, action_prob, q_hat, v_hat, lambda_ := 1)", 0.5),
    # 0.475 + (0.2 - 0.4 + 0.1 + 0) / 3.5
    ("sndr(reward, pscore, action_prob, q_hat, v_hat)", 0.475 - 0.1 / 3.5),
    # w = 2 > 1 switches round 2 to v_hat alone: (0.7 + 0.3 + 0.8 + 0.4) / 4
    ("switch_dr(reward, pscore, action_prob, q_hat, v_hat, lambda_ := 1)", 0.55),
    # default lambda_ = inf: DR
    ("switch_dr(reward, pscore, action_prob, q_hat, v_hat)", 0.45),
    # w' = w / (w^2 + 1) = 0.4, 0.4, 0.5, 0: 0.5 + 0.16, 0.3 - 0.08, 0.7 + 0.05, 0.4: 2.03 / 4
    ("dr_os(reward, pscore, action_prob, q_hat, v_hat, lambda_ := 1)", 0.5075),
    # default lambda_ = 0: w' = 0 (0 / 0 at w = 0 defined as 0): the direct method
    ("dr_os(reward, pscore, action_prob, q_hat, v_hat)", 0.475),
    ("dr_os(reward, pscore, action_prob, q_hat, v_hat, lambda_ := 'inf'::DOUBLE)", 0.45),
    # w' = w / (0.5 + 0.5 w) = 2/3, 4/3, 1, 0: (2/3 + 1) / 4
    ("sg_ips(reward, pscore, action_prob, lambda_ := 0.5)", 5 / 12),
    # lambda_ = 1: w' = 1 where w > 0, 0 where w = 0: (1 + 1) / 4
    ("sg_ips(reward, pscore, action_prob, lambda_ := 1)", 0.5),
    ("sg_ips(reward, pscore, action_prob)", 0.375),
    # 0.5 + (2/3) 0.4, 0.3 - (4/3) 0.2, 0.7 + 0.1, 0.4: 2.0 / 4
    ("sg_dr(reward, pscore, action_prob, q_hat, v_hat, lambda_ := 0.5)", 0.5),
    # (0.5 + 2 + 1 + 0)^2 / (0.25 + 4 + 1 + 0)
    ("ope_ess(pscore, action_prob)", 12.25 / 5.25),
    ("ope_support(pscore, action_prob)", 0.75),
    ("ope_max_weight(pscore, action_prob)", 2.0),
    ("ope_mean_weight(pscore, action_prob)", 0.875),
]


@pytest.mark.parametrize(("call", "expected"), HAND_VALUES)
def test_hand_calculations(plain: duckdb.DuckDBPyConnection, call: str, expected: float
                           ) -> None:
    assert _one(plain, call) == pytest.approx(expected, rel=1e-15, abs=1e-15)


def test_group_by_a_segment(plain: duckdb.DuckDBPyConnection) -> None:
    """Segment a: w = 0.5, 2, r = 1, 0; segment b: w = 1, 0, r = 1, 0 (by hand)."""
    rows = plain.execute(
        "SELECT segment, ips(reward, pscore, action_prob), snips(reward, pscore, action_prob), "
        "ope_ess(pscore, action_prob) FROM hand GROUP BY segment ORDER BY segment").fetchall()
    # a: ips (0.5 + 0) / 2, snips 0.5 / 2.5, ess 2.5^2 / 4.25; b: ips 1 / 2, snips 1 / 1, ess 1
    assert rows == [("a", pytest.approx(0.25), pytest.approx(0.2),
                     pytest.approx(6.25 / 4.25)), ("b", 0.5, 1.0, 1.0)]


def test_empty_and_unsupported_groups_are_null(plain: duckdb.DuckDBPyConnection) -> None:
    every = ", ".join(_call(e.name, None) for e in ESTIMATORS)
    assert set(plain.execute(f"SELECT {every} FROM hand WHERE false").fetchone()) == {None}
    # Only round 4 (w = 0): the self-normalised estimators and the ESS divide by sum w = 0.
    only = "WHERE action_prob = 0"
    assert _one(plain, "snips(reward, pscore, action_prob)", only) is None
    assert _one(plain, "sndr(reward, pscore, action_prob, q_hat, v_hat)", only) is None
    assert _one(plain, "ope_ess(pscore, action_prob)", only) is None
    assert _one(plain, "ips(reward, pscore, action_prob)", only) == 0.0
    # obp's DRos gives NaN here (0 * 0 / (0 + 0)); duckrank the limit, w' = 0.
    assert _one(plain, "dr_os(reward, pscore, action_prob, q_hat, v_hat)", only) == 0.4


BAD = [
    ("ips(reward, 0, action_prob)", "ips: pscore must be in (0, 1], got 0"),
    ("ips(reward, 1.5, action_prob)", "ips: pscore must be in (0, 1], got 1.5"),
    ("ips(reward, NULL, action_prob)", "ips: pscore must be in (0, 1], got NULL"),
    ("ips(reward, 'nan'::DOUBLE, action_prob)", "ips: pscore must be in (0, 1], got nan"),
    ("snips(reward, pscore, -0.1)", "snips: action_prob must be in [0, 1], got -0.1"),
    ("dr(reward, pscore, 2, q_hat, v_hat)", "dr: action_prob must be in [0, 1], got 2"),
    ("ips(NULL, pscore, action_prob)", "ips: reward must be a finite number, got NULL"),
    ("sndr('inf'::DOUBLE, pscore, action_prob, q_hat, v_hat)",
     "sndr: reward must be a finite number, got inf"),
    ("dr(reward, pscore, action_prob, NULL, v_hat)", "dr: q_hat must be a finite number, got NULL"),
    ("dm(NULL)", "dm: v_hat must be a finite number, got NULL"),
    ("ips(reward, pscore, action_prob, lambda_ := -1)",
     "ips: lambda_ must be a number in [0, inf], got -1"),
    ("dr_os(reward, pscore, action_prob, q_hat, v_hat, lambda_ := 'nan'::DOUBLE)",
     "dr_os: lambda_ must be a number in [0, inf], got nan"),
    ("sg_ips(reward, pscore, action_prob, lambda_ := 1.5)",
     "sg_ips: lambda_ must be a number in [0, 1], got 1.5"),
    ("sg_dr(reward, pscore, action_prob, q_hat, v_hat, lambda_ := NULL)",
     "sg_dr: lambda_ must be a number in [0, 1], got NULL"),
    ("ope_ess(0, action_prob)", "ope_ess: pscore must be in (0, 1], got 0"),
    ("ope_support(pscore, 1.01)", "ope_support: action_prob must be in [0, 1], got 1.01"),
]


@pytest.mark.parametrize(("call", "message"), BAD)
def test_bad_input_is_an_error_naming_it(plain: duckdb.DuckDBPyConnection, call: str,
                                         message: str) -> None:
    with pytest.raises(duckdb.Error, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        _one(plain, call)


def test_a_null_in_one_round_is_an_error_not_a_dropped_round(
        plain: duckdb.DuckDBPyConnection) -> None:
    plain.execute("UPDATE hand SET pscore = NULL WHERE segment = 'b' AND reward = 0")
    with pytest.raises(duckdb.Error, match=r"snips: pscore must be in \(0, 1\], got NULL"):
        _one(plain, "snips(reward, pscore, action_prob)")


def test_integer_and_boolean_rewards_read_as_numbers(plain: duckdb.DuckDBPyConnection) -> None:
    """obp's reward arrays are numbers; a BOOLEAN click or INTEGER column reads as 1 and 0."""
    for column in ("reward::BOOLEAN", "reward::INTEGER"):
        assert _one(plain, f"ips({column}, pscore, action_prob)") == 0.375


def test_the_hyperparameters_check_in_python_as_in_sql() -> None:
    """One option (``duckrank.options``) gives both checks: infinity is in the clipping
    thresholds' domain, NaN and text in none."""
    DR_OS.hyperparameter.check("dr_os", math.inf)
    with pytest.raises(ValueError, match=r"sg_ips: lambda_ must be a number in \[0, 1\], got 2"):
        SG_IPS.hyperparameter.check("sg_ips", 2)
    with pytest.raises(ValueError, match=r"dr_os: lambda_ must be a number in \[0, inf\], "
                       "got nan"):
        DR_OS.hyperparameter.check("dr_os", math.nan)
    with pytest.raises(ValueError, match="got '1'"):
        DR_OS.hyperparameter.check("dr_os", "1")


def test_every_record_is_documented_and_the_docs_are_current() -> None:
    """docs/off-policy.md's reference part is rendered from the records (python -m
    duckrank.render); each record states its obp class, formula, undefined cases and source."""
    from duckrank.off_policy import RECORDS
    from duckrank.render import off_policy

    text = off_policy.DOC_FILE.read_text()
    assert off_policy.updated(text) == text, "run: python -m duckrank.render"
    for record in RECORDS:
        assert f"### `{record.name}`" in text
        assert record.formula and record.undefined and record.source, record.name
        assert getattr(record, "obp_class", "obp") in text


def test_registered_by_duckrank_connect() -> None:
    """The macros as duckrank.connect() registers them (the catalogue of sql_statements):
    test_hand_calculations' values."""
    import duckrank

    con = duckrank.connect(functions=["snips", "dr_os", "ope_ess"], native=False)
    con.register("hand", HAND)
    assert con.execute(
        "SELECT snips(reward, pscore, action_prob), "
        "dr_os(reward, pscore, action_prob, q_hat, v_hat, lambda_ := 1), "
        "ope_ess(pscore, action_prob) FROM hand").fetchone() == (
        pytest.approx(3 / 7), pytest.approx(0.5075), pytest.approx(12.25 / 5.25))
