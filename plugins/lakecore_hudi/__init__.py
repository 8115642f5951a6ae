"""Apache Hudi for lakecore: timeline, file slices, MoR log merging, and a pure-Python writer."""
