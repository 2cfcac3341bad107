"""JSON for the per-edit hook path through json's own C accelerator, without ``import json``.

``import json`` pulls in ``re``, ``enum`` and ``functools``: about 11 ms of a hook started with
``python3 -I -S`` (dec-017-4135), more than the hook's own work (``bench/hook_latency.py``).
``_json`` is the C half of the standard library's json package and parses and encodes the
same way; where an interpreter lacks it, this module falls back to ``json`` itself.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ctxkeeper.core._types import JSONValue

__all__ = ["dumps", "loads"]

#: JSON's insignificant whitespace (RFC 8259 section 2); str.strip() would also drop others.
_WHITESPACE = " \t\n\r"


def _refuse_constant(name: str) -> object:
    # NaN and Infinity are not JSON; the stdlib accepts them by default, hooks do not need them.
    raise ValueError(f"{name} is not valid JSON")


def _refuse_object(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class _ScanContext:
    """The attributes ``_json.make_scanner`` reads, as ``json.JSONDecoder`` would set them."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_refuse_constant)
    memo: dict[str, str] = {}  # noqa: RUF012 - the C scanner manages its own memo


_scan: Callable[[str, int], tuple[JSONValue, int]] | None
_encoders: dict[bool, Callable[[object, int], tuple[str, ...]]] = {}
try:
    import _json

    # typeshed types the context as a JSONDecoder; the scanner reads only these attributes.
    _scan = _json.make_scanner(_ScanContext())  # type: ignore[arg-type]
    for _ascii in (True, False):
        _encoders[_ascii] = _json.make_encoder(
            None,  # no circular-reference check: our values are trees built from JSON
            _refuse_object,
            _json.encode_basestring_ascii if _ascii else _json.encode_basestring,
            None,  # no indent
            ":",
            ",",
            False,  # sort_keys
            False,  # skipkeys
            False,  # allow_nan
        )
except (ImportError, AttributeError, TypeError):  # pragma: no cover - CPython ships _json
    _scan = None
    _encoders.clear()


def loads(data: str | bytes) -> Any:  # as json.loads: callers check the shape
    """Parse one JSON document; raise ``ValueError`` (or ``RecursionError``) when it is not."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    if _scan is None:  # pragma: no cover - see the import above
        import json

        return json.loads(text, parse_constant=_refuse_constant)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as stop:
        raise ValueError(f"expected a JSON value at character {stop.value}") from None
    except SystemError:
        # The C scanner builds its error from json.decoder only when json is already imported;
        # on this rare path, let json itself say what is wrong.
        import json

        json.loads(text, parse_constant=_refuse_constant)
        raise ValueError("not a JSON document") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value


def dumps(value: object, *, ensure_ascii: bool = True) -> str:
    """Compact JSON (``,`` and ``:`` separators); ``ensure_ascii`` escapes every non-ASCII
    character, so the text is safe on any console encoding."""
    encoder = _encoders.get(ensure_ascii)
    if encoder is None:  # pragma: no cover - see the import above
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"), allow_nan=False)
    return "".join(encoder(value, 0))
