"""Validate the retrieval eval data: evals/corpus/*.jsonl, evals/golden.jsonl and
evals/golden_fresh.jsonl (the cases of the corpora written for issue 13).

Standard library only. Run from anywhere:

    python3 evals/check_corpus.py [--today YYYY-MM-DD]

Prints a summary of counts and exits 1 if any problem is found. "Currently valid" (required for the
expected entries of positive cases) is judged against --today, which defaults to the local date.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

EVALS = Path(__file__).resolve().parent
CORPUS_DIR = EVALS / "corpus"
GOLDEN = EVALS / "golden.jsonl"
GOLDEN_FRESH = EVALS / "golden_fresh.jsonl"

KINDS = ("decision", "constraint", "pipeline")
STATUSES = ("active", "proposed", "superseded", "deprecated", "rejected")
ORIGINS = ("user", "agent")
PREFIX = {"decision": "dec", "constraint": "con", "pipeline": "pip"}
COMMON_KEYS = (
    "id",
    "kind",
    "status",
    "origin",
    "scope",
    "tags",
    "related_to",
    "supersedes",
    "superseded_by",
    "valid_from",
    "valid_until",
    "created_at",
    "updated_at",
    "verified_at",
    "verified_sha",
    "revision",
)
KIND_KEYS = {
    "decision": ("summary", "problem", "why_chosen", "alternatives"),
    "constraint": ("rule", "reason", "hardness"),
    "pipeline": ("name", "purpose", "steps"),
}
# Minimum lengths of the text fields (characters).
FLOORS = {
    "summary": 20,
    "problem": 40,
    "why_chosen": 60,
    "rule": 15,
    "reason": 40,
    "name": 3,
    "purpose": 40,
}
STEP_FLOOR = 10

CASE_KEYS = ("id", "project", "query", "path", "type", "form", "expected", "split", "note")
#: How a query is phrased; see evals/check_balance.py.
FORMS = ("question", "question_no_mark", "problem", "fragment")
CASE_TYPES = ("positive", "no_answer", "hard_negative", "history")
SPLITS = ("dev", "test")

ID_RE = re.compile(r"^(dec|con|pip)-(\d{3})-([0-9a-f]{4})$")
CASE_ID_RE = re.compile(r"^(?:[a-z_]+-)?q\d{3,4}$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
STAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
# Tags are one lowercase word; the model also allows "_" ("btree_gist", "pg_trgm").
TAG_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,29}$")

# Corpus-wide floors from the brief.
MIN_PROJECTS = 5
MIN_ENTRIES = 150
MIN_SUPERSEDED_PAIRS = 12
MIN_CASES = 90
MIN_POSITIVE = 55
MIN_NO_ANSWER_TOTAL = 22  # no_answer + hard_negative
MIN_HARD_NEGATIVE = 11
MIN_HISTORY = 12
# Target kind mix (share of entries) and how far a project-wide mix may drift from it.
KIND_TARGET = {"decision": 0.45, "constraint": 0.35, "pipeline": 0.20}
KIND_TOLERANCE = 0.08

# Anything that looks like a credential, a private key, an address or a link. The data must hold
# none of these, fake or not.
SECRET_PATTERNS = (
    re.compile(r"-----BEGIN [A-Z ]*KEY-----"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\b(?:sk|pk|rk)_(?:live|test)_[0-9A-Za-z]+"),
    re.compile(r"\bgh[pousr]_[0-9A-Za-z]{20,}"),
    re.compile(r"\bxox[abprs]-[0-9A-Za-z-]+"),
    re.compile(r"\beyJ[0-9A-Za-z_-]{10,}"),
    re.compile(r"(?i)\b(?:password|passwd|secret|token|api[_-]?key)\s*[:=]\s*\S+"),
    re.compile(r"\b[0-9a-fA-F]{24,}\b"),
    re.compile(r"\b[0-9A-Za-z+/]{40,}={0,2}"),
    re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"),
    re.compile(r"(?i)\bhttps?://"),
)

# Words ignored when comparing a query with the text of the entry it expects.
STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an the and or of to in on for with is are be it we our do does can i my this that what "
        "how why when should new from by at as not no any all there was were used use",
    )
)


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def bad(self, where: str, msg: str) -> None:
        self.problems.append(f"{where}: {msg}")

    def warn(self, where: str, msg: str) -> None:
        self.warnings.append(f"{where}: {msg}")


Entry = dict[str, object]


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _parse_date(value: str) -> date | None:
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def _parse_stamp(value: str) -> datetime | None:
    if not STAMP_RE.match(value):
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


_PLAIN_PATH = re.compile(r"^[a-z/]+$")


def _scan_secrets(rep: Report, where: str, obj: object) -> None:
    for text in _strings(obj):
        for pat in SECRET_PATTERNS:
            m = pat.search(text)
            # A repository path of plain lowercase words is long but not a key.
            if m and not _PLAIN_PATH.match(m.group(0)):
                rep.bad(where, f"secret-shaped or private-looking text {m.group(0)!r}")


def _read_jsonl(rep: Report, path: Path) -> list[Entry]:
    rows: list[Entry] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            rep.bad(f"{path.name}:{n}", "blank line")
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            rep.bad(f"{path.name}:{n}", f"invalid JSON: {exc}")
            continue
        if not isinstance(obj, dict):
            rep.bad(f"{path.name}:{n}", "line is not a JSON object")
            continue
        rows.append(obj)
    return rows


def _check_entry_shape(rep: Report, where: str, e: Entry) -> None:
    kind = e.get("kind")
    if kind not in KINDS:
        rep.bad(where, f"kind {kind!r} not one of {KINDS}")
        return
    assert isinstance(kind, str)
    expected_keys = set(COMMON_KEYS) | set(KIND_KEYS[kind])
    if set(e) != expected_keys:
        missing = sorted(expected_keys - set(e))
        extra = sorted(set(e) - expected_keys)
        rep.bad(where, f"keys differ: missing {missing}, extra {extra}")
    eid = e.get("id")
    m = ID_RE.match(eid) if isinstance(eid, str) else None
    if m is None:
        rep.bad(where, f"id {eid!r} does not match {ID_RE.pattern}")
    elif m.group(1) != PREFIX[kind]:
        rep.bad(where, f"id prefix {m.group(1)!r} does not match kind {kind!r}")
    if e.get("status") not in STATUSES:
        rep.bad(where, f"status {e.get('status')!r} invalid")
    if e.get("origin") not in ORIGINS:
        rep.bad(where, f"origin {e.get('origin')!r} invalid")
    scope = e.get("scope")
    if not _is_str_list(scope):
        rep.bad(where, "scope must be a list of strings")
    else:
        assert isinstance(scope, list)
        for p in scope:
            if not p or p.startswith(("/", "./")) or ".." in p.split("/"):
                rep.bad(where, f"scope path {p!r} is not repo-relative")
    tags = e.get("tags")
    if not _is_str_list(tags):
        rep.bad(where, "tags must be a list of strings")
    else:
        assert isinstance(tags, list)
        for t in tags:
            if not TAG_RE.match(t):
                rep.bad(where, f"tag {t!r} is not short lowercase")
        if len(set(tags)) != len(tags):
            rep.bad(where, "duplicate tags")
    for key in ("related_to", "supersedes"):
        if not _is_str_list(e.get(key)):
            rep.bad(where, f"{key} must be a list of ids")
    sb = e.get("superseded_by")
    if sb is not None and not isinstance(sb, str):
        rep.bad(where, "superseded_by must be an id or null")
    for key in ("valid_from", "valid_until"):
        v = e.get(key)
        # The model takes a date or a UTC instant for a validity bound.
        if v is not None and not (
            isinstance(v, str)
            and ((DATE_RE.match(v) and _parse_date(v)) or (STAMP_RE.match(v) and _parse_stamp(v)))
        ):
            rep.bad(where, f"{key} {v!r} is not null, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ")
    vf, vu = e.get("valid_from"), e.get("valid_until")
    if isinstance(vf, str) and isinstance(vu, str) and vf > vu:
        rep.bad(where, "valid_from is after valid_until")
    created, updated = e.get("created_at"), e.get("updated_at")
    c = _parse_stamp(created) if isinstance(created, str) else None
    u = _parse_stamp(updated) if isinstance(updated, str) else None
    if c is None:
        rep.bad(where, f"created_at {created!r} is not ISO UTC")
    if u is None:
        rep.bad(where, f"updated_at {updated!r} is not ISO UTC")
    if c is not None and u is not None and u < c:
        rep.bad(where, "updated_at is before created_at")
    if e.get("verified_at") is not None or e.get("verified_sha") is not None:
        rep.bad(where, "verified_at and verified_sha must be null")
    if e.get("revision") != 1:
        rep.bad(where, "revision must be 1")
    for key, floor in FLOORS.items():
        if key in KIND_KEYS[kind]:
            v = e.get(key)
            if not isinstance(v, str) or len(v.strip()) < floor:
                rep.bad(where, f"{key} shorter than {floor} characters")
    if kind == "decision" and not _is_str_list(e.get("alternatives")):
        rep.bad(where, "alternatives must be a list of strings")
    if kind == "constraint" and e.get("hardness") not in ("hard", "soft"):
        rep.bad(where, f"hardness {e.get('hardness')!r} invalid")
    if kind == "pipeline":
        steps = e.get("steps")
        if not _is_str_list(steps) or not steps:
            rep.bad(where, "steps must be a non-empty list of strings")
        else:
            assert isinstance(steps, list)
            for s in steps:
                if len(s.strip()) < STEP_FLOOR:
                    rep.bad(where, f"step shorter than {STEP_FLOOR} characters: {s!r}")
    _scan_secrets(rep, where, e)


def _check_links(rep: Report, project: str, entries: dict[str, Entry]) -> int:
    """Check related/supersession links within one project; return the number of pairs."""
    pairs = 0
    for eid, e in entries.items():
        where = f"{project}/{eid}"
        related = e.get("related_to")
        supersedes = e.get("supersedes")
        for key, ids in (("related_to", related), ("supersedes", supersedes)):
            if not isinstance(ids, list):
                continue
            for other in ids:
                if other == eid:
                    rep.bad(where, f"{key} refers to itself")
                elif other not in entries:
                    rep.bad(where, f"{key} id {other!r} not in project")
        sb = e.get("superseded_by")
        status = e.get("status")
        if (status == "superseded") != (sb is not None):
            rep.bad(where, "status 'superseded' and a non-null superseded_by must go together")
        if isinstance(sb, str):
            new = entries.get(sb)
            if new is None:
                rep.bad(where, f"superseded_by {sb!r} not in project")
            else:
                new_sup = new.get("supersedes")
                if not (isinstance(new_sup, list) and eid in new_sup):
                    rep.bad(where, f"successor {sb} does not list it in supersedes")
                if new.get("kind") != e.get("kind"):
                    rep.bad(where, f"successor {sb} is a different kind")
                if new.get("status") not in ("active", "proposed"):
                    rep.bad(where, f"successor {sb} is not active or proposed")
                if str(new.get("created_at")) < str(e.get("created_at")):
                    rep.bad(where, f"successor {sb} was created before it")
                pairs += 1
        if isinstance(supersedes, list):
            for old in supersedes:
                old_e = entries.get(old)
                if old_e is not None and old_e.get("superseded_by") != eid:
                    rep.bad(where, f"supersedes {old} but {old} has superseded_by != {eid}")
    return pairs


def _date_field(e: Entry, key: str, default: date) -> date:
    value = e.get(key)
    parsed = _parse_date(value[:10]) if isinstance(value, str) else None
    return parsed if parsed is not None else default


def _currently_valid(e: Entry, today: date) -> bool:
    return (
        _date_field(e, "valid_from", date.min) <= today <= _date_field(e, "valid_until", date.max)
    )


def _path_in_scope(path: str, scope: list[str]) -> bool:
    if not scope:
        return True
    for s in scope:
        if path == s or path.startswith(s if s.endswith("/") else s + "/"):
            return True
        if s.startswith(path if path.endswith("/") else path + "/"):
            return True
    return False


def _content_words(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9_]+", text.lower())
    return {w for w in words if w not in STOPWORDS and len(w) > 2}


def _primary_text(e: Entry) -> str:
    for key in ("summary", "rule", "name"):
        v = e.get(key)
        if isinstance(v, str):
            return v
    return ""


def _check_golden(
    rep: Report,
    cases: list[Entry],
    projects: dict[str, dict[str, Entry]],
    today: date,
) -> Counter[tuple[str, str]]:
    seen_ids: set[str] = set()
    seen_queries: set[tuple[str, str]] = set()
    by_type_split: Counter[tuple[str, str]] = Counter()
    for n, c in enumerate(cases, start=1):
        cid = c.get("id")
        where = f"golden:{n}:{cid}"
        if set(c) != set(CASE_KEYS):
            rep.bad(where, f"keys differ from {CASE_KEYS}")
        if not (isinstance(cid, str) and CASE_ID_RE.match(cid)):
            rep.bad(where, "id must look like q001")
        elif cid in seen_ids:
            rep.bad(where, "duplicate case id")
        else:
            seen_ids.add(cid)
        project = c.get("project")
        if not isinstance(project, str) or project not in projects:
            rep.bad(where, f"project {project!r} has no corpus file")
            continue
        entries = projects[project]
        query = c.get("query")
        if not isinstance(query, str) or len(query.strip()) < 5:
            rep.bad(where, "query missing or too short")
            continue
        if (project, query.lower()) in seen_queries:
            rep.bad(where, "duplicate query in project")
        seen_queries.add((project, query.lower()))
        path = c.get("path")
        if path is not None and not (isinstance(path, str) and path and not path.startswith("/")):
            rep.bad(where, "path must be null or a repo-relative path")
        ctype = c.get("type")
        split = c.get("split")
        if ctype not in CASE_TYPES:
            rep.bad(where, f"type {ctype!r} invalid")
            continue
        if ctype != "history" and c.get("form") not in FORMS:
            rep.bad(where, f"form {c.get('form')!r} is not one of {', '.join(FORMS)}")
        if split not in SPLITS:
            rep.bad(where, f"split {split!r} invalid")
        else:
            by_type_split[(str(ctype), str(split))] += 1
        note = c.get("note")
        if not isinstance(note, str) or not note.strip():
            rep.bad(where, "note missing")
        expected = c.get("expected")
        if not _is_str_list(expected):
            rep.bad(where, "expected must be a list of ids")
            continue
        assert isinstance(expected, list)
        if len(set(expected)) != len(expected):
            rep.bad(where, "duplicate ids in expected")
        missing = [x for x in expected if x not in entries]
        if missing:
            rep.bad(where, f"expected ids {missing} not in project {project}")
            continue
        if ctype in ("no_answer", "hard_negative"):
            if expected:
                rep.bad(where, f"{ctype} case must have expected == []")
        elif not expected:
            rep.bad(where, f"{ctype} case needs at least one expected id")
        elif ctype == "positive":
            for x in expected:
                e = entries[x]
                if e.get("status") not in ("active", "proposed"):
                    rep.bad(where, f"positive expects {x} with status {e.get('status')!r}")
                if not _currently_valid(e, today):
                    rep.bad(where, f"positive expects {x}, which is not valid on {today}")
            first = entries[expected[0]]
            scope = first.get("scope")
            if (
                isinstance(path, str)
                and isinstance(scope, list)
                and not _path_in_scope(path, scope)
            ):
                rep.bad(where, f"path {path!r} is outside the scope of {expected[0]}")
            overlap = _content_words(query) & _content_words(_primary_text(first))
            qwords = _content_words(query)
            if qwords and len(overlap) / len(qwords) > 0.75:
                rep.warn(
                    where, f"query reads like a paraphrase of {expected[0]} ({sorted(overlap)})"
                )
        else:  # history
            first = entries[expected[0]]
            if first.get("status") not in ("superseded", "deprecated"):
                rep.bad(
                    where,
                    f"history case must start with a superseded/deprecated entry, not {first['id']}",
                )
            sb = first.get("superseded_by")
            if isinstance(sb, str) and (len(expected) < 2 or expected[1] != sb):
                rep.bad(where, f"history case should list successor {sb} second")
        _scan_secrets(rep, where, c)
    return by_type_split


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--today", type=date.fromisoformat, default=date.today())
    args = parser.parse_args(argv)
    today: date = args.today
    rep = Report()

    files = sorted(CORPUS_DIR.glob("*.jsonl"))
    projects: dict[str, dict[str, Entry]] = {}
    all_ids: set[str] = set()
    all_hex: dict[str, str] = {}
    total_pairs = 0
    kinds: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    print(f"{'project':<18}{'entries':>8}{'dec':>5}{'con':>5}{'pip':>5}  statuses")
    for path in files:
        project = path.stem
        entries: dict[str, Entry] = {}
        for i, e in enumerate(_read_jsonl(rep, path), start=1):
            where = f"{path.name}:{i}:{e.get('id')}"
            _check_entry_shape(rep, where, e)
            eid = e.get("id")
            if not isinstance(eid, str):
                continue
            if eid in all_ids:
                rep.bad(where, "id is not unique across projects")
            all_ids.add(eid)
            m = ID_RE.match(eid)
            if m:
                other = all_hex.get(m.group(3))
                if other is not None:
                    rep.bad(where, f"hex suffix already used by {other}")
                all_hex[m.group(3)] = eid
            entries[eid] = e
        projects[project] = entries
        pairs = _check_links(rep, project, entries)
        total_pairs += pairs
        pk = Counter(str(e.get("kind")) for e in entries.values())
        ps = Counter(str(e.get("status")) for e in entries.values())
        kinds.update(pk)
        statuses.update(ps)
        vals = list(entries.values())
        expired = sum(1 for e in vals if _date_field(e, "valid_until", date.max) < today)
        future = sum(1 for e in vals if _date_field(e, "valid_from", date.min) > today)
        windowed = sum(1 for e in vals if e.get("valid_from") or e.get("valid_until"))
        deprecated_con = sum(
            1 for e in vals if e.get("kind") == "constraint" and e.get("status") == "deprecated"
        )
        for label, count, floor in (
            ("superseded->successor pairs", pairs, 2),
            ("deprecated constraints", deprecated_con, 1),
            ("proposed entries", ps["proposed"], 2),
            ("entries with a validity window", windowed, 2),
        ):
            if count < floor:
                rep.bad(project, f"{count} {label}, need at least {floor}")
        status_text = ", ".join(f"{s} {ps[s]}" for s in STATUSES if ps[s])
        print(
            f"{project:<18}{len(entries):>8}{pk['decision']:>5}{pk['constraint']:>5}"
            f"{pk['pipeline']:>5}  {status_text}; pairs {pairs}, expired {expired}, future {future}"
        )

    total = sum(len(v) for v in projects.values())
    print(
        f"{'total':<18}{total:>8}{kinds['decision']:>5}{kinds['constraint']:>5}{kinds['pipeline']:>5}"
    )
    print("statuses: " + ", ".join(f"{s} {statuses[s]}" for s in STATUSES))
    print(f"superseded->successor pairs: {total_pairs}")
    if len(projects) < MIN_PROJECTS:
        rep.bad("corpus", f"{len(projects)} projects, need at least {MIN_PROJECTS}")
    if total < MIN_ENTRIES:
        rep.bad("corpus", f"{total} entries, need at least {MIN_ENTRIES}")
    if total_pairs < MIN_SUPERSEDED_PAIRS:
        rep.bad("corpus", f"{total_pairs} superseded pairs, need at least {MIN_SUPERSEDED_PAIRS}")
    for kind, share in KIND_TARGET.items():
        actual = kinds[kind] / total if total else 0.0
        if abs(actual - share) > KIND_TOLERANCE:
            rep.bad("corpus", f"{kind} share {actual:.0%} is far from the {share:.0%} target")

    cases = _read_jsonl(rep, GOLDEN) if GOLDEN.exists() else []
    if GOLDEN_FRESH.exists():
        cases += _read_jsonl(rep, GOLDEN_FRESH)
    if not GOLDEN.exists():
        rep.bad("golden", f"{GOLDEN} missing")
    by_type_split = _check_golden(rep, cases, projects, today)
    per_type = Counter[str]()
    for (ctype, _split), n in by_type_split.items():
        per_type[ctype] += n
    print(f"cases: {len(cases)}")
    for ctype in CASE_TYPES:
        dev, test = by_type_split[(ctype, "dev")], by_type_split[(ctype, "test")]
        print(f"  {ctype:<14}{per_type[ctype]:>4}  dev {dev:>3}  test {test:>3}")
        if abs(dev - test) > 1:
            rep.bad("golden", f"{ctype} split is unbalanced (dev {dev}, test {test})")
    per_project = Counter(str(c.get("project")) for c in cases)
    print("cases per project: " + ", ".join(f"{p} {per_project[p]}" for p in sorted(projects)))
    for p in projects:
        if per_project[p] == 0:
            rep.bad("golden", f"project {p} has no cases")
    if len(cases) < MIN_CASES:
        rep.bad("golden", f"{len(cases)} cases, need at least {MIN_CASES}")
    if per_type["positive"] < MIN_POSITIVE:
        rep.bad("golden", f"{per_type['positive']} positive cases, need {MIN_POSITIVE}")
    if per_type["no_answer"] + per_type["hard_negative"] < MIN_NO_ANSWER_TOTAL:
        rep.bad("golden", f"fewer than {MIN_NO_ANSWER_TOTAL} no-answer cases")
    if per_type["hard_negative"] < MIN_HARD_NEGATIVE:
        rep.bad("golden", f"{per_type['hard_negative']} hard negatives, need {MIN_HARD_NEGATIVE}")
    if per_type["history"] < MIN_HISTORY:
        rep.bad("golden", f"{per_type['history']} history cases, need {MIN_HISTORY}")

    for w in rep.warnings:
        print(f"warning: {w}")
    for p in rep.problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    if rep.problems:
        print(f"{len(rep.problems)} problem(s)", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
