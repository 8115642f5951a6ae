"""The Spark hand-off: read lakecore tables as Spark DataFrames, write DataFrames to tables.

- ``read(spark, uri, where, columns, version, timestamp)``: lakecore plans the scan on the
  driver and Spark tasks read the planned files through lakecore (``mapInArrow``).
- ``write(df, uri, mode, partition_by, where, format=, properties=)``: the table's format
  writes its data files inside Spark tasks (``FormatWriter.file_writer``), lakecore commits
  them as one table version; Delta and Hudi tables.
- ``session()``: a SparkSession whose Python workers run this interpreter.

pyspark is optional: ``import lakecore`` never imports it, and importing ``lakecore.spark``
without it raises ``PluginNotInstalledError`` with the install command. See ``docs/spark.md``.
"""

from __future__ import annotations

from lakecore.errors import PluginNotInstalledError

try:
    import pyspark  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise PluginNotInstalledError(
        "spark", "lakecore.spark needs pyspark: pip install 'lakecore[spark]'"
    ) from exc

from lakecore.spark.read import read
from lakecore.spark.session import session
from lakecore.spark.types import to_arrow_schema, to_spark_schema
from lakecore.spark.write import write

__all__ = ["read", "session", "to_arrow_schema", "to_spark_schema", "write"]
