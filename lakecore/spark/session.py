"""Getting a SparkSession that can run lakecore code in its Python workers, and scoped confs."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pyspark.sql import SparkSession

LOCAL_DEFAULTS: dict[str, str] = {
    # A local session stays on the loopback interface (no hostname lookup, no LAN address).
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}
DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
}


def session(
    master: str = "local[*]",
    app_name: str = "lakecore",
    config: Mapping[str, str] | None = None,
) -> SparkSession:
    """Return a SparkSession whose Python workers run this interpreter (and so see lakecore).

    Sets ``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON`` to ``sys.executable`` (for a local
    master always, for other masters only where they are unset: a cluster's workers have their
    own interpreter), the session time zone to UTC and Arrow transfers on. A local master binds
    to 127.0.0.1 (``SPARK_LOCAL_IP`` defaults to it). ``config`` entries are applied last and
    win. Like ``getOrCreate``, this returns the already active session if there is one (its
    static settings stay as they were).

    Example:
        >>> import lakecore.spark
        >>> spark = lakecore.spark.session("local[2]")  # doctest: +SKIP
        >>> lakecore.spark.read(spark, "/data/events").count()  # doctest: +SKIP
        1000
    """
    local = master.startswith("local")
    for var in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        if local:
            os.environ[var] = sys.executable
        else:
            os.environ.setdefault(var, sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the JVM's own address too
    settings = {**(LOCAL_DEFAULTS if local else {}), **DEFAULTS, **dict(config or {})}
    # pylance (Lance base files of Hudi tables) warns at every os.fork once imported; starting
    # the JVM and Spark's Python workers fork, and no Lance object crosses those forks.
    warnings.filterwarnings("ignore", message="lance is not fork-safe")
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@contextmanager
def temporary_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Set session (SQL) confs for the ``with`` block, then restore them (unset if unset).

    The confs are session-wide while the block runs: other threads using the same session see
    them too.
    """
    previous: dict[str, str | None] = {}
    for key, value in settings.items():
        previous[key] = spark.conf.get(key, None)  # None: not set explicitly
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in previous.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
