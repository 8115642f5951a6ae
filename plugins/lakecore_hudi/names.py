"""Hudi data file names: parsing and building base-file and log-file names.

Base file: ``<fileId>_<writeToken>_<instant>.<ext>``, e.g.
``6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_0-1112-3190_20251220210129235.parquet``.

Log file: ``.<fileId>_<instant>.<ext>.<version>_<writeToken>[.cdc]``, e.g.
``.8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_20251220210130911.log.1_0-1139-3316``.
In table version 6 the log file's instant is the instant of the base file it belongs to; from
table version 8 on it is the instant of the delta commit that wrote it. The parsed field is
therefore just called ``instant``; the caller knows the table version and interprets it.

Write tokens are ``<partitionId>-<stageId>-<attemptId>`` (Spark task coordinates).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

__all__ = [
    "BaseFile",
    "LogFile",
    "base_file_name",
    "is_base_file",
    "is_log_file",
    "log_file_name",
    "log_file_sort_key",
    "new_file_id",
    "parse_base_file_name",
    "parse_log_file_name",
    "write_token",
]

# The file id is greedy-but-underscore-free on the right so ids that contain "_" still parse
# (the instant and token never contain "_"). Instants are all digits: 14 (seconds, old tables)
# or 17 (milliseconds) long, and metadata-table bootstrap instants like "00000000000000000".
_BASE_RE = re.compile(
    r"^(?P<file_id>.+)_(?P<token>\d+-\d+-\d+)_(?P<instant>\d+)\.(?P<ext>[A-Za-z]\w*)$"
)
_LOG_RE = re.compile(
    r"^\.(?P<file_id>.+)_(?P<instant>\d+)\.(?P<ext>log|archive)\.(?P<version>\d+)"
    r"(?:_(?P<token>\d+-\d+-\d+))?(?P<cdc>\.cdc)?$"
)


@dataclass(frozen=True, slots=True)
class BaseFile:
    """A parsed base (columnar) file name; ``extension`` has no dot (``"parquet"``)."""

    file_id: str
    write_token: str
    instant: str
    extension: str

    @property
    def name(self) -> str:
        """The file name this record was parsed from (or would be written as)."""
        return base_file_name(self.file_id, self.write_token, self.instant, self.extension)


@dataclass(frozen=True, slots=True)
class LogFile:
    """A parsed log file name.

    ``instant`` is the base file's instant in table version 6 and the writing delta commit's
    instant in table version 8+. ``write_token`` is None for very old names without one;
    ``is_cdc`` marks change-data-capture logs (``...log.1_0-1-2.cdc``).
    """

    file_id: str
    instant: str
    extension: str
    version: int
    write_token: str | None
    is_cdc: bool = False

    @property
    def name(self) -> str:
        """The file name this record was parsed from (or would be written as)."""
        name = f".{self.file_id}_{self.instant}.{self.extension}.{self.version}"
        if self.write_token is not None:
            name += f"_{self.write_token}"
        return name + (".cdc" if self.is_cdc else "")


def _basename(name: str) -> str:
    # Callers often hold table-relative paths ("city=x/.f_1.log.1_0-1-2"); only the last
    # part is the file name.
    return name.rsplit("/", 1)[-1]


def parse_base_file_name(name: str) -> BaseFile | None:
    """Parse a base file name (or a path ending in one); None if it is not a Hudi base file.

    Hidden files (``.hoodie_partition_metadata``, log files) are never base files.
    """
    base = _basename(name)
    if base.startswith("."):
        return None
    m = _BASE_RE.match(base)
    if m is None:
        return None
    return BaseFile(m["file_id"], m["token"], m["instant"], m["ext"])


def parse_log_file_name(name: str) -> LogFile | None:
    """Parse a log file name (or a path ending in one); None if it is not a Hudi log file."""
    m = _LOG_RE.match(_basename(name))
    if m is None:
        return None
    return LogFile(
        file_id=m["file_id"],
        instant=m["instant"],
        extension=m["ext"],
        version=int(m["version"]),
        write_token=m["token"],
        is_cdc=m["cdc"] is not None,
    )


def is_log_file(name: str) -> bool:
    """Return whether ``name`` (a file name or path) is a Hudi log file."""
    return parse_log_file_name(name) is not None


def is_base_file(name: str) -> bool:
    """Return whether ``name`` (a file name or path) is a Hudi base file."""
    return parse_base_file_name(name) is not None


def base_file_name(file_id: str, write_token: str, instant: str, extension: str) -> str:
    """Build ``<fileId>_<writeToken>_<instant>.<ext>``; ``extension`` may carry a leading dot."""
    return f"{file_id}_{write_token}_{instant}.{extension.lstrip('.')}"


def log_file_name(file_id: str, instant: str, version: int, write_token: str) -> str:
    """Build ``.<fileId>_<instant>.log.<version>_<writeToken>``.

    Raises:
        ValueError: ``version`` is below 1 (Hudi numbers log versions from 1).
    """
    if version < 1:
        raise ValueError(f"log file version must be >= 1, got {version}")
    return f".{file_id}_{instant}.log.{version}_{write_token}"


def new_file_id() -> str:
    """Return a fresh file-group id the way Hudi makes them: a random UUID plus ``-0``."""
    return f"{uuid.uuid4()}-0"


def write_token(partition_id: int, stage_id: int, attempt_id: int) -> str:
    """Return the write token ``<partitionId>-<stageId>-<attemptId>``."""
    return f"{partition_id}-{stage_id}-{attempt_id}"


def log_file_sort_key(log: LogFile) -> tuple[str, int, str, bool]:
    """Key ordering the log files of one file group the way Hudi reads them.

    Hudi orders by instant (as a string), then log version (as a number), then write token
    (as a string, a missing token first), then plain logs before CDC logs.
    """
    return (log.instant, log.version, log.write_token or "", log.is_cdc)
