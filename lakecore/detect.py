"""Format autodetection: ask every registered format, collect all matches."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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
from lakecore.plugins import DISABLE_ENV, INSTALL_HINTS, FormatRegistry
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
    with reachable(storage):
        return _detect(storage, registry)


def check_format(storage: Storage, fmt: TableFormat) -> None:
    """Check that ``fmt`` recognises ``storage``'s table (``lakecore.open(format=...)``).

    Raises:
        TableNotFoundError: the location is empty, or holds no table of ``fmt``.
        StorageError: the storage cannot be read; names the location.
    """
    with reachable(storage):
        if fmt.detect(storage):
            return
        if not storage.list_dir(""):
            raise no_table_at(storage)
        raise TableNotFoundError(f"{storage.root} does not hold a {fmt.name} table")


@contextmanager
def reachable(storage: Storage) -> Iterator[None]:
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
            if registry.is_disabled(name):
                fix = f"remove {name!r} from {DISABLE_ENV} to open it"
                state = "disabled"
            else:
                fix, state = INSTALL_HINTS[name], "not installed"
            raise PluginNotInstalledError(
                name,
                f"{storage.root} looks like a {name} table, but the {name} plugin is "
                f"{state}: {fix}",
            )
    if not storage.list_dir(""):
        raise no_table_at(storage)
    raise UnknownFormatError(
        f"no installed format recognises the table at {storage.root} "
        f"(asked: {', '.join(registry.names()) or 'none'})"
    )


SHOWN_TABLES = 3
"""How many of the tables found below a location the error names."""


def no_table_at(storage: Storage) -> TableNotFoundError:
    """The error for a location without files directly in it, saying what is there instead.

    A file (the user passed a data file or a commit file: the table is its folder), folders
    only (a warehouse or database folder: names the tables found below it, which the user
    likely meant), or nothing at all (empty or missing). Lists recursively: call it only on
    the way to raising.
    """
    root = storage.root
    # The root as an absolute path/URI: paths relative to the root would look below it.
    if storage.exists(root):
        return TableNotFoundError(
            f"{root} is a file, not a table: pass the table's folder, the one that holds "
            f"{', '.join(KNOWN_MARKERS)} or the data files"
        )
    below = storage.list_all("")
    if not below:
        return TableNotFoundError(f"no table at {root}: the location is empty or missing")
    tables = _tables_below(f.path for f in below)
    where = (
        f"; tables below it: {', '.join(tables[:SHOWN_TABLES])}"
        + (f" and {len(tables) - SHOWN_TABLES} more" if len(tables) > SHOWN_TABLES else "")
        if tables
        else ""
    )
    return TableNotFoundError(
        f"no table at {root}: it holds only folders ({len(below)} files below it){where}; "
        "pass the table's own folder"
    )


def _tables_below(paths: Iterable[str]) -> list[str]:
    """The table roots among ``paths`` (relative file paths): the folders that hold a format's
    marker folder, sorted."""
    roots = set()
    for path in paths:
        parts = path.split("/")
        for i, part in enumerate(parts[:-1]):
            if part in KNOWN_MARKERS and i > 0:
                roots.add("/".join(parts[:i]))
                break
    return sorted(roots)
