"""Format-neutral data: schemas, the file index layout, actions, history entries. No IO here."""
