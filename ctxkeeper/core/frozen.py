"""Stored entries, read-only: the store's one invariant ("a stored entry is replaced, never
changed in place", ARCHITECTURE.md) made to fail loudly where it is broken.

The caches keyed by entry identity (the candidate index, the text index, the scope index's
records) cannot see an entry changed in place, so such a change would leave them answering for
the old value. :func:`freeze_entry` gives an entry that reads as a dict and refuses every
change; the store hands entries out frozen when :func:`frozen_entries` is on (the test suite
turns it on).
"""

from __future__ import annotations

import copy
import os
from typing import Final

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue

#: When set (not "" or "0"), the store hands out entries read-only: an in-place change raises
#: :class:`EntryChangedInPlaceError` where it happens, instead of going unseen by the caches
#: keyed by entry identity (ARCHITECTURE.md, "Caches"). The test suite sets it.
FROZEN_ENTRIES_ENV: Final = "CTXKEEPER_FROZEN_ENTRIES"


class EntryChangedInPlaceError(TypeError):
    """A stored entry (or a list or object in it) was changed in place."""

    def __init__(self) -> None:
        super().__init__(
            "a stored entry is replaced, never changed in place: change a copy "
            "(dict(entry), list(entry['tags'])) and stage the copy"
        )


def _refuse(self: object, *args: object, **kwargs: object) -> None:
    raise EntryChangedInPlaceError


class FrozenList(list):  # type: ignore[type-arg]  # holds JSON values
    """A list inside a stored entry: reads as a list, refuses every change; copies are plain."""

    def __copy__(self) -> list[JSONValue]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, object]) -> list[JSONValue]:
        return [copy.deepcopy(item, memo) for item in self]

    def __reduce__(self) -> tuple[type[list[JSONValue]], tuple[list[JSONValue]]]:
        return list, (list(self),)


class FrozenEntry(dict):  # type: ignore[type-arg]  # a JSON object
    """A stored entry (or an object inside one): reads as a dict, refuses every change;
    ``dict(entry)``, ``copy.copy`` and ``copy.deepcopy`` give plain, changeable copies."""

    def __copy__(self) -> JSONObject:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, object]) -> JSONObject:
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}

    def __reduce__(self) -> tuple[type[JSONObject], tuple[JSONObject]]:
        return dict, (dict(self),)


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert"):
    setattr(FrozenList, _name, _refuse)
for _name in ("pop", "remove", "clear", "sort", "reverse"):
    setattr(FrozenList, _name, _refuse)
for _name in ("__setitem__", "__delitem__", "__ior__", "clear", "pop", "popitem", "setdefault"):
    setattr(FrozenEntry, _name, _refuse)
FrozenEntry.update = _refuse  # type: ignore[method-assign,assignment]


def _frozen(value: JSONValue) -> JSONValue:
    if isinstance(value, dict):
        return freeze_entry(value)
    if isinstance(value, list) and not isinstance(value, FrozenList):
        return FrozenList(_frozen(item) for item in value)
    return value


def freeze_entry(entry: Mapping[str, JSONValue]) -> JSONObject:
    """``entry`` read-only, its lists and objects too (an entry already frozen is returned)."""
    if isinstance(entry, FrozenEntry):
        return entry
    return FrozenEntry({key: _frozen(value) for key, value in entry.items()})


def frozen_entries() -> bool:
    """Whether stored entries are handed out read-only (:data:`FROZEN_ENTRIES_ENV`)."""
    return os.environ.get(FROZEN_ENTRIES_ENV, "") not in ("", "0")
