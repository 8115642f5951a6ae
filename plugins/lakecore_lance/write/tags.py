"""Lance tags (``_refs/tags/{name}.json``): creating and deleting them as pylance does.

``Table.create_tag``/``delete_tag``/``tags`` reach these through ``LanceFormat`` (capability
``tags``). Reading a tag (``snapshot(version="name")``), listing tags and keeping tagged
versions in ``vacuum`` are the reader's and ``vacuum``'s.
"""

from __future__ import annotations

import datetime
import json

from lakecore.errors import InvalidArgumentError
from lakecore.storage import Storage
from lakecore_lance.history import MAX_TAG_NAME, TAGS_DIR, is_tag_name, tag_version
from lakecore_lance.manifest import find_manifest


def _checked_name(name: str) -> str:
    # The reader's rule (``is_tag_name``), checked before anything is written: a name it
    # refuses would leave a tag file that breaks listing the tags.
    if not is_tag_name(name) or name.isdigit():
        raise InvalidArgumentError(
            f"{name!r} is not a Lance tag name (ASCII letters, digits, '_', '.', '-'; at "
            f"most {MAX_TAG_NAME} characters; not a number)"
        )
    return name


def create_tag(storage: Storage, name: str, version: int) -> None:
    """Tag ``version`` of the Lance dataset at ``storage`` as ``name`` (``put_if_absent``, so
    two writers creating one tag cannot both succeed).

    Raises ``InvalidArgumentError`` for a bad name or a tag that exists, and
    ``VersionNotFoundError`` for a version the dataset lacks.
    """
    manifest = find_manifest(storage, int(version))
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    doc: dict[str, object] = {
        "branch": None,
        "version": int(version),
        "createdAt": now,
        "updatedAt": now,
        "manifestSize": storage.head(manifest.path).size,
        "metadata": {},
    }
    path = f"{TAGS_DIR}/{_checked_name(name)}.json"
    try:
        storage.put_if_absent(path, json.dumps(doc, indent=2).encode())
    except FileExistsError as exc:
        raise InvalidArgumentError(f"tag {name!r} exists") from exc


def delete_tag(storage: Storage, name: str) -> None:
    """Delete tag ``name``; ``VersionNotFoundError`` when there is none."""
    tag_version(storage, _checked_name(name))  # raises for a missing tag
    storage.delete(f"{TAGS_DIR}/{name}.json")
