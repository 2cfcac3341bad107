"""The model (the kind table) and the store, and what they rest on: the journal, the entries
file, the team snapshot format and fold, the hooks' scope index, config, scopes, secrets, times,
files and shared errors. Knows no door."""
