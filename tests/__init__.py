"""lakecore tests (a package, so that tests/hudi does not shadow the hudi-rs package)."""
