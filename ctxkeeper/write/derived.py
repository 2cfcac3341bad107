"""The files derived from the store that follow every commit: the hooks' scope index and the
team snapshot, registered with the store as after-commit listeners (the store imports neither).

Every module that commits a write imports this one (the verbs, the exchange, the CLI's review
and doctor, the SessionStart hook), so each process that writes registers both. A process that
missed them leaves the files behind, never wrong: the hooks rebuild a stale index themselves,
and the next commit in a process that has them refreshes the snapshot.
"""

from __future__ import annotations

from ctxkeeper.core import scopeindex, store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core.store import Commit

#: The name a transaction's own listener puts in :attr:`Commit.done` once it wrote the
#: snapshot (an import or an export), so the refresh below leaves it alone.
SNAPSHOT: str = "snapshot"


def refresh_scope_index(commit: Commit) -> None:
    """The hooks' per-edit index follows every write (they never parse the whole store)."""
    if commit.wrote:
        scopeindex.refresh(commit.store.dir, commit.state.entries.values())


def refresh_snapshot(commit: Commit) -> None:
    """Refresh the team snapshot after a write under ``auto_export``: patched with the records
    it lacks when they are known, else rebuilt."""
    if not (commit.wrote and commit.config.auto_export) or SNAPSHOT in commit.done:
        return
    # Loaded only when a refresh is due: the hooks that write rarely need the snapshot code.
    from ctxkeeper.team import snapshot

    snapshot.auto_refresh(
        commit.store.dir, commit.state.entries, commit.records, commit.store.read_journal
    )


store.on_commit(refresh_scope_index)
store.on_commit(refresh_snapshot)
