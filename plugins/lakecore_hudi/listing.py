"""How a snapshot lists the table's data files: the metadata table, or storage.

When the table declares the metadata table's ``files`` partition
(``hoodie.table.metadata.partitions`` contains ``files``) and the reader did not pass
``hoodie.metadata.enable=false``, the listing is the ``files`` partition's latest file slice
(one base HFile and its log files; ``mdt.files_partition``), as Hudi's readers and hudi-rs
list such tables: no partition directory is listed. Otherwise every file under the table
root is listed. Either way the result goes through the same file-system view, which keeps
only files of instants visible to the snapshot (time travel filters by the data timeline).

A metadata table that the table declares but that cannot be read (missing, no file slice,
undecodable) is ``CorruptTableError``: listing storage instead would silently disagree with
every other reader that trusts the metadata table. ``hoodie.metadata.enable=false`` always
lists storage.

The metadata table records no modification times: a listed file's is the time of the
instant its name carries.

External files (``<name>_<commit>[_fg%3D<dir>]_hudiext`` entries, files not named by Hudi's
scheme) become base files whose file group id is the file name (``<dir>/<name>`` with a
sub-directory) and whose base instant is the commit time, as Hudi reads them.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse

from lakecore.errors import CorruptTableError
from lakecore.storage import FileInfo, Storage
from lakecore_hudi.mdt.files_partition import FILES_PARTITION, read_files_partition
from lakecore_hudi.mdt.files_records import EXTERNAL_SUFFIX
from lakecore_hudi.names import BaseFile
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import Timeline
from lakecore_hudi.view import SliceFile, data_files

__all__ = ["list_data_files", "parse_external_name", "uses_metadata_table"]

MDT_PROPERTIES = ".hoodie/metadata/.hoodie/hoodie.properties"
_PREFIX_MARKER = "_fg%3D"
_COMMIT_END = re.compile(r".+_[0-9]+$")
"""What precedes a file-group prefix marker: ``<file>_<commit time>``."""


def uses_metadata_table(config: TableConfig, options: ReadOptions) -> bool:
    """Whether snapshots of this table list files through the ``files`` partition."""
    return options.metadata_enable and FILES_PARTITION in config.metadata_partitions


def list_data_files(
    storage: Storage, config: TableConfig, timeline: Timeline, options: ReadOptions
) -> list[SliceFile]:
    """The table's data files (base and log files outside ``.hoodie``), unfiltered by time.

    Args:
        storage: Storage rooted at the data table.
        config: The data table's configuration.
        timeline: The data table's active timeline (which metadata blocks count).
        options: The reading options (``metadata_enable``).

    Raises:
        CorruptTableError: the table declares the ``files`` partition but the metadata
            table is missing or unreadable; names the file.
        UnsupportedFeatureError: a metadata-table file uses a feature lakecore cannot read.
    """
    if not uses_metadata_table(config, options):
        return data_files(storage.list_all(""))
    completed = frozenset(i.timestamp for i in timeline.completed())
    first = min((i.timestamp for i in timeline.instants), default=None)
    listing = read_files_partition(storage, config, (completed, first))
    if listing is None:
        raise CorruptTableError(
            f"{MDT_PROPERTIES}: missing, but hoodie.table.metadata.partitions declares the "
            "'files' partition (open with options={'hoodie.metadata.enable': 'false'} to "
            "list storage instead)"
        )
    infos: list[FileInfo] = []
    external: list[SliceFile] = []
    for partition, files in listing.items():
        for name, size in files.items():
            found = parse_external_name(partition, name, size)
            if found is not None:
                external.append(found)
            else:
                path = f"{partition}/{name}" if partition else name
                infos.append(FileInfo(path, size, 0))
    return [_timed(f) for f in data_files(infos) + external]


def _timed(file: SliceFile) -> SliceFile:
    """``file`` with the time of the instant its name carries as its modification time: the
    metadata table records none, and formats that need one (a Delta ``add``) get the time the
    table itself gives the file (for table version 6 log files, their slice's base instant).
    """
    from lakecore_hudi.state import instant_epoch_ms  # state imports this module

    millis = instant_epoch_ms(file.name.instant) or 0
    return dataclasses.replace(file, info=dataclasses.replace(file.info, modification_time=millis))


def parse_external_name(partition: str, name: str, size: int) -> SliceFile | None:
    """The base file an external ``files``-partition entry stands for; None for other names.

    ``<file>_<commit>_hudiext`` is ``<partition>/<file>``; with ``_fg%3D<dir>`` before the
    suffix it is ``<partition>/<dir>/<file>`` and its file group id is ``<dir>/<file>``. The
    marker counts only right after the commit time and before a URL-encoded directory (which
    never holds ``%3D`` itself: its ``%`` is encoded): a file may hold the marker's text in
    its own name. Names that parse two ways are refused by the writer (``write.adopt``).
    """
    if not name.endswith(EXTERNAL_SUFFIX):
        return None
    stem = name.removesuffix(EXTERNAL_SUFFIX)
    prefix = ""
    head, marker, encoded = stem.rpartition(_PREFIX_MARKER)
    if marker and _COMMIT_END.search(head) and _is_encoded(encoded):
        stem, prefix = head, urllib.parse.unquote(encoded)
    file_name, _, commit = stem.rpartition("_")
    if not file_name or not commit.isdigit():
        return None
    file_id = f"{prefix}/{file_name}" if prefix else file_name
    path = f"{partition}/{file_id}" if partition else file_id
    extension = file_name.rpartition(".")[2] if "." in file_name else ""
    parsed = BaseFile(file_id, "", commit, extension)
    return SliceFile(FileInfo(path, size, 0), parsed, partition)


def _is_encoded(text: str) -> bool:
    """Whether ``text`` is a directory as ``external_file_name`` encodes it (all of it
    quoted, none of it empty)."""
    return bool(text) and urllib.parse.quote(urllib.parse.unquote(text), safe="") == text
