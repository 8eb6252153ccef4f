"""``duckrank.spark``, the documented public path of ``duckrank.engines.spark`` (the same module:
``duckrank.spark.register(spark)``, ``duckrank.spark.to_ordered_list``)."""

import sys

from duckrank.engines import spark

sys.modules[__name__] = spark
