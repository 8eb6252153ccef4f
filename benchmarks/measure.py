"""One measurement, in the process that runs this module (benchmarks.run starts a fresh one for
each, so no measurement inherits another's caches, allocator state or JIT).

    python -m benchmarks.measure '{"kind": "sql", "setup": [...], "query": "...", "threads": 2}'

Prints one JSON line. For ``"sql"``: after the setup statements, 1 warm-up and ``repeat`` timed
runs of the query; ``seconds`` and ``cpu_seconds`` are medians (wall clock, and this process's
CPU time), ``peak_mb`` is the peak resident memory during the runs minus the resident memory
before them (the kernel's high-water mark is reset through /proc/self/clear_refs), ``rss_mb``
the absolute peak. ``"ranx"`` and ``"pytrec"`` time getting the table out of DuckDB into the
tool's input (``export_seconds``) apart from the tool's own evaluation (``seconds``).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckrank


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def _reset_peak() -> float:
    Path("/proc/self/clear_refs").write_text("5")
    return _status_mb("VmRSS")


def _timed(run: Callable[[], Any], repeat: int) -> dict[str, Any]:
    value = run()  # warm-up
    before = _reset_peak()
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        value = run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    peak = _status_mb("VmHWM")
    return {
        "seconds": statistics.median(walls),
        "cpu_seconds": statistics.median(cpus),
        "runs": walls,
        "peak_mb": peak - before,
        "rss_mb": peak,
        "value": value,
    }


def _connect(spec: dict[str, Any]):
    con = duckrank.connect(
        config={"threads": spec.get("threads", 2)}, native=spec.get("native", True)
    )
    for statement in spec.get("setup", []):
        con.execute(statement)
    return con


def measure_sql(spec: dict[str, Any]) -> dict[str, Any]:
    con = _connect(spec)
    return _timed(lambda: con.execute(spec["query"]).fetchall()[0][0], spec.get("repeat", 3))


def _export(con, k_max: int) -> tuple[dict, dict]:
    """qrels and run as the nested dicts both tools take (string ids; rank r scores -r)."""
    table = con.execute(f"SELECT uid, rec[1:{k_max}] AS rec, truth FROM ev").to_arrow_table()
    uids = [str(u) for u in table["uid"].to_pylist()]
    qrels = {
        u: {str(item): 1 for item in items}
        for u, items in zip(uids, table["truth"].to_pylist(), strict=True)
    }
    run = {
        u: {str(item): float(-rank) for rank, item in enumerate(items)}
        for u, items in zip(uids, table["rec"].to_pylist(), strict=True)
    }
    return qrels, run


def measure_peer(spec: dict[str, Any]) -> dict[str, Any]:
    con = _connect(spec)
    ks = spec["ks"]
    start = time.perf_counter()
    qrels, run = _export(con, max(ks))
    if spec["kind"] == "ranx":
        from ranx import Qrels, Run, evaluate

        qrels, run = Qrels(qrels), Run(run)
        export = time.perf_counter() - start
        results = {
            k: _timed(lambda k=k: float(evaluate(qrels, run, f"ndcg@{k}")), spec["repeat"])
            for k in ks
        }
    else:
        import pytrec_eval

        export = time.perf_counter() - start
        results = {}
        for k in ks:
            def evaluate(k: int = k) -> float:
                evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{k}"})
                scores = evaluator.evaluate(run)
                return statistics.fmean(s[f"ndcg_cut_{k}"] for s in scores.values())

            results[k] = _timed(evaluate, spec["repeat"])
    for result in results.values():
        result["export_seconds"] = export
    return {"by_k": results}


def main() -> None:
    spec = json.loads(sys.argv[1])
    result = measure_sql(spec) if spec["kind"] == "sql" else measure_peer(spec)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
