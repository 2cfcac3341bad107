"""The quality scan: advice on entries that hold but could serve better.

Run by ``ctxkeeper doctor --quality`` (every finding) and by the PreCompact and SessionStart
``compact`` hooks (one line of counts for the person). :func:`scan` is a pure function of the
entries, the configured floors and an instant: it reads no file and writes nothing.

Findings are advice, never errors: each says what to do. An entry is changed by the agent's
``update_entry`` / ``deprecate_entry`` (MCP), or by a person's ``ctxkeeper edit`` /
``ctxkeeper deprecate`` at their terminal.

The heuristics, exactly (``live`` = status ``active`` or ``proposed``; every heuristic but
``bad_validity`` looks at live entries only):

``thin_rationale``
    A live entry whose rationale field is shorter than :data:`NEAR_FLOOR` (1.5) times the
    configured floor for that field, measured as floors are (``readable_length``: what a reader
    reads). The rationale fields are :data:`RATIONALE_FIELDS`: a decision's ``why_chosen``, a
    constraint's ``reason``, a pipeline's ``purpose``. A field whose floor is 0 is skipped.
``no_tags``
    A live entry whose ``tags`` list is empty.
``isolated``
    A live entry with no links and no neighbours: its own ``related_to`` and ``supersedes`` are
    empty and ``superseded_by`` is null; no other entry (any status) names it in
    ``related_to``, ``supersedes`` or ``superseded_by``; no other live entry shares one of its
    tags; and no other live entry has a scope path equal to, inside or around one of its own
    (one covers the other, whole path components). A project-wide (empty) scope shares with
    nothing: it would make every entry a neighbour of every other.
``no_asked_as``
    An ``active`` entry without ``asked_as``: nothing says how a teammate or an agent would ask
    for it in their own words, so a question that shares few of its words misses it. Listed by
    ``doctor --quality`` only; the hooks' one line of counts leaves it out (every entry written
    before the field existed has none, and adding them is the agent's to do, not the person's).
``unscoped_path_rule``
    A live constraint with an empty scope whose ``rule`` or ``reason`` names a repository path
    (:func:`named_paths`): a rule about a file that is not scoped to it is never delivered at
    that file's edit.
``likely_duplicate``
    A pair of live entries (each pair once, any kinds) whose statements
    (:func:`ctxkeeper.write.similarity.statement`) share at least :data:`DUPLICATE_TERM_DICE`
    (0.5) of their stemmed terms by Dice coefficient, whose
    :func:`~ctxkeeper.write.similarity.similarity` reaches
    :data:`~ctxkeeper.write.similarity.RESTATEMENT_THRESHOLD` and which
    :func:`~ctxkeeper.write.similarity.classify` labels ``likely_restatement`` (the bar a
    write's ``similar_entries`` uses; a contradiction is not a duplicate). The term bound lets
    a prefix filter (terms ordered rarest first, :func:`_candidate_pairs`) find every such pair
    without comparing all pairs; it is exact for this definition. It costs no restatement the
    similarity evals know: of the 84 labelled pairs in ``evals/similarity/pairs.jsonl`` that
    similarity and classify call restatements, the lowest term Dice is 0.53.
``bad_validity``
    An entry of any status whose ``valid_from`` or ``valid_until`` is present but does not
    parse (:func:`ctxkeeper.core.times.stored_time_problem`: not a string, not an accepted
    ISO-8601 form, or out of range; reads treat it as absent), or whose two bounds parse but
    the window ends before it starts (the entry is never valid).
``expired_active``
    An ``active`` entry whose ``valid_until`` parses and has passed at the scan's instant (a
    bare date holds through the end of that UTC day): hooks and ``get_context`` no longer
    deliver it, yet it still counts as in force.
"""

from __future__ import annotations

import gc
import math
import re
from typing import Final, TypedDict

from ctxkeeper.core import times
from ctxkeeper.core.model import LIVE_STATUSES, KindTable, kind_spec
from ctxkeeper.core.text import readable_length, terms
from ctxkeeper.write.similarity import RESTATEMENT_THRESHOLD, classify, similarity, statement

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from datetime import datetime

    from ctxkeeper.core.model import Floors

__all__ = [
    "CODES",
    "DUPLICATE_TERM_DICE",
    "NEAR_FLOOR",
    "RATIONALE_FIELDS",
    "Finding",
    "count_by_code",
    "duplicates_checked",
    "named_paths",
    "scan",
    "summary_line",
]

#: Every finding code, in the order findings are reported.
CODES: Final = (
    "bad_validity",
    "expired_active",
    "likely_duplicate",
    "unscoped_path_rule",
    "thin_rationale",
    "no_tags",
    "isolated",
    "no_asked_as",
)
#: Advice for ``doctor --quality`` alone, not for the hooks' line of counts (see above).
DOCTOR_ONLY: Final = frozenset({"no_asked_as"})
#: How each code reads in a count, for one and for more ("3 entries without tags").
LABELS: Final = {
    "bad_validity": ("entry with a bad validity bound", "entries with a bad validity bound"),
    "expired_active": ("expired entry still active", "expired entries still active"),
    "likely_duplicate": ("likely duplicate pair", "likely duplicate pairs"),
    "unscoped_path_rule": (
        "unscoped constraint naming a path",
        "unscoped constraints naming a path",
    ),
    "thin_rationale": ("thin rationale", "thin rationales"),
    "no_tags": ("entry without tags", "entries without tags"),
    "isolated": ("isolated entry", "isolated entries"),
    "no_asked_as": ("entry without asked_as", "entries without asked_as"),
}
#: "Near the floor": shorter than this many times the configured floor.
NEAR_FLOOR: Final = 1.5
#: The field that says why, per kind (its spec's ``rationale``).
RATIONALE_FIELDS: Final[Mapping[str, str]] = KindTable(lambda spec: spec.rationale)
#: The least share of statement terms (Dice) two entries must have to be a likely duplicate.
DUPLICATE_TERM_DICE: Final = 0.5
_EDIT_HINT: Final = "update_entry, or `ctxkeeper edit ID` in a person's terminal"


class Finding(TypedDict):
    """One piece of advice: its ``code``, the entries concerned, and what to do."""

    code: str
    ids: list[str]
    message: str


# ------------------------------------------------------------------------------ path names

# File extensions that name a file in a repository; a name ending in another suffix ("e.g",
# "v1.2", "example.com") is not read as a file.
_EXTENSIONS_LIST: Final = """
    py pyi pyx ipynb js jsx mjs cjs ts tsx vue svelte json jsonl yaml yml toml ini cfg conf
    env lock md rst txt csv tsv sql sh bash zsh fish ps1 bat go rs rb java kt kts scala swift
    m mm c h cc cpp cxx hpp hh cs fs php pl lua r dart ex exs erl hs ml clj elm html htm css
    scss sass less xml xsd proto graphql gql tf tfvars hcl gradle properties mk cmake dockerfile
    plist pem crt key sqlite db parquet avro bzl nix sol wasm zig gd tscn
    """
_EXTENSIONS: Final = frozenset(_EXTENSIONS_LIST.split())
# Technology names spelled like a file: "Node.js" is a runtime, not a file called Node.js.
_NOT_FILES_LIST: Final = """
    node.js vue.js next.js nuxt.js express.js react.js angular.js ember.js backbone.js
    three.js d3.js chart.js socket.io alpine.js solid.js nest.js deno.js bun.js
    """
_NOT_FILES: Final = frozenset(_NOT_FILES_LIST.split())
# Files known by name alone.
_BARE_FILES_LIST: Final = """
    Makefile GNUmakefile Dockerfile Containerfile Procfile Jenkinsfile Gemfile Rakefile
    Vagrantfile Brewfile Justfile Pipfile Caddyfile Taskfile CODEOWNERS
    """
_BARE_FILES: Final = frozenset(_BARE_FILES_LIST.split())
_WRAPPERS: Final = "`'\"()[]{}<>*,;:!?"
_PATH_CHARS: Final = re.compile(r"[\w.\-/]+")
_HAS_SCHEME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _file_name(part: str) -> bool:
    if part in _BARE_FILES:
        return True
    if part.lower() in _NOT_FILES:
        return False
    stem, dot, extension = part.rpartition(".")
    if not dot or extension.lower() not in _EXTENSIONS:
        return False
    # ".env", ".eslintrc.json": a dot file; "settings.py": a stem holding a letter.
    return stem == "" or any(char.isalpha() for char in stem)


def named_paths(text: str) -> list[str]:
    """The repository paths a text names, in order, each once.

    A whitespace-separated token, stripped of quotes, backticks, brackets and trailing
    punctuation, names a path when it is made of letters, digits, ``_``, ``-``, ``.`` and
    ``/`` only, holds a letter, is not a URL, e-mail or absolute path, and either ends with
    ``/`` (``src/auth/``), starts with ``./`` or ``../``, was written in backticks with a ``/``
    (`` `src/auth` ``), or ends in a file name: a known extension after a stem with a letter
    (``settings.py``, ``api/v2/routes.ts``, ``.env``) or a file known by name (``Makefile``).
    So ``and/or``, ``read/write``, ``TCP/IP``, ``v1.2``, ``e.g.``, ``Node.js`` and
    ``https://x/y.py`` are not paths. A leading ``./`` is dropped from what is returned.
    """
    found: dict[str, None] = {}
    for raw in text.split():
        quoted = raw.lstrip("([{\"'").startswith("`")
        token = raw.strip(_WRAPPERS)
        while token.endswith("."):  # the end of a sentence, maybe after a bracket
            token = token[:-1].rstrip(_WRAPPERS)
        if (
            not token
            or not _PATH_CHARS.fullmatch(token)
            or not any(char.isalpha() for char in token)
            or token.startswith(("/", "~", "www."))
            or _HAS_SCHEME.match(token)
        ):
            continue
        last = token.rstrip("/").rsplit("/", 1)[-1]
        is_path = (
            "/" in token and (token.endswith("/") or token.startswith(("./", "../")) or quoted)
        ) or (bool(last) and not token.endswith("/") and _file_name(last))
        if is_path:
            while token.startswith("./"):
                token = token[2:]
            if token and token != "..":
                found.setdefault(token, None)
    return list(found)


# ------------------------------------------------------------------------------- the scan


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _scopes(entry: Mapping[str, object]) -> list[str]:
    return [scope for scope in _strings(entry.get("scope")) if scope]


def _id(entry: Mapping[str, object]) -> str:
    return str(entry.get("id"))


def scan(
    entries: Iterable[Mapping[str, object]],
    *,
    floors: Floors,
    instant: datetime,
    duplicates_up_to: int | None = None,
) -> list[Finding]:
    """Every finding for these entries (see the module docstring), in :data:`CODES` order,
    then by entry id. ``floors`` are the configured ones (``store.config().floors``).

    :param duplicates_up_to: look for likely duplicates only when there are at most this many
        live entries (None: always). The duplicate check is the one that grows faster than the
        store; a hook with a time limit skips it on a large store (:func:`duplicates_checked`).
    """
    # The scan builds hundreds of thousands of small containers and no reference cycles; the
    # cyclic collector would walk them again and again (measured: half the time at 10,000).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _scan(list(entries), floors, instant, duplicates_up_to)
    finally:
        if collecting:
            gc.enable()


def _scan(
    entries: list[Mapping[str, object]],
    floors: Floors,
    instant: datetime,
    duplicates_up_to: int | None,
) -> list[Finding]:
    everything = sorted(entries, key=_id)
    live = [entry for entry in everything if entry.get("status") in LIVE_STATUSES]
    findings: list[Finding] = []
    findings += _bad_validity(everything)
    findings += _expired(live, instant)
    if duplicates_checked(len(live), duplicates_up_to):
        findings += _duplicates(live)
    findings += _unscoped_path_rules(live)
    findings += _thin(live, floors)
    findings += [
        Finding(
            code="no_tags",
            ids=[_id(e)],
            message=f"{_id(e)} has no tags: add one or two ({_EDIT_HINT}) so it groups "
            "with the entries on the same subject",
        )
        for e in live
        if not _strings(e.get("tags"))
    ]
    findings += _isolated(everything, live)
    findings += [
        Finding(
            code="no_asked_as",
            ids=[_id(e)],
            message=f"{_id(e)} has no asked_as: add 3-6 ways a teammate would ask for it "
            '(update_entry {"asked_as": [...]} applies at once; `ctxkeeper edit ID --asked-as '
            "TEXT` in a person's terminal)",
        )
        for e in live
        if e.get("status") == "active" and not _strings(e.get("asked_as"))
    ]
    return findings


def duplicates_checked(live: int, duplicates_up_to: int | None) -> bool:
    """Whether :func:`scan` looks for duplicates among ``live`` live entries."""
    return duplicates_up_to is None or live <= duplicates_up_to


def _bad_validity(entries: list[Mapping[str, object]]) -> list[Finding]:
    findings = []
    for entry in entries:
        entry_id = _id(entry)
        problems = [
            f"{key} {problem}"
            for key in ("valid_from", "valid_until")
            if (problem := times.stored_time_problem(entry.get(key))) is not None
        ]
        if not problems:
            start = times.parse_stored_bound(entry.get("valid_from"), end_of_day=False)
            end = times.parse_stored_bound(entry.get("valid_until"), end_of_day=True)
            if start is not None and end is not None and start >= end:
                problems.append(
                    f"valid_from {entry.get('valid_from')!r} is not before valid_until "
                    f"{entry.get('valid_until')!r}, so it is never valid"
                )
        if problems:
            findings.append(
                Finding(
                    code="bad_validity",
                    ids=[entry_id],
                    message=f"{entry_id}: {'; '.join(problems)} (reads ignore a bound that "
                    "does not parse); write it as 2026-11-30 (a whole UTC day) or "
                    f"2026-11-30T09:15:00Z, or remove it ({_EDIT_HINT})",
                )
            )
    return findings


def _expired(live: list[Mapping[str, object]], instant: datetime) -> list[Finding]:
    findings = []
    for entry in live:
        if entry.get("status") != "active":
            continue
        end = times.parse_stored_bound(entry.get("valid_until"), end_of_day=True)
        if end is not None and end <= instant:
            entry_id = _id(entry)
            findings.append(
                Finding(
                    code="expired_active",
                    ids=[entry_id],
                    message=f"{entry_id} expired (valid_until {entry.get('valid_until')}) and "
                    "is no longer delivered: if it still holds, extend valid_until; if not, "
                    "retire it (deprecate_entry, with the reason)",
                )
            )
    return findings


def _thin(live: list[Mapping[str, object]], floors: Floors) -> list[Finding]:
    findings = []
    for entry in live:
        kind = str(entry.get("kind"))
        name = RATIONALE_FIELDS.get(kind)
        floor = floors.get(kind, {}).get(name, 0) if name else 0
        text = entry.get(name) if name else None
        if not floor or not isinstance(text, str):
            continue
        length = readable_length(text)
        if length < NEAR_FLOOR * floor:
            entry_id = _id(entry)
            findings.append(
                Finding(
                    code="thin_rationale",
                    ids=[entry_id],
                    message=f"{entry_id}: {name} is {length} characters, under "
                    f"{NEAR_FLOOR:g}x its floor of {floor}: say what it rests on (the incident, "
                    f"cost or measurement) so a reader can weigh it ({_EDIT_HINT})",
                )
            )
    return findings


def _unscoped_path_rules(live: list[Mapping[str, object]]) -> list[Finding]:
    findings = []
    for entry in live:
        if entry.get("kind") != "constraint" or _scopes(entry):
            continue
        spec = kind_spec("constraint")
        text = " ".join(str(entry.get(key) or "") for key in (spec.headline, spec.rationale))
        paths = named_paths(text)
        if paths:
            entry_id = _id(entry)
            shown = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
            findings.append(
                Finding(
                    code="unscoped_path_rule",
                    ids=[entry_id],
                    message=f"{entry_id} names {shown} but has no scope, so it reaches no edit "
                    f"of those files: if it governs them, set its scope to them ({_EDIT_HINT})",
                )
            )
    return findings


def _isolated(
    everything: list[Mapping[str, object]], live: list[Mapping[str, object]]
) -> list[Finding]:
    linked: set[str] = set()
    for entry in everything:
        targets = [*_strings(entry.get("related_to")), *_strings(entry.get("supersedes"))]
        if isinstance(entry.get("superseded_by"), str):
            targets.append(str(entry.get("superseded_by")))
        if targets:
            linked.add(_id(entry))
            linked.update(target for target in targets if target != _id(entry))
    tag_count: dict[str, int] = {}
    own_count: dict[str, int] = {}  # entries whose scope holds exactly this path
    under_count: dict[str, int] = {}  # entries with a scope path equal to or inside this one
    for entry in live:
        for tag in set(_strings(entry.get("tags"))):
            tag_count[tag] = tag_count.get(tag, 0) + 1
        scopes = set(_scopes(entry))
        for scope in scopes:
            own_count[scope] = own_count.get(scope, 0) + 1
        for prefix in {p for scope in scopes for p in _self_and_parents(scope)}:
            under_count[prefix] = under_count.get(prefix, 0) + 1
    findings = []
    for entry in live:
        entry_id = _id(entry)
        if entry_id in linked or any(tag_count[t] > 1 for t in set(_strings(entry.get("tags")))):
            continue
        if _shares_scope(set(_scopes(entry)), own_count, under_count):
            continue
        findings.append(
            Finding(
                code="isolated",
                ids=[entry_id],
                message=f"{entry_id} shares no tag or scope with another live entry and has no "
                f"links: set related_to (or a shared tag or scope) to the entries it belongs "
                f"with ({_EDIT_HINT})",
            )
        )
    return findings


def _self_and_parents(scope: str) -> list[str]:
    parts = scope.split("/")
    return ["/".join(parts[: n + 1]) for n in range(len(parts))]


def _shares_scope(scopes: set[str], own: dict[str, int], under: dict[str, int]) -> bool:
    # An entry counts itself once in ``under`` for each path at or above its scopes, and once
    # in ``own`` for each of its scopes; anything beyond that is another entry.
    for scope in scopes:
        if under.get(scope, 0) > 1:
            return True  # another entry's scope is this path or inside it
        for parent in _self_and_parents(scope)[:-1]:
            if own.get(parent, 0) > (1 if parent in scopes else 0):
                return True  # another entry's scope holds this path
    return False


def _candidate_pairs(
    term_sets: list[frozenset[str]], frequency: dict[str, int]
) -> list[tuple[int, int]]:
    """Every pair (i < j) of term sets whose Dice reaches :data:`DUPLICATE_TERM_DICE`, exactly,
    without comparing all pairs.

    Order each set's terms rarest first. A pair reaching Dice D shares ``o`` terms with
    ``o >= t = ceil(D * |A| / (2 - D))`` counted from either side A. When ``o >= 2`` its two
    first shared terms (in that order) lie within the first ``|A| - t + 2`` terms of A and of
    B, so the pair shares a *pair of terms* taken from those prefixes: that is the index.
    ``o = 1`` reaches D only when ``|A| + |B| <= 2 / D`` (4 for 0.5): the few sets that small
    are also indexed by single terms and paired among themselves.
    """
    share = DUPLICATE_TERM_DICE / (2 - DUPLICATE_TERM_DICE)
    single = 2 / DUPLICATE_TERM_DICE  # |A| + |B| at most this lets one shared term reach D
    by_pair: dict[tuple[str, str], list[int]] = {}
    by_term: dict[str, list[int]] = {}
    pairs: list[tuple[int, int]] = []
    for position, words in enumerate(term_sets):
        rarest = sorted(words, key=lambda w: (frequency[w], w))
        size = len(rarest)
        need = max(1, math.ceil(share * size))
        prefix = rarest[: min(size, size - need + 2)]
        seen: set[int] = set()
        for i, first in enumerate(prefix):
            for second in prefix[i + 1 :]:
                postings = by_pair.setdefault((first, second), [])
                seen.update(postings)
                postings.append(position)
        if size < single:  # one shared term can reach D only between sets this small
            for word in rarest:
                postings = by_term.setdefault(word, [])
                seen.update(other for other in postings if len(term_sets[other]) + size <= single)
                postings.append(position)
        pairs += [
            (other, position)
            for other in seen
            if 2 * len(term_sets[other] & words)
            >= DUPLICATE_TERM_DICE * (len(term_sets[other]) + size)
        ]
    return pairs


def _duplicates(live: list[Mapping[str, object]]) -> list[Finding]:
    ordered = []
    term_sets = []
    for entry in live:
        words = frozenset(terms(statement(entry)))
        if words:
            ordered.append(entry)
            term_sets.append(words)
    frequency: dict[str, int] = {}
    for words in term_sets:
        for word in words:
            frequency[word] = frequency.get(word, 0) + 1
    pairs = _candidate_pairs(term_sets, frequency)
    findings = []
    for first, second in pairs:
        a, b = ordered[first], ordered[second]
        score = similarity(a, b)
        if score < RESTATEMENT_THRESHOLD or classify(a, b, score) != "likely_restatement":
            continue
        ids = sorted((_id(a), _id(b)))
        findings.append(
            Finding(
                code="likely_duplicate",
                ids=ids,
                message=f"{ids[0]} and {ids[1]} say the same thing (similarity {score:.2f}): "
                f"compare them (`ctxkeeper show {ids[0]}`, `ctxkeeper show {ids[1]}`) and keep "
                "one; retire the other (deprecate_entry with superseded_by) or, if both hold, "
                "reword one to say how they differ",
            )
        )
    findings.sort(key=lambda finding: finding["ids"])
    return findings


# ------------------------------------------------------------------------------- summaries


def count_by_code(findings: Iterable[Finding]) -> dict[str, int]:
    """How many findings of each code, in :data:`CODES` order, codes without any left out."""
    counts = dict.fromkeys(CODES, 0)
    for finding in findings:
        counts[finding["code"]] = counts.get(finding["code"], 0) + 1
    return {code: count for code, count in counts.items() if count}


def _counted(code: str, count: int) -> str:
    one, more = LABELS.get(code, (code, code))
    return f"{count} {one if count == 1 else more}"


def summary_line(findings: Iterable[Finding], *, duplicates: bool = True) -> str | None:
    """One line of counts for the person, None when there is nothing to say.

    :param duplicates: False when the scan skipped the duplicate check (``duplicates_up_to``);
        the line then says that ``doctor --quality`` makes it.
    """
    counts = {
        code: count for code, count in count_by_code(findings).items() if code not in DOCTOR_ONLY
    }
    if not counts:
        return None
    parts = ", ".join(_counted(code, count) for code, count in counts.items())
    also = "" if duplicates else " and checks for likely duplicates"
    return f"quality scan: {parts} (`ctxkeeper doctor --quality` lists them{also})"
