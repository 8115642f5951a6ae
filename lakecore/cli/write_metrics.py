"""How the commands that write show what they wrote (``WriteResult``): two readable lines,
or the metrics as one JSON object (``--json``)."""

from __future__ import annotations

from typing import Any

from lakecore.cli.render import readable_size
from lakecore.model.metrics import WriteResult


def metrics_text(result: WriteResult) -> str:
    """``files: +1 -2 (+751 B, -1.4 KiB)`` and ``rows: 3 inserted, ... (0.01 s)``."""
    files = (
        f"  files: +{result.files_added} -{result.files_removed} "
        f"(+{readable_size(result.bytes_added)}, -{readable_size(result.bytes_removed)})"
    )
    rows = ", ".join(
        f"{n} {what}"
        for n, what in (
            (result.rows_inserted, "inserted"),
            (result.rows_updated, "updated"),
            (result.rows_deleted, "deleted"),
            (result.rows_copied, "copied"),
        )
    )
    return f"{files}\n  rows: {rows} ({result.seconds:.2f} s)"


def metrics_doc(result: WriteResult) -> dict[str, Any]:
    """The counts and seconds of ``result`` (its version and operation are the document's)."""
    return {**result.metrics.to_dict(), "seconds": round(result.seconds, 6)}
