"""Arrow schemas of the Delta log actions lakecore reads with pyarrow's JSON and Parquet readers."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

DV_TYPE = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)


def partition_values_type(physical_columns: Sequence[str]) -> pa.StructType:
    """Partition values as the log stores them: strings by physical column name."""
    return pa.struct([(c, pa.string()) for c in physical_columns])


def file_action_json_schema(physical_partition_columns: Sequence[str]) -> pa.Schema:
    """The part of a commit line lakecore parses for log replay (other fields are ignored)."""
    pv = partition_values_type(physical_partition_columns)
    return pa.schema(
        [
            (
                "add",
                pa.struct(
                    [
                        ("path", pa.string()),
                        ("partitionValues", pv),
                        ("size", pa.int64()),
                        ("modificationTime", pa.int64()),
                        ("dataChange", pa.bool_()),
                        ("stats", pa.string()),
                        ("deletionVector", DV_TYPE),
                    ]
                ),
            ),
            (
                "remove",
                pa.struct(
                    [
                        ("path", pa.string()),
                        ("deletionTimestamp", pa.int64()),
                        ("dataChange", pa.bool_()),
                        ("partitionValues", pv),
                        ("size", pa.int64()),
                        ("deletionVector", DV_TYPE),
                    ]
                ),
            ),
            (
                "cdc",
                pa.struct(
                    [
                        ("path", pa.string()),
                        ("partitionValues", pv),
                        ("size", pa.int64()),
                        ("dataChange", pa.bool_()),
                    ]
                ),
            ),
            (
                "txn",
                pa.struct(
                    [("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())]
                ),
            ),
        ]
    )


# The reconciled add actions of a snapshot, whatever they were read from.
ADD_FIELDS = ("path", "partitionValues", "size", "modificationTime", "stats", "deletionVector")
