"""The MCP tool registry: schemas and annotations of the agent's verbs, and thin adapters.

Every handler translates arguments, calls a verb and renders its result; no behaviour lives
here (DESIGN.md, "thin doors"). The agent's surface has no approve, reject, lift or purge,
and no way to set ``origin``: entries written here are always ``agent`` entries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

from ctxkeeper.core import framing
from ctxkeeper.core.model import KINDS, LIST_MAX, TEXT_MAX, FieldSpec, kind_specs
from ctxkeeper.core.provenance import describe
from ctxkeeper.mcp.tooldef import ToolResult, ToolSpec
from ctxkeeper.read import framed, guidance, render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.store import Store

#: Largest structured result a tool returns, in serialized characters. The text rendering
#: doubles it, and Claude Code refuses output over 25,000 tokens (mcp.md §15).
MAX_STRUCTURED_CHARS: Final = 30_000
#: Longest path argument; longer is refused as an argument error (see :func:`_check_paths`).
PATH_MAX: Final = 4096

# Every schema below goes into every request the model gets, in every repository (issue 25;
# bench/tools_list_size.py measures it). So a schema states the shape and the closed
# vocabularies, and leaves to the verbs the limits they enforce anyway with an error naming
# the field: field lengths and list sizes (model.clean_fields), id forms (model.check_id),
# and path lengths and NUL characters (_check_paths below).
_STR: Final[JSONObject] = {"type": "string"}
#: Ids look like dec-021-b607; the verbs name the kinds when one is wrong (model.check_id).
_ID: Final[JSONObject] = _STR
#: Times are ISO-8601 UTC, a bare date the whole day: said once in the descriptions that take
#: one; the times module parses them or names the field.
_TIME: Final[JSONObject] = _STR
_STATUS: Final[JSONObject] = {
    "enum": ["proposed", "active", "superseded", "deprecated", "rejected"]
}
_HARDNESS: Final[JSONObject] = {"enum": ["hard", "soft"]}


def _strings(item: JSONObject | None = None) -> JSONObject:
    return {"type": "array", "items": item or _STR}


#: The project root; optional in every tool (DESIGN.md), its name says the rest.
_PROJECT: Final[JSONObject] = _STR


def _object(properties: JSONObject, required: list[str] | None = None) -> JSONObject:
    schema: JSONObject = {
        "type": "object",
        "properties": {**properties, "project_dir": _PROJECT},
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


def _out(properties: JSONObject, required: list[str]) -> JSONObject:
    """An output schema: every result carries the agent-facing ``note`` (see ``guidance``)."""
    return {
        "type": "object",
        "properties": {"note": _NOTE, **properties},
        "required": ["note", *required],
    }


#: Claude Code hands the model ``structuredContent``, not the text block, so the guidance the
#: text carries is in the structured result too: one short ``note`` per result.
_NOTE: Final[JSONObject] = {"type": "string", "minLength": 1}
_A: Final[JSONObject] = {"type": "array"}
#: A filter's strings are only compared, never stored: the list is capped, not each item.
_FILTER: Final[JSONObject] = {"type": "array", "items": _STR, "maxItems": LIST_MAX}
_O: Final[JSONObject] = {"type": "object"}


def _kind() -> JSONObject:
    return {"enum": list(KINDS)}


def _field_schema(spec: FieldSpec) -> JSONObject:
    if spec.choices:
        return {"enum": list(spec.choices)}
    return _strings() if spec.is_list else _STR


def record_input() -> JSONObject:
    """``record_entry``'s arguments: the kind, every kind's own fields (from its spec), the
    common ones."""
    own: JSONObject = {}
    for kind in kind_specs():
        for spec in kind.fields:
            own.setdefault(spec.name, _field_schema(spec))
    return _object(
        {
            "kind": _kind(),
            **own,
            "asked_as": _strings(),
            "scope": _strings(),
            "tags": _strings(),
            "related_to": _strings(_ID),
            "supersedes": _strings(_ID),
            "valid_from": _TIME,
            "valid_until": _TIME,
        },
        ["kind"],
    )


def _record_description() -> str:
    return " ".join(
        [
            "Store what a later session must know, with its why.",
            *(spec.mcp_line for spec in kind_specs()),
            (
                "asked_as: 3-6 ways someone would ask for it or word its symptom. "
                "supersedes: ids it replaces. Times ISO-8601 UTC. Refused if thin, "
                "secret-bearing or like a retired entry."
            ),
        ]
    )


def context_input() -> JSONObject:
    return _object(
        {
            "query": {"type": "string", "maxLength": TEXT_MAX},
            "tags": _FILTER,
            "path": _STR,
            "kinds": _strings(_kind()),
            "token_budget": {"type": "integer", "minimum": 100, "maximum": 20000},
            "as_of": _TIME,
            "include_history": {"type": "boolean"},
            "abstain": {"enum": ["include", "withhold"]},
        }
    )


def query_input() -> JSONObject:
    return _object(
        {
            "kinds": _strings(_kind()),
            "status": _strings(_STATUS),
            "origin": _strings({"enum": ["agent", "user", "import"]}),
            "hardness": _HARDNESS,
            "tags_any": _FILTER,
            "tags_all": _FILTER,
            "scope": _FILTER,
            "covers_path": _STR,
            "text": _FILTER,
            "since": _TIME,
            "before": _TIME,
            "supersedes": _ID,
            "superseded_by": _ID,
            "as_of": _TIME,
            "known_at": _TIME,
            "limit": {"type": "integer", "minimum": 1, "maximum": 500},
        }
    )


#: Arguments that name files or directories, checked in every call (``updates`` too).
_PATH_ARGUMENTS: Final = ("project_dir", "path", "covers_path", "scope")


def _check_paths(arguments: JSONObject, prefix: str = "") -> None:
    """Refuse a path no file system takes, naming the argument: a NUL is valid in JSON but in
    no file path, and the OS calls would raise far from the argument that carried it; a path
    over :data:`PATH_MAX` characters would fail as a storage error instead of a wrong argument."""
    from ctxkeeper.core.errors import UsageError

    for name in _PATH_ARGUMENTS:
        value = arguments.get(name)
        items = value if isinstance(value, list) else [value]
        for index, item in enumerate(items):
            if not isinstance(item, str):
                continue
            where = prefix + name + (f"[{index}]" if isinstance(value, list) else "")
            if "\x00" in item:
                raise UsageError(
                    f"{where} holds a NUL character (\\x00), which no file path can contain; "
                    "pass the path without it"
                )
            if len(item) > PATH_MAX:
                raise UsageError(
                    f"{where} is {len(item):,} characters long; a path may have at most "
                    f"{PATH_MAX:,}"
                )
    updates = arguments.get("updates")
    if isinstance(updates, dict) and not prefix:
        _check_paths(updates, "updates.")


def _open(arguments: JSONObject, default_dir: str | None) -> Store:
    from ctxkeeper.core.store import Store
    from ctxkeeper.write.verbs import agent_actor

    _check_paths(arguments)
    project = str(arguments.get("project_dir") or "") or default_dir
    store = Store.open(project, writer=agent_actor())
    store.require()
    return store


def _cap(result: JSONObject, key: str, *, keep: str = "first", minimum: int = 0) -> bool:
    """Drop items from ``result[key]`` until the result fits; True if any went.

    :param keep: ``first`` drops from the end (ranked lists), ``last`` from the start
        (histories, whose newest revisions matter most).
    :param minimum: items never dropped, however large the result.
    """
    items = result.get(key)
    if not isinstance(items, list):
        return False
    cut = False
    while (
        len(items) > minimum and len(json.dumps(result, ensure_ascii=False)) > MAX_STRUCTURED_CHARS
    ):
        items.pop(0 if keep == "last" else -1)
        cut = True
    return cut


def _record(store: Store, args: JSONObject) -> ToolResult:
    from ctxkeeper.write.verbs import agent_actor, record_entry

    fields = {k: v for k, v in args.items() if k not in ("kind", "supersedes", "project_dir")}
    supersedes = args.get("supersedes")
    result = record_entry(
        store,
        str(args["kind"]),
        fields,
        actor=agent_actor(),
        supersedes=[str(s) for s in supersedes] if isinstance(supersedes, list) else None,
    )
    notes = guidance.record_notes(result)
    return ToolResult(_noted(notes[0], result), "\n".join(notes))


def _noted(note: str, result: JSONObject) -> JSONObject:
    """The structured result with the agent-facing ``note`` first (see ``read/guidance``)."""
    return {"note": note, **result}


def _dicts(value: JSONValue) -> list[JSONObject]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _dicts_or_ids(value: JSONValue) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _context(store: Store, args: JSONObject) -> ToolResult:
    from ctxkeeper.read.rank import get_context

    result = get_context(store, args)
    approved = framed.provenance_codes(store)
    ranked: dict[str, str] = {}  # the ranking's own label, said in the text block
    for item in _dicts(result.get("results")):
        entry = item.get("entry")
        if isinstance(entry, dict):
            item["provenance"] = framed.provenance_text(entry, approved)
            ranked[str(item.get("id"))] = str(item.get("label") or "")
            item["label"] = guidance.entry_label(entry, framed.code_of(entry, approved))
    truncated = _cap(result, "results")
    found: list[list[str]] = []
    for item in _dicts(result.get("results")):
        entry = item.get("entry")
        terms = render.terms_line(item).strip()
        if isinstance(entry, dict):
            said = ranked.get(str(item.get("id")))
            label = f", {framing.literal(said)[1:-1]}" if said else ""
            block = framed.entry_block(entry, framed.code_of(entry, approved), label)
        else:
            block = [f"- {framing.literal(str(item.get('line')))}"]
        found.append([*block, *([f"    {terms}"] if terms else [])])
    note = guidance.context_note(result, truncated=truncated)
    head = f"top_relevance {result.get('top_relevance')} - {note}"
    blocks = [head, *([framed.framed(found)] if found else [])]
    return ToolResult(_noted(note, result), "\n\n".join(blocks), truncated=truncated)


def _query(store: Store, args: JSONObject) -> ToolResult:
    from ctxkeeper.read.query import query_entries

    result = query_entries(store, args)
    approved = framed.provenance_codes(store)
    entries = _dicts(result.get("results"))
    # Beside the entries (each stays an entry): the label the model weighs it by.
    labels: JSONObject = {
        str(e.get("id")): guidance.entry_label(e, framed.code_of(e, approved)) for e in entries
    }
    result["labels"] = labels
    if _cap(result, "results"):
        result["truncated"] = True
        kept = {str(e.get("id")) for e in _dicts(result.get("results"))}
        result["labels"] = {k: v for k, v in labels.items() if k in kept}
    note = guidance.query_note(result)
    listed = [[framed.entry_line(e, approved)] for e in _dicts(result.get("results"))]
    lines = [note, *([framed.framed(listed)] if listed else [])]
    return ToolResult(_noted(note, result), "\n".join(lines), truncated=bool(result["truncated"]))


def _get(store: Store, args: JSONObject) -> ToolResult:
    from ctxkeeper.write.verbs import get_entry

    result = get_entry(store, str(args["id"]))
    cut = _cap(result, "history", keep="last", minimum=1)
    history = result["history"]
    assert isinstance(history, list)
    entry = result["entry"]
    assert isinstance(entry, dict)
    made = framed.code_of(entry, framed.provenance_codes(store))
    text = framed.framed(
        [framed.entry_block(entry, made), framed.history_block(str(entry.get("id")), history)]
    )
    label = guidance.entry_label(entry, made)
    structured = {
        "note": f"{entry.get('id')}: {label}",
        "label": label,
        **result,
        "provenance": describe(made),
        "history_truncated": cut,
    }
    return ToolResult(structured, text, truncated=cut)


def _update(store: Store, args: JSONObject) -> ToolResult:
    from ctxkeeper.write.verbs import agent_actor, update_entry

    updates = args["updates"]
    assert isinstance(updates, dict)
    result = update_entry(store, str(args["id"]), updates, str(args["reason"]), actor=agent_actor())
    changed = ", ".join(_dicts_or_ids(result["changed"]))
    if result["pending"]:
        text = guidance.pending_note(result, f"the update of {changed}")
    else:
        text = f"updated {result['id']} to revision {result['revision']}; changed {changed}"
    return ToolResult(_noted(text, result), text)


def _deprecate(store: Store, args: JSONObject) -> ToolResult:
    from ctxkeeper.write.verbs import agent_actor, deprecate_entry

    successor = args.get("superseded_by")
    result = deprecate_entry(
        store,
        str(args["id"]),
        str(args["reason"]),
        actor=agent_actor(),
        superseded_by=str(successor) if successor else None,
    )
    if result["pending"]:
        text = guidance.pending_note(result, "the deprecation")
    else:
        text = f"deprecated {result['id']}; it is now a tombstone later writes are checked against"
    return ToolResult(_noted(text, result), text)


def _summary(store: Store, args: JSONObject) -> ToolResult:
    from ctxkeeper.read.summary import project_summary, render_summary

    budget = args.get("token_budget")
    result = project_summary(
        store, token_budget=budget if isinstance(budget, int) else None, with_drift=True
    )
    hard_delivery = store.config().hard_delivery
    text = render_summary(result, hard_delivery=hard_delivery)
    note = guidance.summary_note(result, hard_delivery=hard_delivery)
    return ToolResult(_noted(note, result), text)


def _drift(store: Store, args: JSONObject) -> ToolResult:
    from ctxkeeper.read.drift import check_drift, drift_text

    ids = args.get("ids")
    result = check_drift(store, [str(i) for i in ids] if isinstance(ids, list) else None)
    truncated = _cap(result, "results")
    text = drift_text(result)
    note = text.splitlines()[0]
    if result.get("drifted") or result.get("orphaned"):
        note += "; re-read those entries, then verify_entry or update_entry them"
    return ToolResult(_noted(note, result), text, truncated=truncated)


def _verify(store: Store, args: JSONObject) -> ToolResult:
    from ctxkeeper.write.verbs import agent_actor, verify_entry

    result = verify_entry(store, str(args["id"]), actor=agent_actor())
    sha = result.get("verified_sha")
    where = f"at {str(sha)[:12]}" if sha else "(no git: verified_sha stays null)"
    text = f"verified {result['id']} {where}; its drift starts again from here"
    return ToolResult(_noted(text, result), text)


def _export(store: Store, args: JSONObject) -> ToolResult:
    from ctxkeeper.write.exchange import export_snapshot

    path = args.get("path")
    result = export_snapshot(store, str(path) if path else None)
    text = f"wrote the team snapshot {result['path']}; commit it with the code"
    return ToolResult(_noted(text, result), text)


def _import(store: Store, args: JSONObject) -> ToolResult:
    from ctxkeeper.write.exchange import import_snapshot, summary_line
    from ctxkeeper.write.verbs import agent_actor

    path = args.get("path")
    # Only from inside .context/, which the plugin denies the agent's Edit and Write tools: a
    # file the agent wrote elsewhere could claim a person's approval (con-016-feaf).
    result = import_snapshot(
        store, str(path) if path else None, actor=agent_actor(), fence="context"
    )
    notes = result.get("notes")
    lines = [summary_line(result), *map(str, notes if isinstance(notes, list) else [])]
    return ToolResult(_noted("; ".join(lines), result), "\n".join(lines))


_SIMILAR: Final[JSONObject] = {"type": "array"}
#: An entry's label beside it: status, provenance, pending changes (``guidance.entry_label``).
_LABEL: Final[JSONObject] = {"type": "string", "minLength": 1}
_BOOL: Final[JSONObject] = {"type": "boolean"}
#: The id of the change awaiting a person (the descriptions say when one is made).
_CHANGE: Final[JSONObject] = {"type": "string"}
_READ: Final = (True, False, True)  # read-only, not destructive, idempotent
_ADDS: Final = (False, False, False)
_CHANGES: Final = (False, True, False)
_Handler = Callable[["Store", "JSONObject"], ToolResult]


def _table() -> list[
    tuple[str, str, str, JSONObject, JSONObject, tuple[bool, bool, bool], _Handler]
]:
    """name, title, description, input schema, output schema, hints, handler; in list order."""
    return [
        (
            "get_context",
            "Get project memory",
            (
                "Project memory ranked for a question (query) and/or a file you will change "
                "(path). Its note says how well it answers."
            ),
            context_input(),
            _out(
                {
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"label": _LABEL},
                            "required": ["label"],
                        },
                    },
                    "top_relevance": {"type": "number"},
                    "no_confident_match": {"type": "boolean"},
                    "weak_match": {"type": "boolean"},
                    "missing": _A,
                    "common_words_only": _A,
                    "budget_truncated": {"type": "boolean"},
                    "dropped_ids": _A,
                },
                ["results", "no_confident_match"],
            ),
            _READ,
            _context,
        ),
        (
            "record_entry",
            "Record an entry",
            _record_description(),
            record_input(),
            _out(
                {
                    "id": {"type": "string"},
                    "entry": _O,
                    "similar_entries": _SIMILAR,
                    "superseded": _A,
                    "pending_supersession": _A,
                    "pending": _BOOL,
                    "possible_supersession": _A,
                },
                ["id", "entry", "similar_entries"],
            ),
            _ADDS,
            _record,
        ),
        (
            "query_entries",
            "Filter entries",
            (
                "Exact filters, no ranking; all statuses unless status is given. known_at: what "
                "the store held then; as_of: valid then; text: substrings, all required. Times "
                "ISO-8601 UTC."
            ),
            query_input(),
            _out(
                {
                    "total": {"type": "integer"},
                    "labels": {"type": "object", "additionalProperties": _LABEL},
                    "results": _A,
                },
                ["results", "total", "labels"],
            ),
            _READ,
            _query,
        ),
        (
            "get_entry",
            "Get an entry",
            "One entry and its journal history.",
            _object({"id": _ID}, ["id"]),
            _out(
                {"label": _LABEL, "entry": _O, "pending_changes": _A, "history": _A},
                ["label", "entry", "history"],
            ),
            _READ,
            _get,
        ),
        (
            "update_entry",
            "Update an entry",
            (
                "Change fields of an active or proposed entry (reason 10+ chars); floors "
                "re-apply. A change to a person's entry waits for their approval, except "
                "asked_as alone."
            ),
            _object(
                {
                    "id": _ID,
                    "updates": _O,
                    "reason": _STR,
                },
                ["id", "updates", "reason"],
            ),
            _out(
                {
                    "id": {"type": "string"},
                    "entry": _O,
                    "revision": {"type": "integer"},
                    "changed": _A,
                    "similar_entries": _SIMILAR,
                    "pending": _BOOL,
                    "change": _CHANGE,
                },
                ["id", "entry", "revision"],
            ),
            _CHANGES,
            _update,
        ),
        (
            "deprecate_entry",
            "Retire an entry",
            (
                "Retire an entry (reason 20+ chars), optionally naming its successor; the "
                "tombstone refuses the same content later. A person's entry waits for their "
                "approval."
            ),
            _object(
                {
                    "id": _ID,
                    "reason": _STR,
                    "superseded_by": _ID,
                },
                ["id", "reason"],
            ),
            _out(
                {"id": {"type": "string"}, "entry": _O, "pending": _BOOL, "change": _CHANGE},
                ["id", "entry"],
            ),
            _CHANGES,
            _deprecate,
        ),
        (
            "get_project_summary",
            "Project overview",
            "Counts, hard constraints, recent decisions, pending reviews, drift.",
            _object({"token_budget": {"type": "integer", "minimum": 200, "maximum": 20000}}),
            _out(
                {
                    "total": {"type": "integer"},
                    "counts": _O,
                    "hard_constraints": _A,
                    "recent_decisions": _A,
                    "pending_review": {"type": "integer"},
                    "pending_entries": {"type": "integer"},
                    "pending_change_count": {"type": "integer"},
                    "pending_changes": _A,
                    "drift": {},
                },
                ["total", "counts", "pending_review"],
            ),
            _READ,
            _summary,
        ),
        (
            "check_drift",
            "Check entries for drift",
            "Per scoped entry: commits touching its scope since it was verified; scope paths gone.",
            _object({"ids": {**_strings(_ID), "maxItems": 100}}),
            _out({"results": _A, "drifted": _A, "orphaned": _A, "git": _BOOL}, ["results"]),
            _READ,
            _drift,
        ),
        (
            "verify_entry",
            "Verify an entry",
            "Record that an entry still holds at HEAD.",
            _object({"id": _ID}, ["id"]),
            _out({"id": {"type": "string"}, "entry": _O}, ["id", "entry"]),
            (False, False, True),
            _verify,
        ),
        (
            "export_snapshot",
            "Write the team snapshot",
            "Write the team snapshot (.context/snapshot.jsonl) to commit with the code.",
            _object({"path": _STR}),
            _out({"path": {"type": "string"}}, ["path"]),
            (False, False, True),
            _export,
        ),
        (
            "import_snapshot",
            "Merge the team snapshot",
            "Merge the team snapshot after git pull; idempotent; tombstones win.",
            _object({"path": _STR}),
            _out(
                {"events_added": {"type": "integer"}, "added": _A, "updated": _A, "notes": _A},
                ["events_added"],
            ),
            (False, False, True),
            _import,
        ),
    ]


def load_tools(project_dir: str | None = None) -> list[ToolSpec]:
    """The agent's tools, in a fixed order, bound to ``project_dir`` unless a call names one."""
    return [
        ToolSpec(
            name=name,
            title=title,
            description=description,
            input_schema=input_schema,
            output_schema=output_schema,
            read_only=read_only,
            destructive=destructive,
            idempotent=idempotent,
            handler=_bind(handler, project_dir),
        )
        for name, title, description, input_schema, output_schema, (
            read_only,
            destructive,
            idempotent,
        ), handler in _table()
    ]


def _bind(
    handler: Callable[[Store, JSONObject], ToolResult], project_dir: str | None
) -> Callable[[JSONObject], ToolResult]:
    def call(arguments: JSONObject) -> ToolResult:
        return handler(_open(arguments, project_dir), arguments)

    return call
