"""The model and the store: entries, journal, scopes, secrets, times, files and shared errors."""
