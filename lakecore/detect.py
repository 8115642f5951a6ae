"""Format autodetection: ask every registered format, collect all matches."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from lakecore.errors import (
    AmbiguousFormatError,
    LakecoreError,
    PluginNotInstalledError,
    StorageError,
    TableNotFoundError,
    UnknownFormatError,
)
from lakecore.format import TableFormat
from lakecore.plugins import INSTALL_HINTS, FormatRegistry
from lakecore.storage import Storage

# Marker directories of formats whose plugin may be missing: they turn "unknown format" into an
# actionable "install the plugin" error.
KNOWN_MARKERS = {"_delta_log": "delta", ".hoodie": "hudi", "_versions": "lance"}


def detect_format(storage: Storage, registry: FormatRegistry) -> TableFormat:
    """Return the one format that recognises ``storage``'s table.

    Raises ``AmbiguousFormatError`` (listing the candidates) when several do,
    ``PluginNotInstalledError`` when the table looks like a format whose plugin is missing or
    disabled, ``TableNotFoundError`` when the location holds nothing, ``StorageError`` (naming
    the location) when the storage cannot be read (an unreachable endpoint, access denied),
    and ``UnknownFormatError`` otherwise.
    """
    with _reachable(storage):
        return _detect(storage, registry)


def check_format(storage: Storage, fmt: TableFormat) -> None:
    """Check that ``fmt`` recognises ``storage``'s table (``lakecore.open(format=...)``).

    Raises:
        TableNotFoundError: the location is empty, or holds no table of ``fmt``.
        StorageError: the storage cannot be read; names the location.
    """
    with _reachable(storage):
        if fmt.detect(storage):
            return
        if not storage.list_dir(""):
            raise TableNotFoundError(f"no table at {storage.root}")
        raise TableNotFoundError(f"{storage.root} does not hold a {fmt.name} table")


@contextmanager
def _reachable(storage: Storage) -> Iterator[None]:
    """Turn a storage fault while looking at the location into ``StorageError``."""
    try:
        yield
    except LakecoreError:
        raise
    except OSError as exc:
        raise StorageError(
            f"cannot read {storage.root} to open its table: {type(exc).__name__}: {exc}"
        ) from exc


def _detect(storage: Storage, registry: FormatRegistry) -> TableFormat:
    matches = [fmt for fmt in registry.formats() if fmt.detect(storage)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise AmbiguousFormatError(storage.root, [m.name for m in matches])
    for marker, name in KNOWN_MARKERS.items():
        if name not in registry.names() and storage.list_dir(marker):
            state = "disabled" if name in registry.disabled else "not installed"
            raise PluginNotInstalledError(
                name,
                f"{storage.root} looks like a {name} table, but the {name} plugin is "
                f"{state}: {INSTALL_HINTS[name]}",
            )
    if not storage.list_dir(""):
        raise TableNotFoundError(f"no table at {storage.root}: the location is empty or missing")
    raise UnknownFormatError(
        f"no installed format recognises the table at {storage.root} "
        f"(asked: {', '.join(registry.names()) or 'none'})"
    )
