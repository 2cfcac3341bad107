"""The checks every write passes: floors, secrets, tombstones, and similar or superseded entries."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ctxkeeper.core.errors import PreviouslyRejectedError
from ctxkeeper.core.model import clean_fields
from ctxkeeper.core.secretscan import check_fields
from ctxkeeper.core.text import fingerprint
from ctxkeeper.write.candidates import shortlist
from ctxkeeper.write.similarity import (
    matching_tombstone,
    possible_supersession,
    similar_entries,
    statement,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.model import Floors


@dataclass(frozen=True)
class CaptureReport:
    """What a write should tell its caller without refusing: advisory findings."""

    similar_entries: list[JSONObject]
    """Close entries of any status, each labelled likely_restatement or likely_contradiction."""
    possible_supersession: list[str]
    """Live entries this one may replace (same kind, overlapping scope and tags); not acted on."""
    notes: list[str]
    """What was normalised in a way the writer should know (a "." scope made project-wide)."""


def value_digest(entry: Mapping[str, object]) -> str:
    """What a purge keeps of an entry: a digest of its defining text in comparable form, so the
    same value recorded again (reworded only in case, spacing or look-alike letters) is still
    refused once the text itself is gone."""
    return hashlib.sha256(fingerprint(statement(entry)).encode()).hexdigest()


def check_candidate(
    kind: str,
    fields: Mapping[str, object],
    stored: Iterable[Mapping[str, JSONValue]],
    *,
    floors: Floors,
    exclude: Collection[str] = (),
    root: str | None = None,
    purged: Mapping[str, Mapping[str, JSONValue]] | None = None,
) -> tuple[JSONObject, CaptureReport]:
    """Validate a record or update candidate and return its cleaned fields and findings.

    Order matters: the shape and floors first (cheap, and they say what to add), then the
    secret scan (before any text can be echoed back), then the tombstones, which refuse.

    :param exclude: ids not to compare against (the entry being updated, entries being
        superseded by this very write).
    :param root: the store's project root, so an absolute scope inside it is stored relative.
    :param purged: purged ids with the digest of their value (``State.purged``).
    :raise ValidationError: a field is missing, mistyped or below its floor.
    :raise SecretDetectedError: a field holds a secret-shaped string.
    :raise PreviouslyRejectedError: the content matches a deprecated or rejected entry.
    """
    notes: list[str] = []
    clean = clean_fields(kind, fields, floors, root=root, notes=notes)
    check_fields(clean)
    candidate: JSONObject = {"kind": kind, **clean}
    # Only the entries that can score high enough for any check below: the same findings as
    # comparing with every stored entry, without scoring thousands of unrelated ones.
    others = [entry for entry in shortlist(candidate, stored) if entry.get("id") not in exclude]
    if purged:
        digest = value_digest(candidate)
        for purged_id, record in purged.items():
            if record.get("value_sha256") == digest and purged_id not in exclude:
                raise PreviouslyRejectedError(
                    purged_id,
                    "purged",
                    "its text was purged by a person; the value stays refused",
                    1.0,
                )
    tombstone = matching_tombstone(candidate, others)
    if tombstone is not None:
        entry, score = tombstone
        raise PreviouslyRejectedError(
            str(entry["id"]),
            str(entry.get("status")),
            str(entry.get("status_reason") or "no reason was recorded"),
            score,
        )
    # The contract's two labels only: a close pair that is neither is not worth the agent's time.
    similar: list[JSONObject] = [
        {
            "id": item["id"],
            "kind": item["kind"],
            "status": item["status"],
            "similarity": item["similarity"],
            "label": item["label"],
        }
        for item in similar_entries(candidate, others)
        if item["label"] is not None
    ]
    superseding = possible_supersession(candidate, others)
    return clean, CaptureReport(
        similar_entries=similar, possible_supersession=superseding, notes=notes
    )
