"""The score normalisations of ranx 0.3.21 (``ranx/normalization/``), applied to each system's list
for each query before fusing (``norm :=`` of every ``fuse_*`` macro, ``duckrank.fuse(norm=...)``).

A list whose statistics overflow a double (scores near 1e308: their spread, sum or standard
deviation is not finite) is an error under the normalisations that read them (``defined``),
where ranx returns NaN or 0.

The floor of 1e-9 on every denominator is ranx's (a list whose scores are all equal normalises to
0, not to a division by zero). ``position`` is the item's place in the system's list, by score
descending, ties by the item's text descending (duckrank's tie order everywhere: ranx's order
among tied scores is whatever numpy's sort leaves).
"""

from __future__ import annotations

from duckrank.fusion.record import Normalisation

FLOOR = "1e-9"

NORMALISATIONS: tuple[Normalisation, ...] = (
    Normalisation(
        "min-max", "min-max", "Min-max",
        "(score - min) / max(max - min, 1e-9): the list's scores mapped onto [0, 1]",
        f"(score - s_min) / greatest(s_max - s_min, {FLOOR})",
        notes="ranx also spells it `min_max`. ranx's default, and duckrank's.",
        defined="isfinite(s_max - s_min)",
    ),
    Normalisation(
        "min-max-inverted", "min-max-inverted", "Min-max, inverted",
        "(max - score) / max(max - min, 1e-9): for scores where lower is better (distances); "
        "the list is then ordered by the new score",
        f"(s_max - score) / greatest(s_max - s_min, {FLOOR})",
        notes="ranx also spells it `min_max_inverted`.",
        reorders=True, defined="isfinite(s_max - s_min)",
    ),
    Normalisation(
        "max", "max", "Max",
        "score / max(max, 1e-9)",
        f"score / greatest(s_max, {FLOOR})",
    ),
    Normalisation(
        "sum", "sum", "Sum",
        "(score - min) / max(sum - min x n, 1e-9), n the list's length: the shifted scores sum "
        "to 1",
        f"(score - s_min) / greatest(s_sum - s_min * s_count, {FLOOR})",
        defined="isfinite(s_sum - s_min * s_count)",
    ),
    Normalisation(
        "zmuv", "zmuv", "Z-score (zero mean, unit variance)",
        "(score - mean) / max(sd, 1e-9), sd the population standard deviation of the list",
        f"(score - s_mean) / greatest(s_sd, {FLOOR})",
        defined="isfinite(s_mean) AND isfinite(s_sd)",
    ),
    Normalisation(
        "rank", "rank", "Rank",
        "1 - (position - 1) / n: 1 for the first item, 1/n for the last",
        "1 - (position - 1) / s_count",
    ),
    Normalisation(
        "borda", "borda", "Borda",
        "over the query's c candidates (items any system returned): 1 - (position - 1) / c for "
        "an item the system returned, 0.5 - (n - 1) / (2 c) for every candidate it did not (n: "
        "the length of the system's list; a system with no list for the query has n = 0); "
        "every system then scores every candidate",
        "CASE WHEN score IS NULL THEN 0.5 - (s_count - 1) / (2 * candidates) "
        "ELSE 1 - (position - 1) / candidates END",
        notes="After it, ranx orders the candidates a system did not return in Python's set "
              "order (which varies from run to run) for the methods that read positions; "
              "duckrank puts them after the returned ones, by item text descending.",
        reorders=True, adds_candidates=True,
    ),
    Normalisation(
        "none", "None", "None",
        "the scores as given",
        "score",
        notes="`norm := 'none'` in SQL, `norm=None` or `'none'` in Python, `--norm none`.",
    ),
)

BY_NAME = {n.name: n for n in NORMALISATIONS}
# ranx's other spellings of the same normalisations.
ALIASES = {"min_max": "min-max", "min_max_inverted": "min-max-inverted"}


def normalisation(name: str | None) -> Normalisation:
    """The record of ``name`` (duckrank's or ranx's spelling; None: no normalisation)."""
    key = "none" if name is None else ALIASES.get(name, name)
    if key not in BY_NAME:
        raise ValueError(
            f"norm must be one of {', '.join(repr(n) for n in BY_NAME)} (or None), got {name!r}")
    return BY_NAME[key]
