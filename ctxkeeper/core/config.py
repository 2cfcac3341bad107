"""Shared settings in ``.context/config.json``: review policy, floors, delivery, export."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from ctxkeeper.core.documents import parse_document
from ctxkeeper.core.errors import StoreError
from ctxkeeper.core.model import KINDS, Floors, contract_floors

CONFIG_VERSION: Final = 1
REVIEW_POLICIES: Final = ("agent", "off")
HARD_DELIVERY: Final = ("gate", "context")
_KNOWN_KEYS: Final = frozenset(
    {"version", "review", "floors", "auto_export", "hard_delivery", "summary_budget"}
)


@dataclass(frozen=True)
class Config:
    """Settings with their defaults; build one with :func:`parse_config`."""

    review: str = "agent"
    """``agent``: entries written through MCP start ``proposed``; ``off``: they start active."""
    floors: Floors = field(default_factory=contract_floors)
    """Per-kind minimum lengths, never below the contract's."""
    auto_export: bool = True
    """Refresh ``.context/snapshot.jsonl`` after every write."""
    hard_delivery: str = "gate"
    """``gate``: a hard constraint denies the first edit of a covered file; ``context``: it rides along."""
    summary_budget: int = 2000
    """Token budget of the session-start summary."""


def default_document() -> dict[str, object]:
    """What ``ctxkeeper init`` writes: every setting spelled out, so people can find them."""
    defaults = Config()
    return {
        "version": CONFIG_VERSION,
        "review": defaults.review,
        "floors": {},
        "auto_export": defaults.auto_export,
        "hard_delivery": defaults.hard_delivery,
        "summary_budget": defaults.summary_budget,
    }


def parse_config(data: bytes | None, path: str) -> Config:
    """Validate a config document; absent means defaults. Errors name the file and the key."""
    if data is None:
        return Config()
    doc = parse_document(data, path, version=CONFIG_VERSION)
    unknown = sorted(set(doc) - _KNOWN_KEYS)
    if unknown:
        raise StoreError(
            f"{path}: unknown setting {', '.join(map(repr, unknown))}; "
            f"known settings are {', '.join(sorted(_KNOWN_KEYS))}"
        )
    review = doc.get("review", "agent")
    if review not in REVIEW_POLICIES:
        raise StoreError(f"{path}: review must be one of {', '.join(REVIEW_POLICIES)}")
    hard = doc.get("hard_delivery", "gate")
    if hard not in HARD_DELIVERY:
        raise StoreError(f"{path}: hard_delivery must be one of {', '.join(HARD_DELIVERY)}")
    auto_export = doc.get("auto_export", True)
    if not isinstance(auto_export, bool):
        raise StoreError(f"{path}: auto_export must be true or false")
    budget = doc.get("summary_budget", 2000)
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 200:
        raise StoreError(f"{path}: summary_budget must be an integer of at least 200 tokens")
    return Config(
        review=review,
        floors=_parse_floors(doc.get("floors", {}), path),
        auto_export=auto_export,
        hard_delivery=hard,
        summary_budget=budget,
    )


def _parse_floors(raw: object, path: str) -> Floors:
    floors = contract_floors()
    if not isinstance(raw, dict):
        raise StoreError(f'{path}: floors must be an object like {{"decision": {{"summary": 30}}}}')
    for kind, fields in raw.items():
        if kind not in KINDS or not isinstance(fields, dict):
            raise StoreError(f"{path}: floors.{kind} is not a kind ({', '.join(KINDS)})")
        for name, value in fields.items():
            if name not in floors[kind]:
                known = ", ".join(floors[kind])
                raise StoreError(f"{path}: floors.{kind}.{name} is not a floor; known: {known}")
            if not isinstance(value, int) or isinstance(value, bool):
                raise StoreError(f"{path}: floors.{kind}.{name} must be an integer")
            if value < floors[kind][name]:
                raise StoreError(
                    f"{path}: floors.{kind}.{name} is {value}, below the contract's "
                    f"{floors[kind][name]}; floors can only be raised"
                )
            floors[kind][name] = value
    return floors
