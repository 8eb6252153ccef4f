"""Rank fusion (issue 29; docs/fusion.md): ``fuse`` (``api.py``), the supervised methods'
training (``training.py``: ``train_fusion``), the grid optimiser (``optimise.py``:
``optimize_fusion``) and the ``duckrank fuse`` command (``command.py``)."""

from duckrank.reports.fusion.api import fuse
from duckrank.reports.fusion.optimise import optimize_fusion
from duckrank.reports.fusion.training import train_fusion

__all__ = ["fuse", "optimize_fusion", "train_fusion"]
