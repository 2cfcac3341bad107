"""Claude Code hook support (run by ``hooks/``): the edit gate, the Bash guard, ledgers, notes."""
