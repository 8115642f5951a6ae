"""Names of the files in ``_delta_log`` and what they mean."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from lakecore.storage import FileInfo

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = f"{LOG_DIR}/_last_checkpoint"
SIDECAR_DIR = f"{LOG_DIR}/_sidecars"

_NAME = re.compile(
    r"(?P<version>\d{20})\."
    r"(?:(?P<commit>json)"
    r"|(?P<crc>crc)"
    r"|checkpoint\.parquet"
    r"|checkpoint\.(?P<part>\d{10})\.(?P<parts>\d{10})\.parquet"
    r"|checkpoint\.(?P<uuid>[0-9a-fA-F-]{36})\.(?P<v2ext>json|parquet)"
    r"|(?P<end>\d{20})\.compacted\.json)"
)


class LogFileKind(Enum):
    """What a ``_delta_log`` file holds."""

    COMMIT = "commit"
    CHECKPOINT = "checkpoint"
    MULTIPART_CHECKPOINT = "multipart-checkpoint"
    V2_CHECKPOINT = "v2-checkpoint"
    COMPACTION = "compaction"
    CRC = "crc"


@dataclass(frozen=True, slots=True)
class LogFile:
    """A parsed ``_delta_log`` file name with its listing info."""

    info: FileInfo
    kind: LogFileKind
    version: int
    part: int = 1
    parts: int = 1
    end_version: int | None = None
    """Last version covered by a log compaction file."""

    @property
    def path(self) -> str:
        return self.info.path


def commit_path(version: int) -> str:
    """Return the path of the commit file of ``version``."""
    return f"{LOG_DIR}/{version:020d}.json"


def parse_log_file(info: FileInfo) -> LogFile | None:
    """Classify a listed file of ``_delta_log``; None for files that are not log files."""
    name = info.path.rsplit("/", 1)[-1]
    m = _NAME.fullmatch(name)
    if m is None:
        return None
    version = int(m.group("version"))
    if m.group("commit"):
        return LogFile(info, LogFileKind.COMMIT, version)
    if m.group("crc"):
        return LogFile(info, LogFileKind.CRC, version)
    if m.group("part"):
        return LogFile(
            info,
            LogFileKind.MULTIPART_CHECKPOINT,
            version,
            int(m.group("part")),
            int(m.group("parts")),
        )
    if m.group("uuid"):
        return LogFile(info, LogFileKind.V2_CHECKPOINT, version)
    if m.group("end"):
        return LogFile(info, LogFileKind.COMPACTION, version, end_version=int(m.group("end")))
    return LogFile(info, LogFileKind.CHECKPOINT, version)
