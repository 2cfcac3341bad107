"""Team memory: the snapshot format, sync, the event fold, the merge driver, git set-up."""
