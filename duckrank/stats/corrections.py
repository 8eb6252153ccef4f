"""Multiple-comparison corrections: one ``Correction`` record per method, named as statsmodels'
``multipletests`` names it (statsmodels 0.15), with its definition and numpy form.

A correction turns a family of m p-values into adjusted p-values; a comparison is significant
when its adjusted p-value is <= alpha. Every method here is one of three shapes over the p-values
sorted ascending, p(1) <= ... <= p(m), with ``term(p(i), i, m)`` its raw adjusted value:

* ``single``: p_adj(i) = term (Bonferroni, Sidak);
* ``down`` (step-down): p_adj(i) = max over j <= i of term(p(j), j, m) (Holm, Holm-Sidak);
* ``up`` (step-up): p_adj(i) = min over j >= i of term(p(j), j, m) (Simes-Hochberg,
  Benjamini-Hochberg, Benjamini-Yekutieli);

then capped at 1, as statsmodels does. Hommel's method is a closed test over every subset
(``_hommel``, statsmodels' algorithm). Tied p-values get the same adjusted value in every shape
(their running maximum or minimum), so the order among ties does not matter.

The methods whose term is a product of p (Bonferroni, Holm, the step-up ones) have an exact SQL
form too (``sql_term``): ``duckrank.reports.compare.adjusted_sql`` writes them as window
functions. Sidak's 1 - (1 - p)^m needs log1p and expm1 for its digits at small p (in floating
point 1 - p loses them), which DuckDB does not have; Hommel's closed test is a loop over the
family: those two and Holm-Sidak are numpy only.

Left out of statsmodels' list, and why:

* ``fdr_tsbh`` and ``fdr_tsbky`` (the two-stage adaptive FDR methods of Benjamini, Krieger and
  Yekutieli 2006): their "corrected p-values" depend on alpha (the first stage estimates the
  number of true null hypotheses by rejecting at alpha), so they are not p-values a reader can
  compare with another alpha, as the report's column promises; and their FDR control is proved
  for independent p-values, which comparisons sharing a system over the same queries are not.
* ``fdr_gbs`` (Gavrilov, Benjamini and Sarkar 2009): adaptive step-down, proved for independent
  p-values only (as above).
* ``lfdr``: a local false discovery rate estimated from the shape of the p-values'
  distribution, which needs hundreds of tests to estimate; a family here is one metric's
  comparisons of at most 26 systems, and it is not a correction of each p-value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Term = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Correction:
    """One multiple-comparison correction. ``name`` is statsmodels' (``multipletests(method=)``;
    duckrank's names before issue 30, holm and bonferroni, are among them); ``controls``:
    "FWER" (the family-wise error rate: the chance of any false significance) or "FDR" (the
    expected share of false significances among those declared); ``assumes``: the dependence
    between the p-values under which that control is proved."""

    name: str
    title: str  # as the report's legend names it, before "-corrected": "Holm"
    shape: str  # "single", "down", "up" or "closed"
    term: Term | None  # raw adjusted value of the sorted p(i), i = 1..m, family size m
    formula: str  # Markdown, for docs/compare.md
    controls: str
    assumes: str
    source: str
    sql_term: str | None = None  # the term in SQL over {p}, {i}, {m}; None: numpy only

    def adjust(self, p_values: np.ndarray) -> np.ndarray:
        """The adjusted p-values of one family, in its order; NaN (no p-value) stays NaN and is
        not in the family (m counts the others)."""
        p = np.asarray(p_values, dtype=np.float64)
        out = np.full(p.shape, np.nan)
        present = np.flatnonzero(~np.isnan(p))
        if not len(present):
            return out
        order = present[np.argsort(p[present], kind="stable")]
        ordered = p[order]
        m = len(ordered)
        if self.shape == "closed":
            adjusted = _hommel(ordered)
        else:
            assert self.term is not None
            with np.errstate(divide="ignore"):  # p = 1: log1p(-1) = -inf, Sidak's term 1
                raw = self.term(ordered, np.arange(1.0, m + 1), np.full(m, float(m)))
            if self.shape == "down":
                adjusted = np.maximum.accumulate(raw)
            elif self.shape == "up":
                adjusted = np.minimum.accumulate(raw[::-1])[::-1]
            else:
                adjusted = raw
        out[order] = np.minimum(adjusted, 1.0)
        return out


def _hommel(ordered: np.ndarray) -> np.ndarray:
    """Hommel's adjusted p-values of sorted p-values, by statsmodels' algorithm (Wright 1992):
    for each subset size k from m down to 2, c_k = min over j of k p(m - k + j) / j; the k
    largest get at least c_k, the others at least min(k p(i), c_k). O(m^2) over a family of at
    most 325 comparisons (26 systems)."""
    m = len(ordered)
    adjusted = ordered.copy()
    for k in range(m, 1, -1):
        c = float(np.min(k * ordered[-k:] / np.arange(1.0, k + 1)))
        adjusted[-k:] = np.maximum(adjusted[-k:], c)
        adjusted[:-k] = np.maximum(adjusted[:-k], np.minimum(k * ordered[:-k], c))
    return adjusted


def _harmonic(m: np.ndarray) -> np.ndarray:
    """1 + 1/2 + ... + 1/m for each (equal) m of the family."""
    return np.full(m.shape, np.sum(1.0 / np.arange(1.0, m[0] + 1))) if len(m) else m


_STEP_DOWN = "step-down: p_adj(i) = max over j <= i of "
_STEP_UP = "step-up: p_adj(i) = min over j >= i of "
_ANY = "any dependence"
_FEW = ("positive dependence of the kind Simes' inequality needs (PRDS; Sarkar 2008); "
        "common for comparisons over the same queries, but not guaranteed")

CORRECTIONS: tuple[Correction, ...] = (
    Correction(
        "bonferroni", "Bonferroni", "single", lambda p, i, m: m * p,
        "p_adj = min(1, m p).", "FWER", _ANY, "Bonferroni (1936); Dunn (1961).", "{m} * {p}",
    ),
    Correction(
        "sidak", "Sidak", "single", lambda p, i, m: -np.expm1(m * np.log1p(-p)),
        "p_adj = 1 - (1 - p)^m.", "FWER",
        "independent or positively (orthant) dependent p-values (Sidak 1967)",
        "Sidak (1967).",
    ),
    Correction(
        "holm-sidak", "Holm-Sidak", "down",
        lambda p, i, m: -np.expm1((m - i + 1) * np.log1p(-p)),
        _STEP_DOWN + "1 - (1 - p(j))^(m - j + 1).", "FWER",
        "independent or positively (orthant) dependent p-values, as Sidak",
        "Holm (1979) with Sidak's (1967) steps.",
    ),
    Correction(
        "holm", "Holm", "down", lambda p, i, m: (m - i + 1) * p,
        _STEP_DOWN + "(m - j + 1) p(j), capped at 1.", "FWER", _ANY,
        "Holm (1979).", "({m} - {i} + 1) * {p}",
    ),
    Correction(
        "simes-hochberg", "Simes-Hochberg", "up", lambda p, i, m: (m - i + 1) * p,
        _STEP_UP + "(m - j + 1) p(j), capped at 1.", "FWER", _FEW,
        "Hochberg (1988), from Simes (1986).", "({m} - {i} + 1) * {p}",
    ),
    Correction(
        "hommel", "Hommel", "closed", None,
        "the closed test of every intersection of hypotheses by Simes' test: for each subset "
        "size k from m down to 2, c_k = min over j = 1..k of k p(m - k + j) / j; p_adj(i) is "
        "the largest of p(i), of c_k over the sizes k with i among the k largest, and of "
        "min(k p(i), c_k) over the others (Wright 1992's algorithm, as statsmodels).",
        "FWER", _FEW, "Hommel (1988); Wright (1992).",
    ),
    Correction(
        "fdr_bh", "Benjamini-Hochberg FDR", "up", lambda p, i, m: m / i * p,
        _STEP_UP + "m p(j) / j, capped at 1.", "FDR",
        "independent or positively dependent (PRDS) p-values (Benjamini and Yekutieli 2001)",
        "Benjamini and Hochberg (1995).", "{m} * {p} / {i}",
    ),
    Correction(
        "fdr_by", "Benjamini-Yekutieli FDR", "up",
        lambda p, i, m: _harmonic(m) * m / i * p,
        _STEP_UP + "c(m) m p(j) / j, c(m) = 1 + 1/2 + ... + 1/m, capped at 1.", "FDR", _ANY,
        "Benjamini and Yekutieli (2001).",
        "list_sum(list_transform(range(1, {m} + 1), lambda k: 1.0 / k)) * {m} * {p} / {i}",
    ),
)

BY_NAME: dict[str, Correction] = {c.name: c for c in CORRECTIONS}


def correction(name: str) -> Correction:
    """A correction by statsmodels' name."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown correction {name!r}; known: {', '.join(BY_NAME)}") from None
