"""``duckrank.dbt``, the dbt-duckdb plugin path written in ``profiles.yml`` (``module:
duckrank.dbt``): the same module as ``duckrank.engines.dbt``."""

import sys

from duckrank.engines import dbt

sys.modules[__name__] = dbt
