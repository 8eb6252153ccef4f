"""Off-policy evaluation (issue 31): the estimators of the Open Bandit Pipeline (obp 0.5.x) and
diagnostics of the importance weights, one record each, with the SQL text their DuckDB
macros are made of (``duckrank.render.off_policy``) and the reduction of obp's arrays to a
log table (``arrays.bandit_log``). docs/off-policy.md is the user's documentation."""

from __future__ import annotations

from duckrank.off_policy.diagnostics import DIAGNOSTICS
from duckrank.off_policy.record import Diagnostic, Estimator
from duckrank.off_policy.requests import estimator
from duckrank.off_policy.single_action import ESTIMATORS
from duckrank.off_policy.slate import SLATE_ESTIMATORS, SlateEstimator

RECORDS: tuple[Estimator | Diagnostic | SlateEstimator, ...] = (
    *ESTIMATORS, *DIAGNOSTICS, *SLATE_ESTIMATORS)


__all__ = ["DIAGNOSTICS", "ESTIMATORS", "RECORDS", "SLATE_ESTIMATORS", "estimator"]
