"""CLiMF: xCLiMF's training with binary relevance, r = 1 for every given (user, item) pair.

Shi, Karatzoglou, Baltrunas, Larson, Oliver and Hanjalic, "CLiMF: Learning to Maximize
Reciprocal Rank with Collaborative Less-is-More Filtering", RecSys 2012. Its objective,

    F(U, V) = sum_m sum_i Y_mi [ln g(f_mi) + sum_j ln(1 - Y_mj g(f_mj - f_mi))]
              - lambda/2 (|U|^2 + |V|^2),

is xCLiMF's eq. 8 with r_mi = Y_mi in {0, 1} (the special case the xCLiMF paper, Shi et al.,
RecSys 2013, names after eq. 10), so this module passes r = 1 to ``xclimf.train``. Not the same
as ``xclimf.fit`` on ratings in {0, 1}: eq. 2 maps the top rating y_max to (2^y_max - 1) / 2^y_max
= 1/2, never to 1.
"""

from __future__ import annotations

import numpy as np

from duckrank.models import xclimf
from duckrank.models.xclimf import DivergenceError, Factors

__all__ = ["DivergenceError", "Factors", "fit"]


def fit(users: np.ndarray, items: np.ndarray, *, dims: int = xclimf.DIMS,
        regularization: float = xclimf.REGULARIZATION,
        learning_rate: float = xclimf.LEARNING_RATE, epochs: int = xclimf.EPOCHS,
        seed: int = 0) -> Factors:
    """Train CLiMF on the relevant (user, item) pairs, each given once (ids int64 or strings);
    binarise graded data before, e.g. the pairs rated >= 4. A learning rate too large for the
    data is a ``DivergenceError`` (see ``xclimf.train``)."""
    return xclimf.train(users, items, np.ones(len(users)), dims=dims,
                        regularization=regularization, learning_rate=learning_rate,
                        epochs=epochs, seed=seed, function="climf.fit")
