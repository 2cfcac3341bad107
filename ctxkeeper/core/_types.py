"""Type aliases shared across the package (JSON shapes)."""

from __future__ import annotations

from typing import TypeAlias

# A JSON value as produced by json.loads; recursive through list and dict.
JSONValue: TypeAlias = str | int | float | bool | list["JSONValue"] | dict[str, "JSONValue"] | None
JSONObject: TypeAlias = dict[str, JSONValue]
