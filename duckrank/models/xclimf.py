"""xCLiMF: matrix factorisation trained by gradient ascent on a smoothed lower bound of ERR.

Shi, Karatzoglou, Baltrunas, Larson and Hanjalic, "xCLiMF: Optimizing Expected Reciprocal Rank
for Data with Multiple Levels of Relevance", RecSys 2013 (equation numbers below are the
paper's). CLiMF (``duckrank.models.climf``) is the same training with binary
relevance, so it calls ``train`` here.

For user m with rated items I_m, scores f_mi = <U_m, V_i> (eq. 3) and relevance probabilities
r_mi = (2^y_mi - 1) / 2^y_max (eq. 2), the objective is eq. 8:

    F(U, V) = sum_m sum_{i in I_m} r_mi [ln g(f_mi) + sum_{j in I_m} ln(1 - r_mj g(f_mj - f_mi))]
              - lambda/2 (|U|^2 + |V|^2),          g(x) = 1 / (1 + e^-x)

(unrated items have r = 0 and drop out of both sums). F depends on user m's factors only through
the n scores f_m, so eq. 9 and 10 are the chain rule through one vector s = dL_m/df_m:

    s_i = r_i [g(-f_i) + sum_k r_k (Q_ik - Q_ki)],   Q_ik = g'(f_k - f_i) / (1 - r_k g(f_k - f_i))
    dF/dU_m = sum_i s_i V_i - lambda U_m   (eq. 9),
    dF/dV_i = sum over the users m who rated i of s_mi U_m, - lambda V_i   (eq. 10, per user)

which costs O(n^2 + n d) per user, the paper's O(d n S) per epoch. Training is the paper's
stochastic gradient ascent, one step per user (U_m and that user's V_i together), users in a
seeded random order each epoch. Q is computed as g(x) / (1 + (1 - r) e^x), which stays finite for
r = 1 (CLiMF), where 1 - r g(x) underflows to 0.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from duckrank.models import inputs

DIMS = 10  # the paper's D
REGULARIZATION = 0.001  # the paper's lambda
LEARNING_RATE = 0.001  # the paper's learning rate (gamma)
EPOCHS = 100  # the paper gives no count; see docs/models.md on choosing it
INIT_SCALE = 0.01  # factors start as normal(0, INIT_SCALE^2) draws: the paper leaves this open
_DIRECT_LOG_UP_TO = 0.999  # eq. 2 gives r <= 1 - 2^-y_max: up to y_max = 9 in the objective
_BATCH_ELEMENTS = 1 << 21  # users with equal n are batched into (B, n, n) arrays this large
# Gradient ascent raises eq. 8; an objective below 10 times its value at the initial factors is a
# step too large, not noise (on the experiment's synthetic data eq. 8 goes from -8,267 before
# training to -7,400 when it learns; at learning rates that blow up, to -3e5 .. -1e292, then NaN).
DIVERGED_BELOW = 10.0


class DivergenceError(ValueError):
    """Training diverged (non-finite factors or objective, or an objective below
    ``DIVERGED_BELOW`` times its value before training): the learning rate is too large. A
    ``ValueError``, as every other bad argument of the models is."""


@dataclass(frozen=True)
class Factors:
    """A trained factor model: ``users`` (user, factors) and ``items`` (item, factors) as Arrow
    tables, ids as given (sorted), factors lists of dims float64 (DuckDB DOUBLE[]);
    ``objective`` is eq. 8 after each epoch; ``seconds`` the wall time of the training."""

    users: pa.Table
    items: pa.Table
    objective: list[float]
    seconds: float


def relevance(ratings: np.ndarray, max_rating: float) -> np.ndarray:
    """Eq. 2: the probability that a rating y satisfies the user, (2^y - 1) / 2^max_rating,
    computed as 2^(y - max_rating) (1 - 2^-y) (ratings in [0, max_rating]): no power of 2 above 1,
    so a max_rating of 1024 or more, where 2^max_rating is beyond a double, works. 1 - 2^-y is
    exact for integer ratings, and taken by expm1 below 1, where the subtraction would cancel."""
    ratings = np.asarray(ratings, dtype=np.float64)
    kept = np.where(ratings < 1.0, -np.expm1(-ratings * math.log(2.0)), 1.0 - np.exp2(-ratings))
    return np.exp2(ratings - max_rating) * kept


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 + 0.5 * np.tanh(0.5 * x)  # g(x) without overflow for large |x|


def _score_gradient(f: np.ndarray, r: np.ndarray, log1m_r: np.ndarray) -> np.ndarray:
    """s = dL_m/df_m from f, r, ln(1 - r) of shape (n,) for one user or (B, n) for B users."""
    x = f[..., None, :] - f[..., :, None]  # x[..., i, k] = f_k - f_i
    # g'(x) / (1 - r_k g(x)) = g(x) / (1 + (1 - r_k) e^x); (1 - r_k) e^x as exp(x + ln(1 - r_k))
    q = _sigmoid(x) / (1.0 + np.exp(x + log1m_r[..., None, :]))
    return r * (_sigmoid(-f) + ((q - q.swapaxes(-1, -2)) @ r[..., None])[..., 0])


def _user_objective(f: np.ndarray, r: np.ndarray, log1m_r: np.ndarray) -> np.ndarray:
    """L_m of eq. 8 (without the regulariser), arguments as for ``_score_gradient``."""
    x = f[..., None, :] - f[..., :, None]
    if r.max() <= _DIRECT_LOG_UP_TO:  # 1 - r g(x) >= 0.001: the direct form, 3 times cheaper
        log_miss = np.log1p(-r[..., None, :] * _sigmoid(x))
    else:  # ln(1 - r_k g(x)) = ln((1 - r_k) + e^-x) - ln(1 + e^-x), finite where 1 - g(x) is 0
        log_miss = np.logaddexp(log1m_r[..., None, :], -x) - np.logaddexp(0.0, -x)
    return (r * (-np.logaddexp(0.0, -f) + log_miss.sum(axis=-1))).sum(axis=-1)


@dataclass(frozen=True)
class _ByUser:
    """The training rows grouped by user (CSR): user m's rows are offsets[m]:offsets[m + 1]."""

    offsets: np.ndarray
    items: np.ndarray
    relevance: np.ndarray
    log1m_r: np.ndarray
    users: int
    item_count: int

    @classmethod
    def build(cls, users: np.ndarray, items: np.ndarray, relevance: np.ndarray, user_count: int,
              item_count: int) -> _ByUser:
        order = np.argsort(users, kind="stable")
        offsets = np.zeros(user_count + 1, dtype=np.int64)
        np.cumsum(np.bincount(users, minlength=user_count), out=offsets[1:])
        r = relevance[order]
        with np.errstate(divide="ignore"):  # ln(1 - 1) = -inf is what the formulas want
            log1m_r = np.log1p(-r)
        return cls(offsets, items[order], r, log1m_r, user_count, item_count)

    def batches(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """(users, items (B, n), r (B, n), ln(1 - r) (B, n)) over users of equal n."""
        counts = np.diff(self.offsets)
        for n in np.unique(counts[counts > 0]):
            users = np.flatnonzero(counts == n)
            step = max(1, _BATCH_ELEMENTS // int(n * n))
            for start in range(0, len(users), step):
                chunk = users[start:start + step]
                rows = self.offsets[chunk][:, None] + np.arange(n)
                yield chunk, self.items[rows], self.relevance[rows], self.log1m_r[rows]


def _objective(by_user: _ByUser, user_factors: np.ndarray, item_factors: np.ndarray,
               regularization: float) -> float:
    total = 0.0
    for users, items, r, log1m_r in by_user.batches():
        f = np.einsum("bd,bnd->bn", user_factors[users], item_factors[items])
        total += float(_user_objective(f, r, log1m_r).sum())
    penalty = np.sum(user_factors**2) + np.sum(item_factors**2)
    return total - regularization / 2.0 * float(penalty)


def _gradients(by_user: _ByUser, user_factors: np.ndarray, item_factors: np.ndarray,
               regularization: float) -> tuple[np.ndarray, np.ndarray]:
    d_users = -regularization * user_factors
    d_items = -regularization * item_factors
    for users, items, r, log1m_r in by_user.batches():
        u, v = user_factors[users], item_factors[items]
        with np.errstate(over="ignore"):  # e^x overflowing to inf gives Q = 0, its limit
            s = _score_gradient(np.einsum("bd,bnd->bn", u, v), r, log1m_r)
        d_users[users] += np.einsum("bn,bnd->bd", s, v)
        np.add.at(d_items, items.ravel(), (s[:, :, None] * u[:, None, :]).reshape(-1, u.shape[1]))
    return d_users, d_items


def _codes(function: str, user_factors: np.ndarray, item_factors: np.ndarray,
           users: np.ndarray, items: np.ndarray, relevance: np.ndarray) -> _ByUser:
    inputs.same_length(function, users=users, items=items, relevance=relevance)
    return _ByUser.build(np.asarray(users, dtype=np.int64), np.asarray(items, dtype=np.int64),
                         np.asarray(relevance, dtype=np.float64), len(user_factors),
                         len(item_factors))


def objective(user_factors: np.ndarray, item_factors: np.ndarray, users: np.ndarray,
              items: np.ndarray, relevance: np.ndarray, regularization: float = REGULARIZATION
              ) -> float:
    """Eq. 8, F(U, V), on arrays: rows (users[t], items[t]) are 0-based row numbers of
    user_factors and item_factors, relevance[t] their r (eq. 2), each pair once."""
    by_user = _codes("xclimf.objective", user_factors, item_factors, users, items, relevance)
    return _objective(by_user, user_factors, item_factors, regularization)


def gradients(user_factors: np.ndarray, item_factors: np.ndarray, users: np.ndarray,
              items: np.ndarray, relevance: np.ndarray, regularization: float = REGULARIZATION
              ) -> tuple[np.ndarray, np.ndarray]:
    """(dF/dU, dF/dV) of eq. 8 over all users (eq. 9 per user; eq. 10 summed over the users who
    rated the item, the regulariser once), arguments as for ``objective``."""
    by_user = _codes("xclimf.gradients", user_factors, item_factors, users, items, relevance)
    return _gradients(by_user, user_factors, item_factors, regularization)


def _table(name: str, ids: np.ndarray, factors: np.ndarray) -> pa.Table:
    # A LIST (DuckDB DOUBLE[]), not a fixed-size ARRAY (DOUBLE[dims]): DuckDB 2.0.0 returns wrong
    # ARRAY values, or a conversion error, from a LEFT JOIN that leaves some rows unmatched, the
    # join that scores candidate items without factors (docs/models.md).
    offsets = pa.array(np.arange(0, factors.size + 1, factors.shape[1]), type=pa.int32())
    values = pa.ListArray.from_arrays(offsets, pa.array(factors.ravel()))
    return pa.table({name: pa.array(ids, type=pa.int64() if ids.dtype.kind == "i"
                                    else pa.string()), "factors": values})


def _epoch(by_user: _ByUser, user_factors: np.ndarray, item_factors: np.ndarray,
           order: np.ndarray, item_regularization: np.ndarray, regularization: float,
           learning_rate: float) -> None:
    """One pass of stochastic gradient ascent, one step per user in ``order``, in place."""
    offsets, items, r, log1m_r = by_user.offsets, by_user.items, by_user.relevance, \
        by_user.log1m_r
    for m in order:
        start, stop = offsets[m], offsets[m + 1]
        rated = items[start:stop]
        u, v = user_factors[m], item_factors[rated]
        s = _score_gradient(v @ u, r[start:stop], log1m_r[start:stop])
        user_factors[m] = u + learning_rate * (s @ v - regularization * u)
        item_factors[rated] = v + learning_rate * (
            s[:, None] * u - item_regularization[start:stop, None] * v)


def _check_diverged(function: str, checked: inputs.Settings, epoch: int, start: float,
                    objective: float, finite: bool) -> None:
    """Raise ``DivergenceError`` when the factors (``finite``: all of them finite) or the
    objective after ``epoch`` show divergence, naming the model, the epoch and learning_rate."""
    if finite and math.isfinite(objective) and not objective < DIVERGED_BELOW * start:
        return
    what = "" if finite else "; the factors are no longer finite"
    raise DivergenceError(
        f"{function}: training diverged in epoch {epoch} of {checked.epochs}: the objective "
        f"(eq. 8) went from {start:.6g} before training to {objective:.6g}{what}; lower "
        f"learning_rate (got {checked.learning_rate!r})")


def train(users: np.ndarray, items: np.ndarray, relevance: np.ndarray, *, dims: int = DIMS,
          regularization: float = REGULARIZATION, learning_rate: float = LEARNING_RATE,
          epochs: int = EPOCHS, seed: int = 0, function: str = "xclimf.train") -> Factors:
    """xCLiMF on relevance probabilities r in [0, 1] given directly (eq. 8 with r as is): what
    ``fit`` runs after eq. 2, and CLiMF with r = 1 for every given pair.

    Each of item i's n_i user steps applies lambda / n_i of its regulariser, so that the steps of
    one epoch add up to dF/dV_i of eq. 8 (eq. 10 as printed is user m's part, with all of
    lambda V_i). Reproducible: the same seed gives the same factors, bit for bit. A learning
    rate too large for the data diverges: ``DivergenceError`` after the first epoch whose factors
    are not finite or whose objective is below ``DIVERGED_BELOW`` times its value before
    training.
    """
    checked = inputs.settings(function, dims, regularization, learning_rate, epochs, seed)
    codes = inputs.pairs(function, users, items)
    r = np.asarray(relevance, dtype=np.float64)
    inputs.same_length(function, users=codes.users, relevance=r)
    invalid = np.flatnonzero(~((r >= 0) & (r <= 1)))  # NaN included
    if invalid.size:
        position = int(invalid[0])
        raise ValueError(f"{function}: relevance[{position}] = {r[position].item()!r} is not a "
                         "probability in [0, 1]")
    started = time.perf_counter()
    by_user = _ByUser.build(codes.users, codes.items, r, len(codes.user_ids),
                            len(codes.item_ids))
    rng = np.random.default_rng(checked.seed)
    user_factors = rng.normal(0.0, INIT_SCALE, (by_user.users, checked.dims))
    item_factors = rng.normal(0.0, INIT_SCALE, (by_user.item_count, checked.dims))
    ratings_per_item = np.bincount(by_user.items, minlength=by_user.item_count)
    item_regularization = checked.regularization / ratings_per_item[by_user.items]
    history = []
    # e^x overflowing to inf gives Q = 0, its limit; an invalid value (inf - inf) only arises in
    # a diverging run, which _check_diverged stops with an error after the epoch
    with np.errstate(over="ignore", invalid="ignore"):
        start = _objective(by_user, user_factors, item_factors, checked.regularization)
        for epoch in range(1, checked.epochs + 1):
            _epoch(by_user, user_factors, item_factors, rng.permutation(by_user.users),
                   item_regularization, checked.regularization, checked.learning_rate)
            history.append(_objective(by_user, user_factors, item_factors,
                                      checked.regularization))
            _check_diverged(function, checked, epoch, start, history[-1],
                            bool(np.isfinite(user_factors).all()
                                 and np.isfinite(item_factors).all()))
    return Factors(users=_table("user", codes.user_ids, user_factors),
                   items=_table("item", codes.item_ids, item_factors),
                   objective=history, seconds=time.perf_counter() - started)


def fit(users: np.ndarray, items: np.ndarray, ratings: np.ndarray, *, dims: int = DIMS,
        regularization: float = REGULARIZATION, learning_rate: float = LEARNING_RATE,
        epochs: int = EPOCHS, seed: int = 0, max_rating: float | None = None) -> Factors:
    """Train xCLiMF on graded ratings in [0, max_rating] (one row per rated (user, item) pair;
    ids int64 or strings). max_rating is y_max of eq. 2, the largest rating given when None (pass
    the scale's top, e.g. 5, when a training sample may lack it)."""
    inputs.same_length("xclimf.fit", users=np.asarray(users), items=np.asarray(items),
                       ratings=np.asarray(ratings))
    graded, top = inputs.ratings("xclimf.fit", ratings, max_rating)
    return train(users, items, relevance(graded, top), dims=dims,
                 regularization=regularization, learning_rate=learning_rate, epochs=epochs,
                 seed=seed, function="xclimf.fit")
