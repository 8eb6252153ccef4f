"""trec_eval's relstring through ``duckrank.evaluate`` (issue 27: it failed under
convention="trec_eval" with a COALESCE type error). Expected strings by hand, with trec_eval's
characters: '1' a relevant document, '0' a judged non-relevant one, '-' an unjudged one."""

from __future__ import annotations

import pandas as pd
import pytest

import duckrank

RUN = pd.DataFrame({"user": [1, 1, 2], "item": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]})
QRELS = pd.DataFrame({"user": [1, 2, 2, 3], "item": ["a", "x", "c", "y"],
                      "grade": [1, 1, 0, 1]})


@pytest.mark.parametrize("convention", ["duckrank", "trec_eval"])
def test_relstring_per_query(convention: str) -> None:
    with pytest.warns(duckrank.evaluation.UnrankedQueries):
        result = duckrank.evaluate(RUN, QRELS, ["relstring@5", "map"], per_user=True,
                                   convention=convention)
    # user 1: a relevant, b unjudged; user 2: c judged non-relevant.
    rows = dict(zip(result["user"], result["relstring@5"], strict=True))
    assert rows[1] == "1-" and rows[2] == "0"


def test_relstring_has_no_mean() -> None:
    with pytest.raises(ValueError, match=r"evaluate: relstring@5 gives each query a text .* "
                                         r"pass per_user=True"):
        duckrank.evaluate(RUN, QRELS, ["relstring@5"], convention="trec_eval")
