"""Stored entries are read-only under test (frozen.FROZEN_ENTRIES_ENV, set by tests/conftest.py):
an in-place change raises where it happens; a copy changes freely."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from ctxkeeper.core import frozen
from ctxkeeper.core.frozen import EntryChangedInPlaceError, FrozenEntry, freeze_entry
from ctxkeeper.core.store import Store
from ctxkeeper.write.verbs import record_entry, update_entry, user_actor
from tests.conftest import constraint_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def _recorded(store: Store) -> str:
    return str(record_entry(store, "constraint", constraint_fields(), actor=user_actor())["id"])


def test_an_entry_read_from_disk_refuses_in_place_changes(store: Store) -> None:
    entry_id = _recorded(store)
    entry = Store.open(store.root).load().entries[entry_id]
    changes: list[Callable[[], object]] = [
        lambda: entry.__setitem__("rule", "Changed in place"),
        lambda: entry.update(rule="Changed in place"),
        lambda: entry.pop("rule"),
        lambda: entry.setdefault("extra", 1),
        lambda: entry["scope"].append("src/"),  # type: ignore[union-attr]
        lambda: entry["tags"].extend(["x"]),  # type: ignore[union-attr]
    ]
    for change in changes:
        with pytest.raises(EntryChangedInPlaceError):
            change()
    assert entry["rule"] == constraint_fields()["rule"]
    assert entry["scope"] == ["src/billing"]
    # The control: copies are plain and change freely, the stored entry stays as it was.
    plain = dict(entry)
    plain["rule"] = "Changed in a copy"
    deep = copy.deepcopy(entry)
    deep["scope"].append("src/")  # type: ignore[union-attr]
    assert (plain["rule"], deep["scope"][-1]) == ("Changed in a copy", "src/")  # type: ignore[index]
    assert entry["rule"] == constraint_fields()["rule"]
    assert json.loads(json.dumps(entry)) == entry
    assert type(pickle.loads(pickle.dumps(entry))) is dict


def test_an_entry_staged_by_a_write_is_read_only(store: Store) -> None:
    entry_id = _recorded(store)
    update_entry(
        store, entry_id, {"tags": ["billing"]}, "tag it for the billing team", actor=user_actor()
    )
    served = store.load().entries[entry_id]
    assert isinstance(served, FrozenEntry)
    assert served["tags"] == ["billing"]
    with pytest.raises(EntryChangedInPlaceError):
        served["tags"].append("again")


def test_freezing_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert frozen.frozen_entries()  # the suite sets it
    monkeypatch.setenv(frozen.FROZEN_ENTRIES_ENV, "0")
    assert not frozen.frozen_entries()
    monkeypatch.delenv(frozen.FROZEN_ENTRIES_ENV)
    assert not frozen.frozen_entries()
    nested = freeze_entry({"id": "x", "pending_changes": [{"change": "chg-1"}]})
    with pytest.raises(EntryChangedInPlaceError):
        nested["pending_changes"][0]["change"] = "chg-2"  # type: ignore[index,call-overload]
    assert freeze_entry(nested) is nested
