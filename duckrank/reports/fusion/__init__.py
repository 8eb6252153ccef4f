"""Rank fusion (issue 29; docs/fusion.md): ``fuse`` (``api.py``), the supervised methods'
training (``training.py``: ``train_fusion``), the grid optimiser (``optimise.py``:
``optimize_fusion``) and the ``duckrank fuse`` command (``command.py``)."""

from typing import TYPE_CHECKING

from duckrank.lazy import lazy_exports

if TYPE_CHECKING:
    from duckrank.reports.fusion.api import fuse
    from duckrank.reports.fusion.optimise import optimize_fusion
    from duckrank.reports.fusion.training import train_fusion

# Imported on first use (``duckrank.lazy``): ``fuse`` does not import the optimiser's evaluation.
__getattr__, __dir__ = lazy_exports(globals(), {
    "fuse": "duckrank.reports.fusion.api",
    "optimize_fusion": "duckrank.reports.fusion.optimise",
    "train_fusion": "duckrank.reports.fusion.training",
})

__all__ = ["fuse", "optimize_fusion", "train_fusion"]
