"""The Avro schemas of ``HoodieMetadataRecord`` as Hudi 1.0 (table version 8) and Hudi 1.1
(table version 9) write them.

The texts are the SCHEMA headers of Spark-written metadata tables' log blocks
(``mor_avro_v8_trips_8i3u1d`` and ``mor_avro_v9_nonpartitioned_rollback`` in the corpus),
kept verbatim so that lakecore writes the very text Hudi writes. Readers resolve them against
their own schema version.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["metadata_record_schema", "metadata_record_schema_json"]

_V8 = (
    '{"type":"record","name":"HoodieMetadataRecord","namespace":"org.apache.hudi.avro.model",'
    '"doc":"A record saved within the Metadata Table","fields":[{"name":"_hoodie_commit_time"'
    ',"type":["null","string"],"doc":"","default":null},{"name":"_hoodie_commit_seqno","type"'
    ':["null","string"],"doc":"","default":null},{"name":"_hoodie_record_key","type":["null",'
    '"string"],"doc":"","default":null},{"name":"_hoodie_partition_path","type":["null","stri'
    'ng"],"doc":"","default":null},{"name":"_hoodie_file_name","type":["null","string"],"doc"'
    ':"","default":null},{"name":"key","type":{"type":"string","avro.java.string":"String"}},'
    '{"name":"type","type":"int","doc":"Type of the metadata record"},{"name":"filesystemMeta'
    'data","type":["null",{"type":"map","values":{"type":"record","name":"HoodieMetadataFileI'
    'nfo","fields":[{"name":"size","type":"long","doc":"Size of the file"},{"name":"isDeleted'
    '","type":"boolean","doc":"True if this file has been deleted"}]},"avro.java.string":"Str'
    'ing"}],"doc":"Contains information about partitions and files within the dataset"},{"nam'
    'e":"BloomFilterMetadata","type":["null",{"type":"record","name":"HoodieMetadataBloomFilt'
    'er","doc":"Data file bloom filter details","fields":[{"name":"type","type":{"type":"stri'
    'ng","avro.java.string":"String"},"doc":"Bloom filter type code"},{"name":"timestamp","ty'
    'pe":{"type":"string","avro.java.string":"String"},"doc":"Instant timestamp when this met'
    'adata was created/updated"},{"name":"bloomFilter","type":"bytes","doc":"Bloom filter bin'
    'ary byte array"},{"name":"isDeleted","type":"boolean","doc":"Bloom filter entry valid/de'
    'leted flag"}]}],"doc":"Metadata Index of bloom filters for all data files in the user ta'
    'ble","default":null},{"name":"ColumnStatsMetadata","type":["null",{"type":"record","name'
    '":"HoodieMetadataColumnStats","doc":"Data file column statistics","fields":[{"name":"fil'
    'eName","type":["null",{"type":"string","avro.java.string":"String"}],"doc":"File name fo'
    'r which this column statistics applies","default":null},{"name":"columnName","type":["nu'
    'll",{"type":"string","avro.java.string":"String"}],"doc":"Column name for which this col'
    'umn statistics applies","default":null},{"name":"minValue","type":["null",{"type":"recor'
    'd","name":"BooleanWrapper","doc":"A record wrapping boolean type to be able to be used i'
    't w/in Avro\'s Union","fields":[{"name":"value","type":"boolean"}]},{"type":"record","nam'
    'e":"IntWrapper","doc":"A record wrapping int type to be able to be used it w/in Avro\'s U'
    'nion","fields":[{"name":"value","type":"int"}]},{"type":"record","name":"LongWrapper","d'
    'oc":"A record wrapping long type to be able to be used it w/in Avro\'s Union","fields":[{'
    '"name":"value","type":"long"}]},{"type":"record","name":"FloatWrapper","doc":"A record w'
    'rapping float type to be able to be used it w/in Avro\'s Union","fields":[{"name":"value"'
    ',"type":"float"}]},{"type":"record","name":"DoubleWrapper","doc":"A record wrapping doub'
    'le type to be able to be used it w/in Avro\'s Union","fields":[{"name":"value","type":"do'
    'uble"}]},{"type":"record","name":"BytesWrapper","doc":"A record wrapping bytes type to b'
    'e able to be used it w/in Avro\'s Union","fields":[{"name":"value","type":"bytes"}]},{"ty'
    'pe":"record","name":"StringWrapper","doc":"A record wrapping string type to be able to b'
    'e used it w/in Avro\'s Union","fields":[{"name":"value","type":{"type":"string","avro.jav'
    'a.string":"String"}}]},{"type":"record","name":"DateWrapper","doc":"A record wrapping Da'
    'te logical type to be able to be used it w/in Avro\'s Union","fields":[{"name":"value","t'
    'ype":"int"}]},{"type":"record","name":"DecimalWrapper","doc":"A record wrapping Decimal '
    'logical type to be able to be used it w/in Avro\'s Union","fields":[{"name":"value","type'
    '":{"type":"bytes","logicalType":"decimal","precision":30,"scale":15}}]},{"type":"record"'
    ',"name":"TimeMicrosWrapper","doc":"A record wrapping Time-micros logical type to be able'
    ' to be used it w/in Avro\'s Union","fields":[{"name":"value","type":{"type":"long","logic'
    'alType":"time-micros"}}]},{"type":"record","name":"TimestampMicrosWrapper","doc":"A reco'
    'rd wrapping Timestamp-micros logical type to be able to be used it w/in Avro\'s Union","f'
    'ields":[{"name":"value","type":"long"}]},{"type":"record","name":"LocalDateWrapper","doc'
    '":"A record wrapping Local Date type to be able to be used it w/in Avro\'s Union","fields'
    '":[{"name":"value","type":"int"}]}],"doc":"Minimum value in the range. Based on user dat'
    'a table schema, we can convert this to appropriate type","default":null},{"name":"maxVal'
    'ue","type":["null","BooleanWrapper","IntWrapper","LongWrapper","FloatWrapper","DoubleWra'
    'pper","BytesWrapper","StringWrapper","DateWrapper","DecimalWrapper","TimeMicrosWrapper",'
    '"TimestampMicrosWrapper","LocalDateWrapper"],"doc":"Maximum value in the range. Based on'
    ' user data table schema, we can convert it to appropriate type","default":null},{"name":'
    '"valueCount","type":["null","long"],"doc":"Total count of values","default":null},{"name'
    '":"nullCount","type":["null","long"],"doc":"Total count of null values","default":null},'
    '{"name":"totalSize","type":["null","long"],"doc":"Total storage size on disk","default":'
    'null},{"name":"totalUncompressedSize","type":["null","long"],"doc":"Total uncompressed s'
    'torage size on disk","default":null},{"name":"isDeleted","type":"boolean","doc":"Column '
    'range entry valid/deleted flag"},{"name":"isTightBound","type":"boolean","doc":"Whether '
    'the min/max range of a column is tight bound or not","default":false}]}],"doc":"Metadata'
    ' Index of column statistics for all data files in the user table","default":null},{"name'
    '":"recordIndexMetadata","type":["null",{"type":"record","name":"HoodieRecordIndexInfo","'
    'fields":[{"name":"partitionName","type":["null",{"type":"string","avro.java.string":"Str'
    'ing"}],"doc":"Refers to the partition name the record belongs to","default":null},{"name'
    '":"fileIdHighBits","type":["null","long"],"doc":"Refers to high 64 bits if the fileId is'
    " based on UUID format. \\nA UUID based fileId is stored as 3 pieces in RLI (fileIdHighBit"
    's, fileIdLowBits and fileIndex). \\nFileID format is {UUID}-{fileIndex}.","default":null}'
    ',{"name":"fileIdLowBits","type":["null","long"],"doc":"Refers to low 64 bits if the file'
    "Id is based on UUID format. \\nA UUID based fileId is stored as 3 pieces in RLI (fileIdHi"
    'ghBits, fileIdLowBits and fileIndex). \\nFileID format is {UUID}-{fileIndex}.","default":'
    'null},{"name":"fileIndex","type":["null","int"],"doc":"Index representing file index whi'
    "ch is used to re-construct UUID based fileID. Applicable when the fileId is based on UUI"
    "D format. \\nA UUID based fileId is stored as 3 pieces in RLI (fileIdHighBits, fileIdLowB"
    'its and fileIndex). \\nFileID format is {UUID}-{fileIndex}.","default":null},{"name":"fil'
    'eId","type":["null",{"type":"string","avro.java.string":"String"}],"doc":"Represents fil'
    "eId of the location where record belongs to. When the encoding is 1, fileID is stored in"
    ' raw string format.","default":null},{"name":"instantTime","type":["null","long"],"doc":'
    '"Epoch time in millisecond representing the commit time at which record was added","defa'
    'ult":null},{"name":"fileIdEncoding","type":"int","doc":"Represents fileId encoding. Poss'
    "ible values are 0 and 1. O represents UUID based fileID, and 1 represents raw string for"
    "mat of the fileId. \\nWhen the encoding is 0, reader can deduce fileID from fileIdLowBits"
    ', fileIdHighBits and fileIndex.","default":0},{"name":"position","type":["null","long"],'
    '"doc":"Represents position of record within a file group for easier access. It will be u'
    'sed for index lookup.","default":null}]}],"doc":"Metadata Index that contains informatio'
    'n about record keys and their location in the dataset","default":null},{"name":"Secondar'
    'yIndexMetadata","type":["null",{"type":"record","name":"HoodieSecondaryIndexInfo","field'
    's":[{"name":"isDeleted","type":"boolean","doc":"True if this entry has been deleted"}]}]'
    ',"doc":"Metadata Index that contains information about secondary keys and the correspond'
    'ing record keys in the dataset","default":null}]}'
)

_V9 = (
    '{"type":"record","name":"HoodieMetadataRecord","namespace":"org.apache.hudi.avro.model",'
    '"doc":"A record saved within the Metadata Table","fields":[{"name":"_hoodie_commit_time"'
    ',"type":["null","string"],"doc":"","default":null},{"name":"_hoodie_commit_seqno","type"'
    ':["null","string"],"doc":"","default":null},{"name":"_hoodie_record_key","type":["null",'
    '"string"],"doc":"","default":null},{"name":"_hoodie_partition_path","type":["null","stri'
    'ng"],"doc":"","default":null},{"name":"_hoodie_file_name","type":["null","string"],"doc"'
    ':"","default":null},{"name":"key","type":{"type":"string","avro.java.string":"String"}},'
    '{"name":"type","type":"int","doc":"Type of the metadata record"},{"name":"filesystemMeta'
    'data","type":["null",{"type":"map","values":{"type":"record","name":"HoodieMetadataFileI'
    'nfo","fields":[{"name":"size","type":"long","doc":"Size of the file"},{"name":"isDeleted'
    '","type":"boolean","doc":"True if this file has been deleted"}]},"avro.java.string":"Str'
    'ing"}],"doc":"Contains information about partitions and files within the dataset"},{"nam'
    'e":"BloomFilterMetadata","type":["null",{"type":"record","name":"HoodieMetadataBloomFilt'
    'er","doc":"Data file bloom filter details","fields":[{"name":"type","type":{"type":"stri'
    'ng","avro.java.string":"String"},"doc":"Bloom filter type code"},{"name":"timestamp","ty'
    'pe":{"type":"string","avro.java.string":"String"},"doc":"Instant timestamp when this met'
    'adata was created/updated"},{"name":"bloomFilter","type":"bytes","doc":"Bloom filter bin'
    'ary byte array"},{"name":"isDeleted","type":"boolean","doc":"Bloom filter entry valid/de'
    'leted flag"}]}],"doc":"Metadata Index of bloom filters for all data files in the user ta'
    'ble","default":null},{"name":"ColumnStatsMetadata","type":["null",{"type":"record","name'
    '":"HoodieMetadataColumnStats","doc":"Data file column statistics","fields":[{"name":"fil'
    'eName","type":["null",{"type":"string","avro.java.string":"String"}],"doc":"File name fo'
    'r which this column statistics applies","default":null},{"name":"columnName","type":["nu'
    'll",{"type":"string","avro.java.string":"String"}],"doc":"Column name for which this col'
    'umn statistics applies","default":null},{"name":"minValue","type":["null",{"type":"recor'
    'd","name":"BooleanWrapper","doc":"A record wrapping boolean type to be able to be used i'
    't w/in Avro\'s Union","fields":[{"name":"value","type":"boolean"}]},{"type":"record","nam'
    'e":"IntWrapper","doc":"A record wrapping int type to be able to be used it w/in Avro\'s U'
    'nion","fields":[{"name":"value","type":"int"}]},{"type":"record","name":"LongWrapper","d'
    'oc":"A record wrapping long type to be able to be used it w/in Avro\'s Union","fields":[{'
    '"name":"value","type":"long"}]},{"type":"record","name":"FloatWrapper","doc":"A record w'
    'rapping float type to be able to be used it w/in Avro\'s Union","fields":[{"name":"value"'
    ',"type":"float"}]},{"type":"record","name":"DoubleWrapper","doc":"A record wrapping doub'
    'le type to be able to be used it w/in Avro\'s Union","fields":[{"name":"value","type":"do'
    'uble"}]},{"type":"record","name":"BytesWrapper","doc":"A record wrapping bytes type to b'
    'e able to be used it w/in Avro\'s Union","fields":[{"name":"value","type":"bytes"}]},{"ty'
    'pe":"record","name":"StringWrapper","doc":"A record wrapping string type to be able to b'
    'e used it w/in Avro\'s Union","fields":[{"name":"value","type":{"type":"string","avro.jav'
    'a.string":"String"}}]},{"type":"record","name":"DateWrapper","doc":"A record wrapping Da'
    'te logical type to be able to be used it w/in Avro\'s Union","fields":[{"name":"value","t'
    'ype":"int"}]},{"type":"record","name":"DecimalWrapper","doc":"A record wrapping Decimal '
    'logical type to be able to be used it w/in Avro\'s Union","fields":[{"name":"value","type'
    '":{"type":"bytes","logicalType":"decimal","precision":30,"scale":15}}]},{"type":"record"'
    ',"name":"TimeMicrosWrapper","doc":"A record wrapping Time-micros logical type to be able'
    ' to be used it w/in Avro\'s Union","fields":[{"name":"value","type":{"type":"long","logic'
    'alType":"time-micros"}}]},{"type":"record","name":"TimestampMicrosWrapper","doc":"A reco'
    'rd wrapping Timestamp-micros logical type to be able to be used it w/in Avro\'s Union","f'
    'ields":[{"name":"value","type":"long"}]},{"type":"record","name":"LocalDateWrapper","doc'
    '":"A record wrapping Local Date type to be able to be used it w/in Avro\'s Union","fields'
    '":[{"name":"value","type":"int"}]},{"type":"record","name":"ArrayWrapper","doc":"A recor'
    'd containing a list of wrapped values.","fields":[{"name":"wrappedValues","type":["null"'
    ',{"type":"array","items":["null","BooleanWrapper","IntWrapper","LongWrapper","FloatWrapp'
    'er","DoubleWrapper","BytesWrapper","StringWrapper","DateWrapper","DecimalWrapper","TimeM'
    'icrosWrapper","TimestampMicrosWrapper","LocalDateWrapper"]}],"doc":"An array where each '
    'element is one of the supported wrapper types.","default":null}]}],"doc":"Minimum value '
    'in the range. Based on user data table schema, we can convert this to appropriate type",'
    '"default":null},{"name":"maxValue","type":["null","BooleanWrapper","IntWrapper","LongWra'
    'pper","FloatWrapper","DoubleWrapper","BytesWrapper","StringWrapper","DateWrapper","Decim'
    'alWrapper","TimeMicrosWrapper","TimestampMicrosWrapper","LocalDateWrapper","ArrayWrapper'
    '"],"doc":"Maximum value in the range. Based on user data table schema, we can convert it'
    ' to appropriate type","default":null},{"name":"valueCount","type":["null","long"],"doc":'
    '"Total count of values","default":null},{"name":"nullCount","type":["null","long"],"doc"'
    ':"Total count of null values","default":null},{"name":"totalSize","type":["null","long"]'
    ',"doc":"Total storage size on disk","default":null},{"name":"totalUncompressedSize","typ'
    'e":["null","long"],"doc":"Total uncompressed storage size on disk","default":null},{"nam'
    'e":"isDeleted","type":"boolean","doc":"Column range entry valid/deleted flag"},{"name":"'
    'isTightBound","type":"boolean","doc":"Whether the min/max range of a column is tight bou'
    'nd or not","default":false},{"name":"valueType","type":["null",{"type":"record","name":"'
    'HoodieValueTypeInfo","fields":[{"name":"typeOrdinal","type":"int","doc":"Enum type ordin'
    'al representing the value type"},{"name":"additionalInfo","type":["null",{"type":"string'
    '","avro.java.string":"String"}],"doc":"Optional additional information about the value t'
    'ype","default":null}]}],"doc":"Value type information containing enum ordinal and option'
    'al additional information","default":null}]}],"doc":"Metadata Index of column statistics'
    ' for all data files in the user table","default":null},{"name":"recordIndexMetadata","ty'
    'pe":["null",{"type":"record","name":"HoodieRecordIndexInfo","fields":[{"name":"partition'
    'Name","type":["null",{"type":"string","avro.java.string":"String"}],"doc":"Refers to the'
    ' partition name the record belongs to","default":null},{"name":"fileIdHighBits","type":['
    '"null","long"],"doc":"Refers to high 64 bits if the fileId is based on UUID format. \\nA '
    "UUID based fileId is stored as 3 pieces in RLI (fileIdHighBits, fileIdLowBits and fileIn"
    'dex). \\nFileID format is {UUID}-{fileIndex}.","default":null},{"name":"fileIdLowBits","t'
    'ype":["null","long"],"doc":"Refers to low 64 bits if the fileId is based on UUID format.'
    " \\nA UUID based fileId is stored as 3 pieces in RLI (fileIdHighBits, fileIdLowBits and f"
    'ileIndex). \\nFileID format is {UUID}-{fileIndex}.","default":null},{"name":"fileIndex","'
    'type":["null","int"],"doc":"Index representing file index which is used to re-construct '
    "UUID based fileID. Applicable when the fileId is based on UUID format. \\nA UUID based fi"
    "leId is stored as 3 pieces in RLI (fileIdHighBits, fileIdLowBits and fileIndex). \\nFileI"
    'D format is {UUID}-{fileIndex}.","default":null},{"name":"fileId","type":["null",{"type"'
    ':"string","avro.java.string":"String"}],"doc":"Represents fileId of the location where r'
    'ecord belongs to. When the encoding is 1, fileID is stored in raw string format.","defau'
    'lt":null},{"name":"instantTime","type":["null","long"],"doc":"Epoch time in millisecond '
    'representing the commit time at which record was added","default":null},{"name":"fileIdE'
    'ncoding","type":"int","doc":"Represents fileId encoding. Possible values are 0 and 1. O '
    "represents UUID based fileID, and 1 represents raw string format of the fileId. \\nWhen t"
    "he encoding is 0, reader can deduce fileID from fileIdLowBits, fileIdHighBits and fileIn"
    'dex.","default":0},{"name":"position","type":["null","long"],"doc":"Represents position '
    'of record within a file group for easier access. It will be used for index lookup.","def'
    'ault":null}]}],"doc":"Metadata Index that contains information about record keys and the'
    'ir location in the dataset","default":null},{"name":"SecondaryIndexMetadata","type":["nu'
    'll",{"type":"record","name":"HoodieSecondaryIndexInfo","fields":[{"name":"isDeleted","ty'
    'pe":"boolean","doc":"True if this entry has been deleted"}]}],"doc":"Metadata Index that'
    " contains information about secondary keys and the corresponding record keys in the data"
    'set","default":null}]}'
)


def metadata_record_schema_json(table_version: int) -> str:
    """The schema text Hudi writes metadata records with for a data table of
    ``table_version`` (8: Hudi 1.0, 9 and later: Hudi 1.1)."""
    return _V9 if table_version >= 9 else _V8


def metadata_record_schema(table_version: int) -> dict[str, Any]:
    """``metadata_record_schema_json`` parsed."""
    parsed: dict[str, Any] = json.loads(metadata_record_schema_json(table_version))
    return parsed
