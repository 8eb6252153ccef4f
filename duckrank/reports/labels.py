"""Metric labels as a reader of a paper or a report page knows them: ``ndcg(gain=exponential)@10``
(the column label ``duckrank.evaluate`` gives, which stays the key in every frame) is shown as
``nDCG@10 (gain: exponential)``, ``map@100`` as ``MAP@100``, ``precision@5`` as ``P@5``.

The names are the IR literature's usual ones (trec_eval's measure names, Järvelin and Kekäläinen
for nDCG, Chapelle et al. for ERR); a label this module does not know is shown as written.
"""

from __future__ import annotations

import re

# Request names (and aliases) -> the name a reader knows. Everything else is shown as written.
READER_NAMES = {
    "ndcg": "nDCG", "dcg": "DCG", "map": "MAP", "average_precision": "MAP", "ap": "AP",
    "mrr": "MRR", "precision": "P", "precision_at": "P", "recall": "Recall",
    "recall_at": "Recall", "err": "ERR", "hitrate": "HR", "hit_rate": "HR", "auc": "AUC",
    "rprec": "R-Prec", "bpref": "bpref",
}

# name, then options in parentheses, then @k: the shape of evaluate's column labels.
_LABEL = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:\((?P<options>[^()]*)\))?"
                    r"(?:@(?P<k>[0-9]+))?")


def reader_label(label: str) -> str:
    """``label`` (an evaluate column label) as a reader knows it; unknown names unchanged."""
    match = _LABEL.fullmatch(label)
    if match is None or match["name"].lower() not in READER_NAMES:
        return label
    text = READER_NAMES[match["name"].lower()]
    if match["k"] is not None:
        text += f"@{match['k']}"
    if match["options"]:
        options = [part.partition("=") for part in match["options"].split(",")]
        text += " (" + ", ".join(f"{name.strip()}: {value.strip()}" if equals else name.strip()
                                 for name, equals, value in options) + ")"
    return text
