"""Protocol gating: reader versions and reader features, checked before any data is read."""

from __future__ import annotations

import pytest

import lakecore
from lakecore.errors import UnsupportedFeatureError

from .builders import DeltaTableBuilder, add, commit_info, metadata, protocol
from .conftest import ID_FIELDS, id_rows

KNOWN_READER_FEATURES = [
    "deletionVectors",
    "columnMapping",
    "timestampNtz",
    "v2Checkpoint",
    "typeWidening",
    "vacuumProtocolCheck",
]


def gated_table(builder: DeltaTableBuilder, proto: dict) -> None:
    """A table whose only data file does not exist: reading it would fail loudly."""
    builder.commit(0, commit_info("CREATE TABLE"), proto, metadata(ID_FIELDS))
    builder.commit(1, commit_info(), add("does-not-exist.parquet", stats={"numRecords": 1}))


@pytest.mark.parametrize("reader", [4, 5, 0])
def test_unsupported_reader_version(builder: DeltaTableBuilder, reader: int) -> None:
    gated_table(builder, protocol(reader, 7))
    with pytest.raises(UnsupportedFeatureError, match=str(reader)) as info:
        lakecore.open(builder.uri).snapshot()
    assert str(reader) in info.value.feature


def test_unknown_reader_feature_is_named_before_any_data_is_read(
    builder: DeltaTableBuilder,
) -> None:
    gated_table(builder, protocol(3, 7, ["deletionVectors", "zFutureFeature"], ["deletionVectors"]))
    table = lakecore.open(builder.uri)
    with pytest.raises(UnsupportedFeatureError, match="zFutureFeature") as info:
        table.snapshot()
    assert info.value.feature == "zFutureFeature"
    with pytest.raises(UnsupportedFeatureError):
        table.to_arrow()
    with pytest.raises(UnsupportedFeatureError):
        table.snapshot(timestamp="2999-01-01")


def test_unknown_feature_in_a_checkpoint_protocol(builder: DeltaTableBuilder) -> None:
    proto = protocol(3, 7, ["someOtherFeature"], ["someOtherFeature"])
    gated_table(builder, proto)
    builder.checkpoint(1, [proto, metadata(ID_FIELDS), add("does-not-exist.parquet")])
    builder.commit_path(0).unlink()
    builder.commit_path(1).unlink()
    with pytest.raises(UnsupportedFeatureError) as info:
        lakecore.open(builder.uri).snapshot()
    assert info.value.feature == "someOtherFeature"


def test_protocol_upgrade_gates_only_later_versions(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    builder.commit(1, commit_info(), builder.data_file("a.parquet", id_rows(1)))
    builder.commit(2, commit_info("UPGRADE"), protocol(3, 7, ["brandNew"], ["brandNew"]))
    table = lakecore.open(builder.uri)
    assert table.to_arrow(version=1).num_rows == 1
    with pytest.raises(UnsupportedFeatureError) as info:
        table.snapshot()
    assert info.value.feature == "brandNew"


@pytest.mark.parametrize("feature", KNOWN_READER_FEATURES)
def test_known_reader_features_are_accepted(builder: DeltaTableBuilder, feature: str) -> None:
    builder.init(ID_FIELDS, proto=protocol(3, 7, [feature], [feature]))
    builder.commit(1, commit_info(), builder.data_file("a.parquet", id_rows(1, 2)))
    snap = lakecore.open(builder.uri).snapshot()
    assert snap.features.reader_features == {feature}
    assert snap.to_arrow().num_rows == 2


def test_all_known_reader_features_together(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS, proto=protocol(3, 7, KNOWN_READER_FEATURES, KNOWN_READER_FEATURES))
    builder.commit(1, commit_info(), builder.data_file("a.parquet", id_rows(1)))
    assert lakecore.open(builder.uri).to_arrow().num_rows == 1


def test_unknown_writer_feature_does_not_block_reading(builder: DeltaTableBuilder) -> None:
    builder.init(
        ID_FIELDS, proto=protocol(3, 7, ["deletionVectors"], ["deletionVectors", "writerOnlyX"])
    )
    builder.commit(1, commit_info(), builder.data_file("a.parquet", id_rows(1)))
    assert lakecore.open(builder.uri).to_arrow().num_rows == 1


def test_reader_features_are_ignored_below_reader_version_3(builder: DeltaTableBuilder) -> None:
    # Only reader version 3 has reader features; a stray list on version 1 means nothing.
    builder.init(ID_FIELDS, proto=protocol(1, 2, ["whatever"]))
    builder.commit(1, commit_info(), builder.data_file("a.parquet", id_rows(1)))
    assert lakecore.open(builder.uri).to_arrow().num_rows == 1


def test_unknown_column_mapping_mode(builder: DeltaTableBuilder) -> None:
    builder.commit(
        0,
        commit_info(),
        protocol(2, 5),
        metadata(ID_FIELDS, configuration={"delta.columnMapping.mode": "magic"}),
    )
    builder.commit(1, commit_info(), add("does-not-exist.parquet"))
    with pytest.raises(UnsupportedFeatureError, match="magic") as info:
        lakecore.open(builder.uri).snapshot()
    assert "columnMapping" in info.value.feature


def test_unknown_data_type_is_unsupported(builder: DeltaTableBuilder) -> None:
    from .builders import field

    builder.init([field("id", "long"), field("g", "geometry(OGC:CRS84)")])
    with pytest.raises(UnsupportedFeatureError, match="geometry"):
        lakecore.open(builder.uri).snapshot()
