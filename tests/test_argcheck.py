"""Tests for ctxkeeper.mcp.argcheck, the tool-argument validator."""

from __future__ import annotations

import json
import re
import sys

import pytest

from ctxkeeper.core._types import JSONObject, JSONValue
from ctxkeeper.mcp import argcheck
from tests.fixture_tools import load_fixture_tools

KIND: JSONObject = {"enum": ["decision", "constraint", "pipeline"]}
ENTRY: JSONObject = {
    "type": "object",
    "properties": {
        "kind": KIND,
        "summary": {"type": "string", "minLength": 5, "maxLength": 10},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        "score": {"type": "number", "minimum": 0, "maximum": 1.5},
        "scope": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[a-z/]+$"},
            "minItems": 1,
            "maxItems": 3,
            "uniqueItems": True,
        },
        "until": {"type": ["string", "null"]},
        "flag": {"type": "boolean"},
        "version": {"const": 1},
        "meta": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["kind"],
    "additionalProperties": False,
}


def errors(value: JSONValue, schema: JSONObject = ENTRY) -> list[str]:
    return argcheck.validate(value, schema)


class TestValid:
    @pytest.mark.parametrize(
        "value",
        [
            pytest.param({"kind": "decision"}, id="minimal"),
            pytest.param(
                {
                    "kind": "pipeline",
                    "summary": "hello",
                    "limit": 50,
                    "score": 1.5,
                    "scope": ["a/", "b/c"],
                    "until": None,
                    "flag": False,
                    "version": 1.0,
                    "meta": {"x": "y"},
                },
                id="every-field",
            ),
            pytest.param({"kind": "constraint", "score": 0}, id="integer-is-a-number"),
            pytest.param({"kind": "constraint", "until": "2026-01-01"}, id="type-list"),
        ],
    )
    def test_accepts(self, value: JSONValue) -> None:
        assert errors(value) == []

    def test_empty_schema_accepts_anything(self) -> None:
        assert argcheck.validate([1, {"a": None}], {}) == []

    def test_additional_properties_allowed_by_default(self) -> None:
        assert argcheck.validate({"x": 1}, {"type": "object"}) == []

    def test_no_properties_allowed(self) -> None:
        schema: JSONObject = {"type": "object", "additionalProperties": False}
        assert argcheck.validate({"x": 1}, schema) == [
            "arguments.x: unknown property; allowed properties: none"
        ]

    def test_annotations_are_ignored(self) -> None:
        schema: JSONObject = {"type": "string", "description": "d", "default": "x", "title": "t"}
        assert argcheck.validate("s", schema) == []


class TestErrors:
    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            pytest.param(
                {"kind": "idea"},
                "arguments.kind: must be one of decision, constraint, pipeline",
                id="enum",
            ),
            pytest.param({}, "arguments.kind: required property is missing", id="required"),
            pytest.param(
                {"kind": "decision", "bogus": 1},
                "arguments.bogus: unknown property; allowed properties: flag, kind, limit, meta, "
                "scope, score, summary, until, version",
                id="additional",
            ),
            pytest.param(
                {"kind": "decision", "summary": "abc"},
                "arguments.summary: must be at least 5 characters long (got 3)",
                id="min-length",
            ),
            pytest.param(
                {"kind": "decision", "summary": "a" * 11},
                "arguments.summary: must be at most 10 characters long (got 11)",
                id="max-length",
            ),
            pytest.param(
                {"kind": "decision", "limit": 0},
                "arguments.limit: must be at least 1 (got 0)",
                id="minimum",
            ),
            pytest.param(
                {"kind": "decision", "score": 2.5},
                "arguments.score: must be at most 1.5 (got 2.5)",
                id="maximum",
            ),
            pytest.param(
                {"kind": "decision", "limit": 2.0},
                "arguments.limit: must be an integer, not a number",
                id="integer-valued-float",
            ),
            pytest.param(
                {"kind": "decision", "limit": True},
                "arguments.limit: must be an integer, not a boolean",
                id="bool-not-integer",
            ),
            pytest.param(
                {"kind": "decision", "score": False},
                "arguments.score: must be a number, not a boolean",
                id="bool-not-number",
            ),
            pytest.param(
                {"kind": "decision", "flag": 1},
                "arguments.flag: must be a boolean, not an integer",
                id="integer-not-bool",
            ),
            pytest.param(
                {"kind": "decision", "until": 5},
                "arguments.until: must be a string or a null, not an integer",
                id="type-list",
            ),
            pytest.param(
                {"kind": "decision", "scope": []},
                "arguments.scope: must have at least 1 item (got 0)",
                id="min-items",
            ),
            pytest.param(
                {"kind": "decision", "scope": ["a", "b", "c", "d"]},
                "arguments.scope: must have at most 3 items (got 4)",
                id="max-items",
            ),
            pytest.param(
                {"kind": "decision", "scope": ["a", "a"]},
                "arguments.scope: items must be unique (arguments.scope[1] repeats "
                "arguments.scope[0])",
                id="unique",
            ),
            pytest.param(
                {"kind": "decision", "scope": ["A"]},
                "arguments.scope[0]: must match the pattern ^[a-z/]+$",
                id="pattern",
            ),
            pytest.param(
                {"kind": "decision", "version": True},
                "arguments.version: must be exactly 1",
                id="const-bool-is-not-1",
            ),
            pytest.param(
                {"kind": "decision", "meta": {"a b": 1}},
                'arguments.meta["a b"]: must be a string, not an integer',
                id="additional-schema",
            ),
            pytest.param([], "arguments: must be an object, not an array", id="root-type"),
            pytest.param(
                {"kind": "decision", "scope": "a/"},
                "arguments.scope: must be an array, not a string",
                id="array-type",
            ),
            pytest.param(
                {"kind": "decision", "meta": None},
                "arguments.meta: must be an object, not a null",
                id="object-type",
            ),
        ],
    )
    def test_reports(self, value: JSONValue, expected: str) -> None:
        assert errors(value) == [expected]

    def test_reports_every_problem(self) -> None:
        found = errors({"summary": 1, "limit": "x", "extra": 0})
        assert len(found) == 4

    def test_enum_renders_non_strings_as_json(self) -> None:
        schema: JSONObject = {"enum": [1, None, "a"]}
        assert argcheck.validate(True, schema) == ["arguments: must be one of 1, null, a"]

    def test_custom_root(self) -> None:
        assert argcheck.validate(1, {"type": "string"}, path="x") == [
            "x: must be a string, not an integer"
        ]


class TestJsonEquality:
    @pytest.mark.parametrize(
        ("items", "unique"),
        [
            pytest.param([1, 1.0], False, id="int-float"),
            pytest.param([1, True], True, id="int-bool"),
            pytest.param([0, False, None, "", [], {}], True, id="falsy"),
            pytest.param([[1, 2], [1, 2.0]], False, id="nested-arrays"),
            pytest.param([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False, id="key-order"),
            pytest.param([{"a": [True]}, {"a": [1]}], True, id="nested-bool"),
        ],
    )
    def test_unique_items(self, items: JSONValue, unique: bool) -> None:
        found = argcheck.validate(items, {"uniqueItems": True})
        assert (found == []) is unique

    def test_unique_items_is_linear(self) -> None:
        assert argcheck.validate(list(range(200_000)), {"uniqueItems": True}) == []

    def test_unique_items_false_is_not_checked(self) -> None:
        assert argcheck.validate([1, 1], {"uniqueItems": False}) == []


class TestHostileValues:
    def test_deep_nesting_is_an_error_not_a_crash(self) -> None:
        depth = sys.getrecursionlimit() - 50
        value = json.loads("[" * depth + "]" * depth)
        found = argcheck.validate([value, value], {"uniqueItems": True})
        assert found == ["arguments: value is nested too deeply"]

    def test_huge_string(self) -> None:
        found = argcheck.validate("x" * 4_000_000, {"type": "string", "maxLength": 10})
        assert found == ["arguments: must be at most 10 characters long (got 4000000)"]

    def test_code_points_not_bytes(self) -> None:
        assert argcheck.validate("é" * 5, {"type": "string", "maxLength": 5}) == []

    def test_lone_surrogates_are_named_wherever_they_are(self) -> None:
        value = json.loads(
            '{"ok": "\\ud83d\\ude00", "a": ["x", "\\ud800"], "\\udc00k": {"b": "\\udfff"}}'
        )
        found = argcheck.validate(value, {"type": "object"})
        assert sorted(found) == sorted(
            [
                'arguments["\\udc00k"].b: holds '
                + argcheck.LONE_SURROGATE
                + "; send valid Unicode text",
                'arguments["\\udc00k"]: the property name holds '
                + argcheck.LONE_SURROGATE
                + "; send valid Unicode text",
                "arguments.a[1]: holds " + argcheck.LONE_SURROGATE + "; send valid Unicode text",
            ]
        )
        assert all(message.encode("utf-8") for message in found)

    def test_a_valid_pair_is_not_a_lone_surrogate(self) -> None:
        assert argcheck.validate(json.loads('"\\ud83d\\ude00"'), {"type": "string"}) == []
        assert argcheck.validate(json.loads('"\\ude00\\ud83d"'), {"type": "string"}) != []

    def test_deeply_nested_surrogate_is_found(self) -> None:
        depth = sys.getrecursionlimit() - 50
        value = json.loads("[" * depth + '"\\ud800"' + "]" * depth)
        assert [where for where, _ in argcheck.find_lone_surrogates(value)] == [(0,) * depth]


class TestSchemaErrors:
    @pytest.mark.parametrize(
        ("schema", "value", "keyword"),
        [
            pytest.param({"format": "date-time"}, "x", "format", id="format"),
            pytest.param({"anyOf": [{}]}, 1, "anyOf", id="anyOf"),
            pytest.param({"exclusiveMinimum": 0}, 1, "exclusiveMinimum", id="exclusive"),
            pytest.param({"properties": {"a": {"$ref": "#/x"}}}, {"a": 1}, "$ref", id="nested-ref"),
            pytest.param({"items": {"oneOf": []}}, [1], "oneOf", id="in-items"),
        ],
    )
    def test_unsupported_keyword_raises(
        self, schema: JSONObject, value: JSONValue, keyword: str
    ) -> None:
        with pytest.raises(
            ValueError, match=re.escape(f"unsupported JSON Schema keyword '{keyword}'")
        ):
            argcheck.validate(value, schema)

    @pytest.mark.parametrize(
        ("schema", "value", "message"),
        [
            pytest.param({"type": "text"}, "x", "'type' must be one of", id="bad-type-name"),
            pytest.param({"type": []}, "x", "'type' must be one of", id="empty-type-list"),
            pytest.param({"enum": "a"}, "a", "'enum' must be an array", id="enum-not-array"),
            pytest.param({"minLength": 1.5}, "a", "'minLength' must be an integer", id="float-len"),
            pytest.param({"minimum": "0"}, 1, "'minimum' must be a number", id="str-minimum"),
            pytest.param({"maxItems": True}, [], "'maxItems' must be an integer", id="bool-max"),
            pytest.param({"pattern": 5}, "a", "'pattern' must be a string", id="pattern-type"),
            pytest.param({"pattern": "("}, "a", "does not compile", id="pattern-bad"),
            pytest.param({"required": "a"}, {}, "'required' must be an array", id="required"),
            pytest.param({"properties": []}, {}, "'properties' must be an object", id="props"),
            pytest.param(
                {"properties": {"a": True}}, {"a": 1}, "a schema must be an object", id="bool-sub"
            ),
            pytest.param(
                {"additionalProperties": 1}, {"a": 1}, "'additionalProperties' must be", id="extra"
            ),
            pytest.param({"items": []}, [1], "a schema must be an object", id="tuple-items"),
        ],
    )
    def test_malformed_keyword_raises(
        self, schema: JSONObject, value: JSONValue, message: str
    ) -> None:
        with pytest.raises(argcheck.SchemaError, match=message):
            argcheck.validate(value, schema)

    def test_schema_error_is_a_value_error(self) -> None:
        assert issubclass(argcheck.SchemaError, ValueError)

    def test_check_schema_walks_unused_branches(self) -> None:
        schema: JSONObject = {
            "type": "object",
            "properties": {"a": {"type": "array", "items": {"format": "uri"}}},
        }
        assert argcheck.validate({}, schema) == []
        with pytest.raises(ValueError, match=re.escape("schema.properties.a.items: unsupported")):
            argcheck.check_schema(schema)

    def test_check_schema_walks_additional_properties_and_patterns(self) -> None:
        with pytest.raises(ValueError, match="additionalProperties: unsupported"):
            argcheck.check_schema({"additionalProperties": {"not": {}}})
        with pytest.raises(ValueError, match="does not compile"):
            argcheck.check_schema({"properties": {"a": {"pattern": "[", "type": "string"}}})

    def test_check_schema_rejects_non_object(self) -> None:
        with pytest.raises(ValueError, match="a schema must be an object"):
            argcheck.check_schema([])  # type: ignore[arg-type]  # the point of the test

    def test_fixture_schemas_are_supported(self) -> None:
        for spec in load_fixture_tools():
            argcheck.check_schema(spec.input_schema)


class TestTypeName:
    @pytest.mark.parametrize(
        ("value", "name"),
        [
            (None, "null"),
            (True, "boolean"),
            (1, "integer"),
            (1.0, "number"),
            ("", "string"),
            ([], "array"),
            ({}, "object"),
        ],
    )
    def test_names(self, value: JSONValue, name: str) -> None:
        assert argcheck.type_name(value) == name
