"""When the server checkpoints the store: the checkpoint rule's door.

The server lets its writes leave ``entries.json`` and the derived files behind the journal by
the store's checkpoint rule (:data:`ctxkeeper.core.store.CHECKPOINT_RECORDS`): a write that
passes it checkpoints inline. When the client then goes quiet for
:data:`~ctxkeeper.core.store.CHECKPOINT_SECONDS` the server checkpoints too, and always before it
exits (con-025-8858). Readers fold the journal's tail meanwhile, so nothing waits on it.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

_STORE: Final = "ctxkeeper.core.store"


def enable() -> None:
    """Let this process's writes lag by the checkpoint rule: only for a process that calls
    :func:`finish` on its way out, never a one-shot CLI or hook."""
    from ctxkeeper.core import store

    store.allow_checkpoint_lag(True)


def settle(waiting: Callable[[float], bool]) -> None:
    """After a reply: checkpoint a store left behind its journal unless more input arrives
    within the checkpoint interval. ``waiting(timeout)`` tells whether input came."""
    # Nothing can lag before a tool loaded the store; start-up never imports it here.
    if _STORE not in sys.modules:
        return
    from ctxkeeper.core import store

    if store.lagging() and not waiting(store.CHECKPOINT_SECONDS):
        store.checkpoint_all()


def finish() -> None:
    """Before exit: checkpoint every store left behind, and stop lagging."""
    if _STORE in sys.modules:
        from ctxkeeper.core import store

        store.allow_checkpoint_lag(False)
        store.checkpoint_all()
