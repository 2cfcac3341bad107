"""The person's door: the command line (``app``), review, demo, doctor and agent detection."""
