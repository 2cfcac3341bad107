"""When the server applies the writes it deferred (dec-025-2cdb).

A tool call's write is journaled durably before the reply; the entry file, the hooks' index and
the team snapshot are rewritten once the client has been quiet for :data:`IDLE_SECONDS`, or
sooner when the deferred records grow many or old, and always before the server exits. A
burst of writes then rewrites the store once, not once per write.
"""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

#: Quiet time after a reply before the deferred files are written.
IDLE_SECONDS: Final = 0.1
#: Deferred records that force a flush even while requests keep coming.
MOST_RECORDS: Final = 64
#: Age of the oldest deferred write that forces a flush: how stale the snapshot can get.
OLDEST_SECONDS: Final = 2.0
_STORE: Final = "ctxkeeper.core.store"


def enable() -> None:
    """Defer the derived files of this process's writes: only for a process that calls
    :func:`finish` on its way out (con-025-8858), never a one-shot CLI or hook."""
    from ctxkeeper.core import store

    store.write_behind(True)


def settle(waiting: Callable[[float], bool]) -> None:
    """After a reply: flush the deferred writes unless more input arrives within the idle
    time and they are still few and young. ``waiting(timeout)`` tells whether input came."""
    # Nothing can be deferred before a tool loaded the store; start-up never imports it here.
    if _STORE not in sys.modules:
        return
    from ctxkeeper.core import store

    count, since = store.deferred_writes()
    if not count or since is None:
        return
    young = count < MOST_RECORDS and time.monotonic() - since < OLDEST_SECONDS
    if young and waiting(IDLE_SECONDS):
        return
    store.flush_deferred()


def finish() -> None:
    """Before exit: apply every deferred write, and stop deferring."""
    if _STORE in sys.modules:
        from ctxkeeper.core import store

        store.write_behind(False)
        store.flush_deferred()
