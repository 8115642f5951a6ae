"""The Avro schema of ``HoodieMetadataRecord`` as Hudi 1.0 (table version 8) writes it.

Taken from the SCHEMA header of a Spark-written metadata table's log block (Hudi 1.0.2,
``mor_avro_v8_trips_8i3u1d`` in the corpus); ``json.dumps(..., separators=(",", ":"))`` of
it is exactly the text Hudi writes. Readers resolve it against their own schema version.
"""

from __future__ import annotations

from typing import Any

__all__ = ["METADATA_RECORD_SCHEMA"]

METADATA_RECORD_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieMetadataRecord",
    "namespace": "org.apache.hudi.avro.model",
    "doc": "A record saved within the Metadata Table",
    "fields": [
        {"name": "_hoodie_commit_time", "type": ["null", "string"], "doc": "", "default": None},
        {"name": "_hoodie_commit_seqno", "type": ["null", "string"], "doc": "", "default": None},
        {"name": "_hoodie_record_key", "type": ["null", "string"], "doc": "", "default": None},
        {"name": "_hoodie_partition_path", "type": ["null", "string"], "doc": "", "default": None},
        {"name": "_hoodie_file_name", "type": ["null", "string"], "doc": "", "default": None},
        {"name": "key", "type": {"type": "string", "avro.java.string": "String"}},
        {"name": "type", "type": "int", "doc": "Type of the metadata record"},
        {
            "name": "filesystemMetadata",
            "type": [
                "null",
                {
                    "type": "map",
                    "values": {
                        "type": "record",
                        "name": "HoodieMetadataFileInfo",
                        "fields": [
                            {"name": "size", "type": "long", "doc": "Size of the file"},
                            {
                                "name": "isDeleted",
                                "type": "boolean",
                                "doc": "True if this file has been deleted",
                            },
                        ],
                    },
                    "avro.java.string": "String",
                },
            ],
            "doc": "Contains information about partitions and files within the dataset",
        },
        {
            "name": "BloomFilterMetadata",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "HoodieMetadataBloomFilter",
                    "doc": "Data file bloom filter details",
                    "fields": [
                        {
                            "name": "type",
                            "type": {"type": "string", "avro.java.string": "String"},
                            "doc": "Bloom filter type code",
                        },
                        {
                            "name": "timestamp",
                            "type": {"type": "string", "avro.java.string": "String"},
                            "doc": "Instant timestamp when this metadata was created/updated",
                        },
                        {
                            "name": "bloomFilter",
                            "type": "bytes",
                            "doc": "Bloom filter binary byte array",
                        },
                        {
                            "name": "isDeleted",
                            "type": "boolean",
                            "doc": "Bloom filter entry valid/deleted flag",
                        },
                    ],
                },
            ],
            "doc": "Metadata Index of bloom filters for all data files in the user table",
            "default": None,
        },
        {
            "name": "ColumnStatsMetadata",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "HoodieMetadataColumnStats",
                    "doc": "Data file column statistics",
                    "fields": [
                        {
                            "name": "fileName",
                            "type": ["null", {"type": "string", "avro.java.string": "String"}],
                            "doc": "File name for which this column statistics applies",
                            "default": None,
                        },
                        {
                            "name": "columnName",
                            "type": ["null", {"type": "string", "avro.java.string": "String"}],
                            "doc": "Column name for which this column statistics applies",
                            "default": None,
                        },
                        {
                            "name": "minValue",
                            "type": [
                                "null",
                                {
                                    "type": "record",
                                    "name": "BooleanWrapper",
                                    "doc": "A record wrapping boolean type to be able "
                                    "to be used it w/in Avro's Union",
                                    "fields": [{"name": "value", "type": "boolean"}],
                                },
                                {
                                    "type": "record",
                                    "name": "IntWrapper",
                                    "doc": "A record wrapping int type to be able to "
                                    "be used it w/in Avro's Union",
                                    "fields": [{"name": "value", "type": "int"}],
                                },
                                {
                                    "type": "record",
                                    "name": "LongWrapper",
                                    "doc": "A record wrapping long type to be able to "
                                    "be used it w/in Avro's Union",
                                    "fields": [{"name": "value", "type": "long"}],
                                },
                                {
                                    "type": "record",
                                    "name": "FloatWrapper",
                                    "doc": "A record wrapping float type to be able "
                                    "to be used it w/in Avro's Union",
                                    "fields": [{"name": "value", "type": "float"}],
                                },
                                {
                                    "type": "record",
                                    "name": "DoubleWrapper",
                                    "doc": "A record wrapping double type to be able "
                                    "to be used it w/in Avro's Union",
                                    "fields": [{"name": "value", "type": "double"}],
                                },
                                {
                                    "type": "record",
                                    "name": "BytesWrapper",
                                    "doc": "A record wrapping bytes type to be able "
                                    "to be used it w/in Avro's Union",
                                    "fields": [{"name": "value", "type": "bytes"}],
                                },
                                {
                                    "type": "record",
                                    "name": "StringWrapper",
                                    "doc": "A record wrapping string type to be able "
                                    "to be used it w/in Avro's Union",
                                    "fields": [
                                        {
                                            "name": "value",
                                            "type": {
                                                "type": "string",
                                                "avro.java.string": "String",
                                            },
                                        }
                                    ],
                                },
                                {
                                    "type": "record",
                                    "name": "DateWrapper",
                                    "doc": "A record wrapping Date logical type to be "
                                    "able to be used it w/in Avro's Union",
                                    "fields": [{"name": "value", "type": "int"}],
                                },
                                {
                                    "type": "record",
                                    "name": "DecimalWrapper",
                                    "doc": "A record wrapping Decimal logical type to "
                                    "be able to be used it w/in Avro's Union",
                                    "fields": [
                                        {
                                            "name": "value",
                                            "type": {
                                                "type": "bytes",
                                                "logicalType": "decimal",
                                                "precision": 30,
                                                "scale": 15,
                                            },
                                        }
                                    ],
                                },
                                {
                                    "type": "record",
                                    "name": "TimeMicrosWrapper",
                                    "doc": "A record wrapping Time-micros logical "
                                    "type to be able to be used it w/in Avro's "
                                    "Union",
                                    "fields": [
                                        {
                                            "name": "value",
                                            "type": {"type": "long", "logicalType": "time-micros"},
                                        }
                                    ],
                                },
                                {
                                    "type": "record",
                                    "name": "TimestampMicrosWrapper",
                                    "doc": "A record wrapping Timestamp-micros "
                                    "logical type to be able to be used it "
                                    "w/in Avro's Union",
                                    "fields": [{"name": "value", "type": "long"}],
                                },
                                {
                                    "type": "record",
                                    "name": "LocalDateWrapper",
                                    "doc": "A record wrapping Local Date type to be "
                                    "able to be used it w/in Avro's Union",
                                    "fields": [{"name": "value", "type": "int"}],
                                },
                            ],
                            "doc": "Minimum value in the range. Based on user data "
                            "table schema, we can convert this to appropriate "
                            "type",
                            "default": None,
                        },
                        {
                            "name": "maxValue",
                            "type": [
                                "null",
                                "BooleanWrapper",
                                "IntWrapper",
                                "LongWrapper",
                                "FloatWrapper",
                                "DoubleWrapper",
                                "BytesWrapper",
                                "StringWrapper",
                                "DateWrapper",
                                "DecimalWrapper",
                                "TimeMicrosWrapper",
                                "TimestampMicrosWrapper",
                                "LocalDateWrapper",
                            ],
                            "doc": "Maximum value in the range. Based on user data "
                            "table schema, we can convert it to appropriate type",
                            "default": None,
                        },
                        {
                            "name": "valueCount",
                            "type": ["null", "long"],
                            "doc": "Total count of values",
                            "default": None,
                        },
                        {
                            "name": "nullCount",
                            "type": ["null", "long"],
                            "doc": "Total count of null values",
                            "default": None,
                        },
                        {
                            "name": "totalSize",
                            "type": ["null", "long"],
                            "doc": "Total storage size on disk",
                            "default": None,
                        },
                        {
                            "name": "totalUncompressedSize",
                            "type": ["null", "long"],
                            "doc": "Total uncompressed storage size on disk",
                            "default": None,
                        },
                        {
                            "name": "isDeleted",
                            "type": "boolean",
                            "doc": "Column range entry valid/deleted flag",
                        },
                        {
                            "name": "isTightBound",
                            "type": "boolean",
                            "doc": "Whether the min/max range of a column is tight bound or not",
                            "default": False,
                        },
                    ],
                },
            ],
            "doc": "Metadata Index of column statistics for all data files in the user table",
            "default": None,
        },
        {
            "name": "recordIndexMetadata",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "HoodieRecordIndexInfo",
                    "fields": [
                        {
                            "name": "partitionName",
                            "type": ["null", {"type": "string", "avro.java.string": "String"}],
                            "doc": "Refers to the partition name the record belongs to",
                            "default": None,
                        },
                        {
                            "name": "fileIdHighBits",
                            "type": ["null", "long"],
                            "doc": "Refers to high 64 bits if the fileId is based on "
                            "UUID format. \n"
                            "A UUID based fileId is stored as 3 pieces in RLI "
                            "(fileIdHighBits, fileIdLowBits and fileIndex). \n"
                            "FileID format is {UUID}-{fileIndex}.",
                            "default": None,
                        },
                        {
                            "name": "fileIdLowBits",
                            "type": ["null", "long"],
                            "doc": "Refers to low 64 bits if the fileId is based on "
                            "UUID format. \n"
                            "A UUID based fileId is stored as 3 pieces in RLI "
                            "(fileIdHighBits, fileIdLowBits and fileIndex). \n"
                            "FileID format is {UUID}-{fileIndex}.",
                            "default": None,
                        },
                        {
                            "name": "fileIndex",
                            "type": ["null", "int"],
                            "doc": "Index representing file index which is used to "
                            "re-construct UUID based fileID. Applicable when the "
                            "fileId is based on UUID format. \n"
                            "A UUID based fileId is stored as 3 pieces in RLI "
                            "(fileIdHighBits, fileIdLowBits and fileIndex). \n"
                            "FileID format is {UUID}-{fileIndex}.",
                            "default": None,
                        },
                        {
                            "name": "fileId",
                            "type": ["null", {"type": "string", "avro.java.string": "String"}],
                            "doc": "Represents fileId of the location where record "
                            "belongs to. When the encoding is 1, fileID is "
                            "stored in raw string format.",
                            "default": None,
                        },
                        {
                            "name": "instantTime",
                            "type": ["null", "long"],
                            "doc": "Epoch time in millisecond representing the commit "
                            "time at which record was added",
                            "default": None,
                        },
                        {
                            "name": "fileIdEncoding",
                            "type": "int",
                            "doc": "Represents fileId encoding. Possible values are 0 "
                            "and 1. O represents UUID based fileID, and 1 "
                            "represents raw string format of the fileId. \n"
                            "When the encoding is 0, reader can deduce fileID "
                            "from fileIdLowBits, fileIdHighBits and fileIndex.",
                            "default": 0,
                        },
                        {
                            "name": "position",
                            "type": ["null", "long"],
                            "doc": "Represents position of record within a file group "
                            "for easier access. It will be used for index "
                            "lookup.",
                            "default": None,
                        },
                    ],
                },
            ],
            "doc": "Metadata Index that contains information about record keys and their "
            "location in the dataset",
            "default": None,
        },
        {
            "name": "SecondaryIndexMetadata",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "HoodieSecondaryIndexInfo",
                    "fields": [
                        {
                            "name": "isDeleted",
                            "type": "boolean",
                            "doc": "True if this entry has been deleted",
                        }
                    ],
                },
            ],
            "doc": "Metadata Index that contains information about secondary keys and the "
            "corresponding record keys in the dataset",
            "default": None,
        },
    ],
}
