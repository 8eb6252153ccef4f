"""Time xCLiMF's training (duckrank.models.xclimf): ratings per second per epoch.

The paper's cost is O(d n S) per epoch (d factors, n ratings per user, S ratings): one step per
user over an n x n matrix of score differences. So the throughput is measured at 100,000 and
1,000,000 ratings for two per-user sizes: n = 10 (the paper's "Given 10" training sets) and
n = 100 (MovieLens 1M has 165 ratings per user on average).

    .venv/bin/python -m benchmarks.bench_models            # 100,000 and 1,000,000 ratings
    .venv/bin/python -m benchmarks.bench_models --quick    # 100,000 ratings, one epoch

Data: users with about n distinct items each, drawn uniformly from a catalogue of S / 50 items
(at least 1,000), ratings uniform on 1..5, seeded. Prints one line per size: wall seconds per epoch
(Factors.seconds, which includes the objective after each epoch, over ``--epochs`` epochs of one
training run) and ratings per second, the same in CPU seconds of this process (the steadier
figure on a shared machine: training is single-threaded numpy), and the CPU seconds of one
objective evaluation (eq. 8, vectorised over users of equal n) on its own.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from duckrank.models import xclimf

SEED = 20240618


def ratings(total: int, per_user: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(users, items, ratings) codes 0..M-1 and 0..N-1, about ``per_user`` distinct items each."""
    rng = np.random.default_rng([SEED, total, per_user])
    users = total // per_user
    catalogue = max(1_000, total // 50)
    keys = np.unique(np.repeat(np.arange(users), per_user) * catalogue
                     + rng.integers(0, catalogue, users * per_user))
    _, items = np.unique(keys % catalogue, return_inverse=True)
    return keys // catalogue, items, rng.integers(1, 6, len(keys)).astype(np.float64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ratings", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--per-user", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100,000 ratings, one epoch")
    args = parser.parse_args()
    sizes = [100_000] if args.quick else args.ratings
    epochs = 1 if args.quick else args.epochs

    print(f"xCLiMF training, d = {xclimf.DIMS}, {epochs} epochs per run, numpy "
          f"{np.__version__}")
    for total in sizes:
        for per_user in args.per_user:
            users, items, graded = ratings(total, per_user)
            cpu = time.process_time()
            factors = xclimf.fit(users, items, graded, epochs=epochs, max_rating=5)
            per_epoch = factors.seconds / epochs
            cpu_per_epoch = (time.process_time() - cpu) / epochs
            u = np.stack(factors.users["factors"].to_numpy(zero_copy_only=False))
            v = np.stack(factors.items["factors"].to_numpy(zero_copy_only=False))
            cpu = time.process_time()
            xclimf.objective(u, v, users, items, xclimf.relevance(graded, 5.0))
            objective = time.process_time() - cpu
            count = len(graded)
            print(f"xclimf {count:>9,} ratings {len(u):>7,} users n={count / len(u):5.1f}"
                  f"  {per_epoch:7.3f} s/epoch {count / per_epoch:>9,.0f} ratings/s"
                  f"  CPU {cpu_per_epoch:7.3f} s/epoch {count / cpu_per_epoch:>9,.0f} ratings/s"
                  f"  objective CPU {objective:6.3f} s")


if __name__ == "__main__":
    main()
