"""Avro schemas of Hudi timeline metadata, as Hudi embeds them in instant files.

Taken from the writer schemas Hudi 1.x embeds in the instant files it writes (commit, replace
commit, rollback plan/metadata, requested replace) and from Hudi's ``HoodieCleanMetadata`` /
``HoodieCleanerPlan`` definitions (no clean instant in the corpus), with the Java-only
``avro.java.string`` hints dropped. Readers resolve against the schema embedded in each file, so
these are only used to write.
"""

from __future__ import annotations

import copy
from typing import Any

#: HoodieCommitMetadata: completed and inflight commit / deltacommit (v8+).
COMMIT_METADATA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieCommitMetadata",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {
            "name": "partitionToWriteStats",
            "type": [
                "null",
                {
                    "type": "map",
                    "values": {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "HoodieWriteStat",
                            "fields": [
                                {
                                    "name": "fileId",
                                    "type": ["null", {"type": "string"}],
                                    "default": None,
                                },
                                {
                                    "name": "path",
                                    "type": ["null", {"type": "string"}],
                                    "default": None,
                                },
                                {
                                    "name": "prevCommit",
                                    "type": ["null", {"type": "string"}],
                                    "default": None,
                                },
                                {"name": "numWrites", "type": ["null", "long"], "default": None},
                                {"name": "numDeletes", "type": ["null", "long"], "default": None},
                                {
                                    "name": "numUpdateWrites",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {
                                    "name": "totalWriteBytes",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {
                                    "name": "totalWriteErrors",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {
                                    "name": "partitionPath",
                                    "type": ["null", {"type": "string"}],
                                    "default": None,
                                },
                                {
                                    "name": "totalLogRecords",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {
                                    "name": "totalLogFiles",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {
                                    "name": "totalUpdatedRecordsCompacted",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {"name": "numInserts", "type": ["null", "long"], "default": None},
                                {
                                    "name": "totalLogBlocks",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {
                                    "name": "totalCorruptLogBlock",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {
                                    "name": "totalRollbackBlocks",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {
                                    "name": "fileSizeInBytes",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {"name": "logVersion", "type": ["null", "int"], "default": None},
                                {"name": "logOffset", "type": ["null", "long"], "default": None},
                                {
                                    "name": "baseFile",
                                    "type": ["null", {"type": "string"}],
                                    "default": None,
                                },
                                {
                                    "name": "logFiles",
                                    "type": [
                                        "null",
                                        {
                                            "type": "array",
                                            "items": {"type": "string"},
                                            "default": None,
                                        },
                                    ],
                                    "default": None,
                                },
                                {
                                    "name": "cdcStats",
                                    "type": [
                                        "null",
                                        {"type": "map", "values": "long", "default": None},
                                    ],
                                    "default": None,
                                },
                                {
                                    "name": "prevBaseFile",
                                    "type": ["null", {"type": "string"}],
                                    "default": None,
                                },
                                {"name": "minEventTime", "type": ["null", "long"], "default": None},
                                {"name": "maxEventTime", "type": ["null", "long"], "default": None},
                                {
                                    "name": "runtimeStats",
                                    "type": [
                                        "null",
                                        {
                                            "type": "record",
                                            "name": "HoodieRuntimeStats",
                                            "fields": [
                                                {
                                                    "name": "totalScanTime",
                                                    "type": ["null", "long"],
                                                    "default": None,
                                                },
                                                {
                                                    "name": "totalCreateTime",
                                                    "type": ["null", "long"],
                                                    "default": None,
                                                },
                                                {
                                                    "name": "totalUpsertTime",
                                                    "type": ["null", "long"],
                                                    "default": None,
                                                },
                                            ],
                                        },
                                    ],
                                    "default": None,
                                },
                                {
                                    "name": "totalLogFilesCompacted",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {
                                    "name": "totalLogReadTimeMs",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {
                                    "name": "totalLogSizeCompacted",
                                    "type": ["null", "long"],
                                    "default": None,
                                },
                                {
                                    "name": "tempPath",
                                    "type": ["null", {"type": "string"}],
                                    "default": None,
                                },
                                {"name": "numUpdates", "type": ["null", "long"], "default": None},
                            ],
                        },
                    },
                },
            ],
            "default": None,
        },
        {"name": "compacted", "type": ["null", "boolean"], "default": None},
        {
            "name": "extraMetadata",
            "type": ["null", {"type": "map", "values": {"type": "string"}, "default": None}],
            "default": None,
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "operationType", "type": ["null", {"type": "string"}], "default": None},
    ],
}

#: HoodieReplaceCommitMetadata: completed replacecommit (v8+). The commit metadata's fields
#: (the same HoodieWriteStat record), plus the file groups each partition's replaced ones.
REPLACE_COMMIT_METADATA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieReplaceCommitMetadata",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        *(
            copy.deepcopy(f)
            if f["name"] != "extraMetadata"
            else {
                "name": "extraMetadata",
                "type": ["null", {"type": "map", "values": {"type": "string"}}],
                "default": None,
            }
            for f in COMMIT_METADATA["fields"]
        ),
        {
            "name": "partitionToReplaceFileIds",
            "type": [
                "null",
                {"type": "map", "values": {"type": "array", "items": {"type": "string"}}},
            ],
            "default": None,
        },
    ],
}

#: HoodieRollbackMetadata: completed rollback (all versions).
ROLLBACK_METADATA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieRollbackMetadata",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "startRollbackTime", "type": {"type": "string"}},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "commitsRollback", "type": {"type": "array", "items": {"type": "string"}}},
        {
            "name": "partitionMetadata",
            "type": {
                "type": "map",
                "values": {
                    "type": "record",
                    "name": "HoodieRollbackPartitionMetadata",
                    "fields": [
                        {"name": "partitionPath", "type": {"type": "string"}},
                        {
                            "name": "successDeleteFiles",
                            "type": {"type": "array", "items": {"type": "string"}},
                        },
                        {
                            "name": "failedDeleteFiles",
                            "type": {"type": "array", "items": {"type": "string"}},
                        },
                        {
                            "name": "rollbackLogFiles",
                            "type": ["null", {"type": "map", "values": "long"}],
                            "default": None,
                        },
                        {
                            "name": "logFilesFromFailedCommit",
                            "type": ["null", {"type": "map", "values": "long"}],
                            "default": None,
                        },
                    ],
                },
            },
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
        {
            "name": "instantsRollback",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieInstantInfo",
                    "fields": [
                        {"name": "commitTime", "type": {"type": "string"}},
                        {"name": "action", "type": {"type": "string"}},
                    ],
                },
                "default": [],
            },
            "default": [],
        },
    ],
}

#: HoodieRollbackPlan: requested rollback (all versions).
ROLLBACK_PLAN: dict[str, Any] = {
    "type": "record",
    "name": "HoodieRollbackPlan",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {
            "name": "instantToRollback",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "HoodieInstantInfo",
                    "fields": [
                        {"name": "commitTime", "type": {"type": "string"}},
                        {"name": "action", "type": {"type": "string"}},
                    ],
                },
            ],
            "doc": "Hoodie instant that needs to be rolled back",
            "default": None,
        },
        {
            "name": "RollbackRequests",
            "type": [
                "null",
                {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "HoodieRollbackRequest",
                        "fields": [
                            {"name": "partitionPath", "type": {"type": "string"}},
                            {
                                "name": "fileId",
                                "type": ["null", {"type": "string"}],
                                "default": None,
                            },
                            {
                                "name": "latestBaseInstant",
                                "type": ["null", {"type": "string"}],
                                "default": None,
                            },
                            {
                                "name": "filesToBeDeleted",
                                "type": {
                                    "type": "array",
                                    "items": {"type": "string"},
                                    "default": [],
                                },
                                "default": [],
                            },
                            {
                                "name": "logBlocksToBeDeleted",
                                "type": ["null", {"type": "map", "values": "long"}],
                                "default": None,
                            },
                        ],
                    },
                },
            ],
            "default": None,
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}

#: HoodieRequestedReplaceMetadata: requested replacecommit / clustering.
REQUESTED_REPLACE_METADATA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieRequestedReplaceMetadata",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "operationType", "type": ["null", {"type": "string"}], "default": None},
        {
            "name": "clusteringPlan",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "HoodieClusteringPlan",
                    "fields": [
                        {
                            "name": "inputGroups",
                            "type": [
                                "null",
                                {
                                    "type": "array",
                                    "items": {
                                        "type": "record",
                                        "name": "HoodieClusteringGroup",
                                        "fields": [
                                            {
                                                "name": "slices",
                                                "type": [
                                                    "null",
                                                    {
                                                        "type": "array",
                                                        "items": {
                                                            "type": "record",
                                                            "name": "HoodieSliceInfo",
                                                            "fields": [
                                                                {
                                                                    "name": "dataFilePath",
                                                                    "type": [
                                                                        "null",
                                                                        {"type": "string"},
                                                                    ],
                                                                    "default": None,
                                                                },
                                                                {
                                                                    "name": "deltaFilePaths",
                                                                    "type": [
                                                                        "null",
                                                                        {
                                                                            "type": "array",
                                                                            "items": {
                                                                                "type": "string"
                                                                            },
                                                                        },
                                                                    ],
                                                                    "default": None,
                                                                },
                                                                {
                                                                    "name": "fileId",
                                                                    "type": [
                                                                        "null",
                                                                        {"type": "string"},
                                                                    ],
                                                                },
                                                                {
                                                                    "name": "partitionPath",
                                                                    "type": [
                                                                        "null",
                                                                        {"type": "string"},
                                                                    ],
                                                                    "default": None,
                                                                },
                                                                {
                                                                    "name": "bootstrapFilePath",
                                                                    "type": [
                                                                        "null",
                                                                        {"type": "string"},
                                                                    ],
                                                                    "default": None,
                                                                },
                                                                {
                                                                    "name": "version",
                                                                    "type": ["int", "null"],
                                                                    "default": 1,
                                                                },
                                                            ],
                                                        },
                                                    },
                                                ],
                                                "default": None,
                                            },
                                            {
                                                "name": "metrics",
                                                "type": [
                                                    "null",
                                                    {"type": "map", "values": "double"},
                                                ],
                                                "default": None,
                                            },
                                            {
                                                "name": "numOutputFileGroups",
                                                "type": ["int", "null"],
                                                "default": 1,
                                            },
                                            {
                                                "name": "extraMetadata",
                                                "type": [
                                                    "null",
                                                    {"type": "map", "values": {"type": "string"}},
                                                ],
                                                "default": None,
                                            },
                                            {
                                                "name": "version",
                                                "type": ["int", "null"],
                                                "default": 1,
                                            },
                                        ],
                                    },
                                },
                            ],
                            "default": None,
                        },
                        {
                            "name": "strategy",
                            "type": [
                                "null",
                                {
                                    "type": "record",
                                    "name": "HoodieClusteringStrategy",
                                    "fields": [
                                        {
                                            "name": "strategyClassName",
                                            "type": ["null", {"type": "string"}],
                                            "default": None,
                                        },
                                        {
                                            "name": "strategyParams",
                                            "type": [
                                                "null",
                                                {"type": "map", "values": {"type": "string"}},
                                            ],
                                            "default": None,
                                        },
                                        {"name": "version", "type": ["int", "null"], "default": 1},
                                    ],
                                },
                            ],
                            "default": None,
                        },
                        {
                            "name": "extraMetadata",
                            "type": ["null", {"type": "map", "values": {"type": "string"}}],
                            "default": None,
                        },
                        {"name": "version", "type": ["int", "null"], "default": 1},
                        {
                            "name": "preserveHoodieMetadata",
                            "type": ["null", "boolean"],
                            "default": None,
                        },
                        {
                            "name": "missingSchedulePartitions",
                            "type": ["null", {"type": "array", "items": {"type": "string"}}],
                            "default": None,
                        },
                    ],
                },
            ],
            "default": None,
        },
        {
            "name": "extraMetadata",
            "type": ["null", {"type": "map", "values": {"type": "string"}}],
            "default": None,
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}

#: HoodieCleanMetadata: completed clean (all versions).
CLEAN_METADATA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieCleanMetadata",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "policy", "type": "string", "default": ""},
        {"name": "startCleanTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "earliestCommitToRetain", "type": "string"},
        {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
        {
            "name": "partitionMetadata",
            "type": {
                "type": "map",
                "values": {
                    "type": "record",
                    "name": "HoodieCleanPartitionMetadata",
                    "fields": [
                        {"name": "partitionPath", "type": "string"},
                        {"name": "policy", "type": "string"},
                        {
                            "name": "deletePathPatterns",
                            "type": {"type": "array", "items": "string"},
                        },
                        {
                            "name": "successDeleteFiles",
                            "type": {"type": "array", "items": "string"},
                        },
                        {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
                        {
                            "name": "isPartitionDeleted",
                            "type": ["null", "boolean"],
                            "default": None,
                        },
                    ],
                },
            },
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
        {
            "name": "bootstrapPartitionMetadata",
            "type": ["null", {"type": "map", "values": "HoodieCleanPartitionMetadata"}],
            "default": None,
        },
    ],
}

#: HoodieCleanerPlan: requested / inflight clean (all versions).
CLEANER_PLAN: dict[str, Any] = {
    "type": "record",
    "name": "HoodieCleanerPlan",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {
            "name": "earliestInstantToRetain",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "HoodieActionInstant",
                    "fields": [
                        {"name": "timestamp", "type": "string"},
                        {"name": "action", "type": "string"},
                        {"name": "state", "type": "string"},
                    ],
                },
            ],
            "default": None,
        },
        {"name": "policy", "type": "string"},
        {
            "name": "filesToBeDeletedPerPartition",
            "type": ["null", {"type": "map", "values": {"type": "array", "items": "string"}}],
            "default": None,
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
        {
            "name": "filePathsToBeDeletedPerPartition",
            "type": [
                "null",
                {
                    "type": "map",
                    "values": {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "HoodieCleanFileInfo",
                            "fields": [
                                {"name": "filePath", "type": ["null", "string"], "default": None},
                                {
                                    "name": "isBootstrapBaseFile",
                                    "type": ["null", "boolean"],
                                    "default": None,
                                },
                            ],
                        },
                    },
                },
            ],
            "default": None,
        },
        {
            "name": "partitionsToBeDeleted",
            "type": ["null", {"type": "array", "items": "string"}],
            "default": None,
        },
    ],
}
