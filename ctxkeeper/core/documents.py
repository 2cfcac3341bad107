"""Versioned JSON documents on disk: parse, name the failing line and column, refuse the future."""

from __future__ import annotations

import json

from ctxkeeper.core.errors import CorruptFileError, StoreError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject


def parse_document(data: bytes, path: str, *, version: int) -> JSONObject:
    """Parse a JSON object carrying a ``version`` no newer than ``version``.

    :raise CorruptFileError: the bytes are not JSON (with line and column) or not an object.
    :raise StoreError: the version is missing or newer than this ctxkeeper reads; unknown
        future versions are refused, not guessed at (DESIGN.md, "The store").
    """
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = exc.lineno if isinstance(exc, json.JSONDecodeError) else 1
        column = exc.colno if isinstance(exc, json.JSONDecodeError) else 1
        raise CorruptFileError(path, line, column, f"does not parse: {exc}") from None
    if not isinstance(doc, dict):
        raise CorruptFileError(path, 1, 1, "is not a JSON object")
    found = doc.get("version")
    if not isinstance(found, int) or isinstance(found, bool):
        raise StoreError(f"{path}: missing or non-integer 'version'")
    if found > version:
        raise StoreError(
            f"{path}: version {found} was written by a newer ctxkeeper (this one reads "
            f"{version}); upgrade ctxkeeper rather than let it guess"
        )
    return doc
