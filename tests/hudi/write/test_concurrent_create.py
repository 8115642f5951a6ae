"""Two creators of one Hudi table with a metadata table: the metadata table is built under the
table lock, so a creator never deletes (as a dead create's leftover) the metadata table another
creator is building or has just finished; the later one gets ``TableExistsError``."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.write.lock import LOCK_PATH, acquire

import lakecore
from lakecore.errors import TableExistsError
from lakecore.storage import open_storage
from tests.hudi.write.helpers import SCHEMA

PROPERTIES = {"record_key": "id", "table_version": "8", "metadata_enable": "true"}
MDT_PROPERTIES = ".hoodie/metadata/.hoodie/hoodie.properties"


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".aux" not in p.parts
    }


def test_a_create_waits_for_a_create_in_progress_and_leaves_its_metadata_table(
    tmp_path: Path,
) -> None:
    finished = tmp_path / "finished"  # what the creator in progress will have written
    lakecore.create(str(finished), SCHEMA, "hudi", ["city"], PROPERTIES)
    root = tmp_path / "t"
    storage = open_storage(str(root))
    config = TableConfig.from_properties(
        {
            "hoodie.table.name": "t",
            "hoodie.table.type": "COPY_ON_WRITE",
            "hoodie.table.version": "8",
        }
    )
    lock = acquire(storage, config)  # the creator in progress holds the lock ...
    storage.put(MDT_PROPERTIES, (finished / MDT_PROPERTIES).read_bytes())  # ... mid-build
    errors: list[BaseException] = []

    def other() -> None:
        try:
            lakecore.create(str(root), SCHEMA, "hudi", ["city"], PROPERTIES)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join(1.0)
    assert thread.is_alive(), f"the second creator did not wait for the lock: {errors}"
    assert storage.read(MDT_PROPERTIES) == (finished / MDT_PROPERTIES).read_bytes()
    # The creator in progress finishes: its metadata table, then hoodie.properties.
    shutil.copytree(finished / ".hoodie", root / ".hoodie", dirs_exist_ok=True)
    want = _files(root)
    lock.release()
    thread.join(30)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], TableExistsError), errors
    assert _files(root) == want
    assert not storage.exists(LOCK_PATH)
    assert lakecore.open(str(root)).to_arrow().num_rows == 0


@pytest.mark.parametrize("metadata", ["true", "false"])
def test_a_create_over_a_finished_table_is_refused_without_a_change(
    metadata: str, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    properties = {**PROPERTIES, "metadata_enable": metadata}
    lakecore.create(str(root), SCHEMA, "hudi", ["city"], properties)
    before = _files(root)
    with pytest.raises(TableExistsError):
        lakecore.create(str(root), SCHEMA, "hudi", ["city"], properties)
    assert _files(root) == before
