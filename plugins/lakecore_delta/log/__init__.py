"""The Delta transaction log: file naming, segments, commit and checkpoint reading, replay."""
