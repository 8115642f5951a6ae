"""The Delta Lake format plugin of lakecore (reader; writer and maintenance follow)."""

from lakecore_delta.format import DeltaFormat

__all__ = ["DeltaFormat"]
