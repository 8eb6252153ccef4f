"""What a caller asks for: estimators by name (duckrank's SQL names or obp's estimator names),
each with one or more values of its hyperparameter, checked against the log's columns. Shared by
``duckrank.off_policy`` (DuckDB) and the Spark form."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from duckrank.off_policy.record import Estimator
from duckrank.off_policy.single_action import ESTIMATORS

Request = tuple[Estimator, float | None]


def estimator(name: str) -> Estimator:
    """The single-action estimator named ``name`` (its SQL name or obp's estimator_name)."""
    for record in ESTIMATORS:
        if name.lower() in (record.name, record.obp_name):
            return record
    known = ", ".join(r.name for r in ESTIMATORS)
    raise ValueError(f"off_policy: unknown estimator {name!r}; known: {known}")


def _values(record: Estimator, given: float | Sequence[float] | None) -> list[float | None]:
    if record.hyperparameter is None:
        if given is not None:
            raise ValueError(f"off_policy: {record.name} has no lambda_, got {given!r}")
        return [None]
    if given is None:
        return [record.hyperparameter.default]
    values = list(given) if isinstance(given, Sequence) else [given]
    for value in values:
        record.hyperparameter.check(record.name, value)
    return [float(v) for v in values]


def resolve(names: Sequence[str] | str | None,
            lambdas: Mapping[str, float | Sequence[float]] | None,
            present: set[str]) -> list[Request]:
    """(estimator, lambda_) pairs: the named estimators (default: every one whose inputs are in
    ``present``, the log's roles), each with its lambda_ values (default: obp's)."""
    if names is None:
        chosen = [e for e in ESTIMATORS if set(e.inputs) <= present]
    else:
        chosen = [estimator(n) for n in ([names] if isinstance(names, str) else names)]
    given = {estimator(k).name: v for k, v in (lambdas or {}).items()}
    requests: list[Request] = []
    for record in chosen:
        missing = [r for r in record.inputs if r not in present]
        if missing:
            raise ValueError(f"off_policy: {record.name} needs the columns {', '.join(missing)}"
                             ", which the log lacks")
        requests += [(record, v) for v in _values(record, given.pop(record.name, None))]
    if given:
        raise ValueError(f"off_policy: lambdas names estimators not requested: {', '.join(given)}")
    return requests
