"""Time the off-policy estimators (issue 31) against the Open Bandit Pipeline, load included.

    .venv/bin/python -m benchmarks.bench_off_policy             # 10,000,000 logged rounds
    .venv/bin/python -m benchmarks.bench_off_policy --quick     # 1,000,000 rounds
    .venv/bin/python -m benchmarks.bench_off_policy --rounds 300000 --obp /tmp/venv-obp/bin/python

The log: ``--rounds`` rounds, 10 actions, a softmax logging policy over random action scores, an
epsilon-greedy evaluation policy (eps 0.3) on the true expected rewards, Bernoulli rewards and
a noisy reward model (numpy, seeded; written once to benchmarks/data/, in blocks of 1,000,000
rounds, so that building it holds one block in memory). duckrank reads one Parquet file of the
per-round columns (reward, pscore, action_prob, q_hat, v_hat: ``bandit_log``); obp reads its
own inputs from .npy files (reward, action, pscore, and action_dist and
estimated_rewards_by_reg_model over every action), which it needs whole in memory.

Each side runs in a fresh process, timed from before reading its inputs to the estimates:

* ``duckrank SQL``: one query of the eight estimators obp runs (dm, ips, snips, dr, sndr,
  switch_dr, dr_os, sg_ips, with the same lambda_) and the four diagnostics over
  ``read_parquet``, in ``duckrank.connect()`` (2 threads);
* ``duckrank.off_policy``: the same estimators with standard errors (the self-normalised ones'
  round values joined with their mean weight), no bootstrap;
* ``obp``: ``OffPolicyEvaluation.estimate_policy_values`` with the eight estimators
  (benchmarks/obp_side.py in obp's venv, ``--obp``; skipped when it is absent).

Prints seconds, CPU seconds and the peak resident memory of each process, the ratios to obp, and
the largest relative difference between the two sides' estimates (a check, not a timing).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.data import DATA_DIR
from duckrank.off_policy import ESTIMATORS as RECORDS

SEED = 20261128
N_ACTIONS = 10
BLOCK = 1_000_000
LAMBDAS = {"switch_dr": 10.0, "dr_os": 10.0, "sg_ips": 0.1}  # as benchmarks/obp_side.py
ESTIMATORS = ("dm", "ips", "snips", "dr", "sndr", "switch_dr", "dr_os", "sg_ips")
DIAGNOSTICS = ("ope_ess", "ope_support", "ope_max_weight", "ope_mean_weight")


def _block(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """obp's arrays for ``n`` rounds."""
    scores = rng.normal(size=(n, N_ACTIONS))
    expected = 1.0 / (1.0 + np.exp(-rng.normal(size=(n, N_ACTIONS))))
    logging = np.exp(scores - scores.max(axis=1, keepdims=True))
    logging /= logging.sum(axis=1, keepdims=True)
    action = (logging.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1).clip(0, N_ACTIONS - 1)
    rounds = np.arange(n)
    evaluation = np.full((n, N_ACTIONS), 0.3 / N_ACTIONS)
    evaluation[rounds, expected.argmax(axis=1)] += 0.7
    model = np.clip(expected + rng.normal(0, 0.1, size=expected.shape), 0, 1)
    return {"reward": (rng.random(n) < expected[rounds, action]).astype(np.float64),
            "action": action, "pscore": logging[rounds, action],
            "action_dist": evaluation[:, :, None], "estimated_rewards": model[:, :, None]}


def make_data(rounds: int) -> Path:
    """benchmarks/data/off_policy_<rounds>/: log.parquet and obp's .npy files."""
    from duckrank.off_policy.arrays import bandit_log

    folder = DATA_DIR / f"off_policy_{rounds}"
    if (folder / "done").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    shapes = {"reward": (rounds,), "action": (rounds,), "pscore": (rounds,),
              "action_dist": (rounds, N_ACTIONS, 1), "estimated_rewards": (rounds, N_ACTIONS, 1)}
    dtypes = {"action": np.int64}
    npy = {name: np.lib.format.open_memmap(folder / f"{name}.npy", mode="w+",
                                           dtype=dtypes.get(name, np.float64), shape=shape)
           for name, shape in shapes.items()}
    rng = np.random.default_rng(SEED)
    writer = None
    for start in range(0, rounds, BLOCK):
        block = _block(rng, min(BLOCK, rounds - start))
        for name, array in block.items():
            npy[name][start:start + len(array)] = array
        log = pa.table(bandit_log(block["reward"], block["action"], block["pscore"],
                                  block["action_dist"], block["estimated_rewards"]))
        writer = writer or pq.ParquetWriter(folder / "log.parquet", log.schema)
        writer.write_table(log, row_group_size=BLOCK // 8)
    writer.close()
    for array in npy.values():
        array.flush()
    (folder / "done").write_text("")
    return folder


def _sql(path: Path) -> str:
    lam = {name: f", lambda_ := {value!r}" for name, value in LAMBDAS.items()}
    args = {"dm": "v_hat", "ips": "reward, pscore, action_prob",
            "snips": "reward, pscore, action_prob", "sg_ips": "reward, pscore, action_prob"}
    calls = [f"{name}({args.get(name, 'reward, pscore, action_prob, q_hat, v_hat')}"
             f"{lam.get(name, '')}) AS {name}" for name in ESTIMATORS]
    calls += [f"{d}(pscore, action_prob) AS {d}" for d in DIAGNOSTICS]
    return f"SELECT {', '.join(calls)} FROM read_parquet('{path}')"


# Run in a fresh process by ``_duckrank``: prints JSON (seconds, CPU seconds, peak MB, values).
_CHILD = """
import json, sys, time
from pathlib import Path
import duckrank
from duckrank.reports.off_policy import off_policy
kind, path, sql = sys.argv[1:4]
lambdas, functions = map(json.loads, sys.argv[4:])
start, cpu = time.perf_counter(), time.process_time()
if kind == "sql":
    con = duckrank.connect(functions=functions, native=False)
    con.execute("SET threads = 2")
    con.execute("SET enable_progress_bar = false")
    row = con.execute(sql).fetchone()
    values = dict(zip([d[0] for d in con.description], row))
else:
    result = off_policy(path, list(lambdas.pop("estimators")), lambdas=lambdas, interval=False)
    values = dict(zip(result["estimator"], result["estimate"]))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = next(int(l.split()[1]) / 1024 for l in Path("/proc/self/status").read_text().splitlines()
            if l.startswith("VmHWM:"))
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "rss_mb": peak, "values": values}))
"""


def _duckrank(kind: str, folder: Path) -> dict:
    path = folder / "log.parquet"
    options = {**LAMBDAS, "estimators": ESTIMATORS}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(path), _sql(path), json.dumps(options),
         json.dumps([*ESTIMATORS, *DIAGNOSTICS])],
        check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _obp(python: str, folder: Path) -> dict | None:
    if not Path(python).exists():
        return None
    script = Path(__file__).with_name("obp_side.py")
    done = subprocess.run([python, str(script), "time", str(folder)], check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000_000)
    parser.add_argument("--quick", action="store_true", help="1,000,000 rounds")
    parser.add_argument("--obp", default="/tmp/venv-obp/bin/python",
                        help="obp's Python (default /tmp/venv-obp/bin/python)")
    args = parser.parse_args()
    rounds = 1_000_000 if args.quick else args.rounds
    folder = make_data(rounds)
    print(f"off-policy estimators, {rounds:,} logged rounds, {N_ACTIONS} actions")
    runs = {"duckrank SQL (8 estimators + 4 diagnostics)": _duckrank("sql", folder),
            "duckrank.off_policy (+ standard errors)": _duckrank("python", folder)}
    obp = _obp(args.obp, folder)
    if obp is not None:
        runs["obp estimate_policy_values (8 estimators)"] = obp
    for name, run in runs.items():
        ratio = "" if obp is None or run is obp else (
            f"  {obp['seconds'] / run['seconds']:6.1f}x faster than obp "
            f"(CPU {obp['cpu_seconds'] / run['cpu_seconds']:.1f}x)")
        print(f"{name:46s} {run['seconds']:8.2f} s  CPU {run['cpu_seconds']:8.2f} s  "
              f"peak {run['rss_mb']:7.0f} MB{ratio}")
    if obp is not None:
        ours = runs["duckrank SQL (8 estimators + 4 diagnostics)"]["values"]
        named = {r.obp_name: r.name for r in RECORDS}
        worst = max(abs(ours[named[k]] - v) / abs(v) for k, v in obp["values"].items())
        print(f"largest relative difference of the estimates, duckrank vs obp: {worst:.1e}")


if __name__ == "__main__":
    main()
