"""Checking Delta table property values before they are committed (create, SET TBLPROPERTIES).

The rules are Delta's own (``DeltaConfigs`` in Delta Spark): booleans are ``true``/``false``
in any case, integers are plain decimal digits within their bounds, durations are calendar
intervals such as ``interval 7 days`` or ``168 hours`` without months or years (which have no
fixed length) and never negative. A value Delta would refuse is refused here, before anything
is written, so a table never carries a setting that readers and lakecore read differently.
Unknown ``delta.*`` keys are refused, as deltalake and Delta Spark refuse them (a misspelt
``delta.enableChangDataFeed`` would otherwise be stored and silently do nothing); keys of
Delta's families (``delta.constraints.*``, checked when they are added, ``delta.feature.*`` ...)
and keys outside ``delta.`` pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from lakecore.errors import InvalidArgumentError

BOOLEAN_KEYS = frozenset(
    {
        "delta.appendOnly",
        "delta.autoOptimize.optimizeWrite",
        "delta.checkpoint.writeStatsAsJson",
        "delta.checkpoint.writeStatsAsStruct",
        "delta.compatibility.symlinkFormatManifest.enabled",
        "delta.enableChangeDataFeed",
        "delta.enableDeletionVectors",
        "delta.enableExpiredLogCleanup",
        "delta.enableIcebergCompatV1",
        "delta.enableIcebergCompatV2",
        "delta.enableInCommitTimestamps",
        "delta.enableRowTracking",
        "delta.enableTypeWidening",
        "delta.randomizeFilePrefixes",
        "delta.tuneFileSizesForRewrites",
    }
)
INTEGER_KEYS: Mapping[str, tuple[int, int]] = {
    # Delta Spark wants at least 1; lakecore (and delta-rs) read 0 as "never checkpoint".
    "delta.checkpointInterval": (0, 2**31 - 1),
    "delta.columnMapping.maxColumnId": (0, 2**31 - 1),
    "delta.dataSkippingNumIndexedCols": (-1, 2**31 - 1),
    "delta.minReaderVersion": (1, 3),
    "delta.minWriterVersion": (1, 7),
    "delta.randomPrefixLength": (1, 2**31 - 1),
}
"""Integer properties and their inclusive bounds."""
INTERVAL_KEYS = frozenset(
    {
        "delta.checkpointRetentionDuration",
        "delta.deletedFileRetentionDuration",
        "delta.logRetentionDuration",
        "delta.setTransactionRetentionDuration",
    }
)
SIZE_KEYS = frozenset({"delta.targetFileSize"})
CHOICES: Mapping[str, frozenset[str]] = {
    "delta.checkpointPolicy": frozenset({"classic", "v2"}),
    "delta.columnMapping.mode": frozenset({"none", "name", "id"}),
    "delta.isolationLevel": frozenset({"serializable", "writeserializable", "snapshotisolation"}),
}
"""Properties with a fixed set of values (compared in lower case, as Delta does)."""
FEATURE_PREFIX = "delta.feature."
OTHER_KEYS = frozenset(
    {
        "delta.autoOptimize.autoCompact",
        "delta.checkpoint.useRunLengthEncoding",
        "delta.dataSkippingStatsColumns",
        "delta.dataSkippingStringPrefixLength",
        "delta.enableFullRetentionRollback",
        "delta.enableVariantShredding",
        "delta.inCommitTimestampEnablementTimestamp",
        "delta.inCommitTimestampEnablementVersion",
        "delta.lastCommitTimestamp",
        "delta.lastUpdateVersion",
        "delta.parquet.compression.codec",
        "delta.sampleRetentionDuration",
        "delta.timeUntilArchived",
    }
)
"""Delta (Spark, delta-rs, Databricks) properties whose values lakecore takes as given."""
FAMILIES = (
    "delta.constraints.",
    FEATURE_PREFIX,
    "delta.columnMapping.",
    "delta.coordinatedCommits.",
    "delta.identity.",
    "delta.liquid.",
    "delta.clustering.",
    "delta.rowTracking.",
    "delta.universalFormat.",
)
"""Key prefixes whose members Delta defines per table (constraint and feature names ...)."""

_INTEGER = re.compile(r"[+-]?[0-9]+")
_MICROS = {
    "week": 7 * 86_400_000_000,
    "day": 86_400_000_000,
    "hour": 3_600_000_000,
    "minute": 60_000_000,
    "second": 1_000_000,
    "millisecond": 1_000,
    "microsecond": 1,
}
_INTERVAL_PART = re.compile(r"([+-]?[0-9]+(?:\.[0-9]+)?)\s*([a-z]+)")
_SIZE = re.compile(r"([0-9]+)\s*([kmgtp]?)b?")


def validate_properties(properties: Mapping[str, str | None]) -> None:
    """Raise ``InvalidArgumentError`` naming the first property whose value Delta would refuse.

    ``None`` values (unset the key) are always fine. Must be called before anything of the
    operation is written.
    """
    for key, value in properties.items():
        if value is None:
            continue
        check = _checker(key)
        if check is not None:
            check(key, str(value))


def _checker(key: str) -> Callable[[str, str], None] | None:
    if key in BOOLEAN_KEYS:
        return _check_boolean
    if key in INTEGER_KEYS:
        return _check_integer
    if key in INTERVAL_KEYS:
        return lambda k, v: _ignore(parse_interval_ms(v, k))
    if key in SIZE_KEYS:
        return lambda k, v: _ignore(parse_size_bytes(v, k))
    if key in CHOICES:
        return _check_choice
    if key.startswith(FEATURE_PREFIX):
        return _check_feature
    if key.startswith("delta.") and key not in OTHER_KEYS and not key.startswith(FAMILIES):
        return _refuse_unknown
    return None


def _refuse_unknown(key: str, value: str) -> None:
    raise InvalidArgumentError(
        f"unknown Delta table property {key} (={value!r}): Delta readers and writers would "
        "ignore it; check its spelling (keys are case-sensitive), or use a key outside the "
        "delta. namespace for your own settings"
    )


def _ignore(_: int) -> None:
    return None


def _refuse(key: str, value: str, expected: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"table property {key}={value!r} is invalid: expected {expected}")


def _check_boolean(key: str, value: str) -> None:
    if value.lower() not in ("true", "false"):
        raise _refuse(key, value, "true or false")


def _check_integer(key: str, value: str) -> None:
    low, high = INTEGER_KEYS[key]
    if not _INTEGER.fullmatch(value) or not low <= int(value) <= high:
        raise _refuse(key, value, f"an integer from {low} to {high}")


def _check_choice(key: str, value: str) -> None:
    if value.lower() not in CHOICES[key]:
        raise _refuse(key, value, "one of " + ", ".join(sorted(CHOICES[key])))


def _check_feature(key: str, value: str) -> None:
    if value.lower() not in ("supported", "enabled"):
        raise _refuse(key, value, "supported")


def parse_interval_ms(value: str, key: str = "interval") -> int:
    """Milliseconds of a Delta duration property (``interval 7 days``, ``2 weeks 3 hours``).

    Units: week, day, hour, minute, second (fractions allowed), millisecond, microsecond,
    singular or plural. Raises ``InvalidArgumentError`` for anything else, for months and
    years (no fixed length; Delta refuses them too) and for a negative total.
    """
    text = value.strip().lower()
    if text.startswith("interval"):
        text = text[len("interval") :].strip()
    micros = 0
    position = 0
    parts = 0
    expected = "a duration such as 'interval 7 days' (weeks, days, hours, minutes, seconds)"
    for match in _INTERVAL_PART.finditer(text):
        if text[position : match.start()].strip():
            raise _refuse(key, value, expected)
        amount, unit = match.groups()
        unit = unit.removesuffix("s")
        if unit not in _MICROS or ("." in amount and unit != "second"):
            raise _refuse(key, value, expected)
        micros += (
            round(float(amount) * _MICROS[unit]) if "." in amount else int(amount) * _MICROS[unit]
        )
        position = match.end()
        parts += 1
    if not parts or text[position:].strip():
        raise _refuse(key, value, expected)
    if micros < 0:
        raise _refuse(key, value, "a duration that is not negative")
    return micros // 1000


def parse_size_bytes(value: str, key: str = "size") -> int:
    """Bytes of a size property: plain bytes or with a binary unit (``128mb``, ``1g``).

    Raises ``InvalidArgumentError`` for anything else or a size of 0.
    """
    match = _SIZE.fullmatch(value.strip().lower())
    if match is None or int(match.group(1)) == 0:
        raise _refuse(key, value, "a positive size in bytes (or with k, m, g, t, p: '128mb')")
    power: int = "_kmgtp".index(str(match.group(2)) or "_")
    return int(match.group(1)) << (10 * power)
