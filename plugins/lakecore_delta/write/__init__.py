"""Writing Delta tables: data files, actions to JSON, commits, conflict checks, checkpoints."""
