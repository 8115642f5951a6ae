"""Where the shared corpus is: ``$LAKECORE_CORPUS``, else ``../shared/corpus`` beside the repo."""

from __future__ import annotations

import os
from pathlib import Path

CORPUS = Path(
    os.environ.get("LAKECORE_CORPUS", Path(__file__).resolve().parents[2] / "shared" / "corpus")
)
