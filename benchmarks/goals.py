"""Check the performance goals of the benchmark issues against a run's rows.

    .venv/bin/python -m benchmarks.goals [benchmarks/data/results.json]

Every ratio compares measurements of the same run (1,000,000 users unless a goal says otherwise).
The grid's goals are computed here from its rows; a script of its own
(``benchmarks/bench_<section>.py``) checks its goals itself and prints each as a line
``GOAL {"goal": ..., "measured": ..., "met": ...}`` (``print_goal``), which ``benchmarks.run``
keeps with the section's row.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.data import DATA_DIR
from duckrank.metrics.binary import METRICS

USERS = 1_000_000


def _seconds(rows: list[dict[str, Any]], **where: Any) -> float | None:
    for row in rows:
        if all(row.get(key) == value for key, value in where.items()) and "seconds" in row:
            return row["seconds"]
    return None


GOAL_PREFIX = "GOAL "


def print_goal(goal: str, measured: str, met: bool | None) -> None:
    """Print one goal of a script of its own, for ``benchmarks.run`` to collect."""
    print(GOAL_PREFIX + json.dumps({"goal": goal, "measured": measured, "met": met}), flush=True)


def script_goals(output: str) -> list[dict[str, Any]]:
    """The goals a script printed (``print_goal``) in its ``output``."""
    return [json.loads(line[len(GOAL_PREFIX):]) for line in output.splitlines()
            if line.startswith(GOAL_PREFIX)]


def _line(goal: str, measured: str, met: bool | None) -> str:
    verdict = "not measured" if met is None else ("met" if met else "**not met**")
    return f"| {goal} | {measured} | {verdict} |"


def _ratio_goal(
    goal: str, bound: float, direction: str, pairs: dict[str, tuple[float | None, float | None]]
) -> list[str]:
    """One goal line over every metric's ratio a / b: ndcg's ratio and the worst one."""
    ratios = {name: a / b for name, (a, b) in pairs.items() if a and b}
    if not ratios:
        return []
    pick = max if direction == "at most" else min
    worst = pick(ratios, key=ratios.get)
    met = ratios[worst] <= bound if direction == "at most" else ratios[worst] >= bound
    measured = f"ndcg {ratios.get('ndcg', float('nan')):.2f}x, worst {worst} {ratios[worst]:.2f}x"
    return [_line(goal, measured, met)]


def goal_lines(rows: list[dict[str, Any]]) -> list[str]:  # noqa: C901
    main = [r for r in rows if r.get("section") == "main" and r.get("users") == USERS]
    lines = ["| goal | measured | verdict |", "|---|---|---|"]

    def at(query: str, k: int, ids: str = "bigint", threads: int = 2) -> float | None:
        return _seconds(main, query=query, k=k, ids=ids, threads=threads)

    for k, floor_goal, hand_goal in ((10, 1.5, 6), (100, 2.5, 5)):
        ndcg, floor, hand = at("ndcg", k), at("scan floor", k), at("hand SQL ndcg", k)
        if None in (ndcg, floor, hand):
            lines.append(_line(f"ndcg@{k} vs floor and hand SQL", "–", None))
            continue
        lines.append(_line(f"ndcg@{k} within {floor_goal}x of the scan floor",
                           f"{ndcg / floor:.2f}x ({ndcg:.3f} s vs {floor:.3f} s)",
                           ndcg / floor <= floor_goal))
        lines.append(_line(f"ndcg@{k} at least {hand_goal}x faster than hand-written SQL",
                           f"{hand / ndcg:.2f}x ({hand:.3f} s vs {ndcg:.3f} s)",
                           hand / ndcg >= hand_goal))
    for k in (10, 100):
        ndcg = at("ndcg", k)
        ratios = {m.name: at(m.name, k) / ndcg for m in METRICS if ndcg and at(m.name, k)}
        if ratios:
            worst = max(ratios, key=ratios.get)
            lines.append(_line(f"every binary metric within 2x of ndcg@{k}",
                               f"worst {worst} {ratios[worst]:.2f}x", ratios[worst] <= 2))
    for k in (10, 100):
        lines += _ratio_goal(f"VARCHAR ids within 2x of BIGINT (k={k})", 2, "at most", {
            m.name: (at(m.name, k, ids="varchar"), at(m.name, k)) for m in METRICS})
    read_varchar, ndcg_bigint = at("list read", 10, ids="varchar"), at("ndcg", 10)
    if read_varchar and ndcg_bigint:
        lines.append(
            "| context: reading the VARCHAR lists alone (no metric) vs BIGINT ndcg@10 | "
            f"{read_varchar / ndcg_bigint:.2f}x ({read_varchar:.3f} s vs {ndcg_bigint:.3f} s) | "
            "a bound on the goal above |")
    for k in (10, 100):
        lines += _ratio_goal(f"1 -> 2 threads at least 1.6x faster (k={k})", 1.6, "at least", {
            m.name: (at(m.name, k, threads=1), at(m.name, k)) for m in METRICS})
    stream = {r["users"]: r["rss_mb"] for r in rows
              if r.get("section") == "streaming" and "rss_mb" in r}
    if len(stream) >= 2:
        small, large = min(stream), max(stream)
        lines.append(_line("peak memory does not grow with users (Parquet stream)",
                           f"{stream[small]:.0f} MB at {small:,} users, {stream[large]:.0f} MB "
                           f"at {large:,}", stream[large] <= stream[small] * 1.25))
    peers = [r for r in rows if r.get("section") == "peers"]
    for tool in ("ranx", "pytrec"):
        for k in (10, 100):
            ours = _seconds(peers, tool="duckrank", k=k)
            theirs = [r for r in peers if r.get("tool") == tool and r.get("k") == k
                      and "seconds" in r]
            if ours and theirs:
                total = theirs[0]["export_seconds"] + theirs[0]["seconds"]
                lines.append(_line(
                    f"faster end to end than {tool} (ndcg@{k}, 100,000 users)",
                    f"{total / ours:.0f}x faster (export {theirs[0]['export_seconds']:.2f} s + "
                    f"compute {theirs[0]['seconds']:.3f} s vs {ours:.3f} s)", total > ours))
    for row in rows:
        for goal in script_goals(row.get("output", "")):
            lines.append(_line(f"{row['section']}: {goal['goal']}", goal["measured"],
                               goal["met"]))
    return lines


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA_DIR / "results.json"
    rows = json.loads(path.read_text())["rows"]
    print("\n".join(goal_lines(rows)))


if __name__ == "__main__":
    main()
