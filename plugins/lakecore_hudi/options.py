"""Reading options of Hudi tables (``lakecore.open(uri, options={...})``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")
# Hudi's own spelling of an option -> the field it sets.
_ALIASES = {"hoodie.metadata.enable": "metadata_enable"}


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """``read_optimized``: read base files only (MoR log files are skipped, as Hudi's
    read-optimized queries do). ``drop_meta_fields``: leave the ``_hoodie_*`` columns out.
    ``metadata_enable`` (also spelled ``hoodie.metadata.enable``, as Hudi's readers take it):
    list the table's files through its metadata table's ``files`` partition when the table
    declares one; false lists storage instead."""

    read_optimized: bool = False
    drop_meta_fields: bool = False
    metadata_enable: bool = True

    @classmethod
    def parse(cls, options: Mapping[str, str] | None) -> ReadOptions:
        """Build from text options; raises ``ValueError`` on unknown names or non-booleans."""
        values: dict[str, bool] = {}
        for key, raw in (options or {}).items():
            name = _ALIASES.get(key, key.removeprefix("hudi."))
            if name not in cls.__dataclass_fields__:
                known = sorted(cls.__dataclass_fields__)
                raise ValueError(f"unknown Hudi reading option {key!r}; known: {known}")
            text = str(raw).strip().lower()
            if text not in _TRUE + _FALSE:
                raise ValueError(f"Hudi option {key!r} must be true or false, not {raw!r}")
            values[name] = text in _TRUE
        return cls(**values)

    def as_dict(self) -> dict[str, str]:
        """The options as text (for ``ScanContext.options``)."""
        return {
            "read_optimized": str(self.read_optimized).lower(),
            "drop_meta_fields": str(self.drop_meta_fields).lower(),
            "metadata_enable": str(self.metadata_enable).lower(),
        }
