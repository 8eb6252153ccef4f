"""SQL for the beyond-accuracy metrics (coverage, popularity, novelty, diversity; issue 17)."""

MACROS: tuple[str, ...] = ()
