"""``get_context``: ranked retrieval that fills a token budget and says when it does not know."""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Final

from ctxkeeper import __version__
from ctxkeeper.core import times
from ctxkeeper.core.errors import UsageError
from ctxkeeper.core.model import KINDS, LIVE_STATUSES
from ctxkeeper.core.scope import covers, relative_path, specificity
from ctxkeeper.core.store import CACHE_DIR
from ctxkeeper.core.text import terms
from ctxkeeper.read import coverage, textindex
from ctxkeeper.read.render import one_line
from ctxkeeper.read.textindex import TextIndex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.store import State, Store

#: Below this relevance (read/coverage.py) the best match is not trusted to answer the query.
#: Picked by evals/run_evals.py on all ten eval projects, at the in-sample level whose
#: leave-one-project-out false abstention stays within 5% (a wrong "nothing here" costs more
#: than a flagged weak answer); `run_evals.py --gate` fails when it goes stale.
RELEVANCE_FLOOR: Final = 0.225  # dec-022-0644 (picked leave-one-project-out)
#: The same floor for a best match that has ``asked_as`` phrasings: they add words, so they lift
#: the coverage of a near miss as well as of an answer, and the floor picked the same way on the
#: projects' phrasings is higher (evals/asked_as_study.py). Stores grow phrasings entry by
#: entry, so the floor follows the entry, not the store.
ASKED_AS_FLOOR: Final = 0.255  # dec-031-b182
#: Between RELEVANCE_FLOOR and this, the best match is labelled ``weak_match``: related, but it
#: may not answer the question. The floor below which a quarter of answerable eval questions fall.
WEAK_FLOOR: Final = 0.4
DEFAULT_BUDGET: Final = 4000
MAX_RESULTS: Final = 20
ABSTAIN_MODES: Final = ("include", "withhold")
_TAG_BOOST: Final = 2.0
_SCOPE_BOOST: Final = 1.5
_RELATED_SHARE: Final = 0.5


@dataclass(frozen=True)
class ContextQuery:
    """The arguments of ``get_context`` after validation."""

    query: str = ""
    tags: tuple[str, ...] = ()
    path: str | None = None
    kinds: tuple[str, ...] = ()
    token_budget: int = DEFAULT_BUDGET
    as_of: datetime | None = None
    include_history: bool = False
    abstain: str = "include"


def parse_query(arguments: Mapping[str, object]) -> ContextQuery:
    """Validate ``get_context`` arguments (the MCP schema already checked their types)."""
    kinds = tuple(str(k) for k in _list(arguments.get("kinds")))
    for kind in kinds:
        if kind not in KINDS:
            raise UsageError(f"kinds: {kind!r} is not one of {', '.join(KINDS)}")
    budget = arguments.get("token_budget", DEFAULT_BUDGET)
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 100:
        raise UsageError("token_budget must be an integer of at least 100")
    abstain = str(arguments.get("abstain", "include"))
    if abstain not in ABSTAIN_MODES:
        raise UsageError(f"abstain must be one of {', '.join(ABSTAIN_MODES)}")
    as_of = arguments.get("as_of")
    return ContextQuery(
        query=str(arguments.get("query") or ""),
        tags=tuple(str(t).lower() for t in _list(arguments.get("tags"))),
        path=str(arguments["path"]) if arguments.get("path") else None,
        kinds=kinds,
        token_budget=budget,
        as_of=times.parse_optional_time(as_of, field="as_of"),
        include_history=bool(arguments.get("include_history", False)),
        abstain=abstain,
    )


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else []


class _IndexCache:
    """The text index of the last store state seen, and the entries by document number.

    ``Store.load`` hands back the same :class:`State` object while ``entries.json`` is
    unchanged on disk and a new one after any write or hand edit, so identity is the key. A
    new state that differs in a few entries updates the index; stored entries are replaced
    on change, never changed in place, so an entry object seen before is indexed right.
    """

    def __init__(self) -> None:
        self.state: State | None = None
        self.warm = False
        """An index was made in this process: later ones follow writes and are not saved."""
        self.entries: list[JSONObject | None] = []
        """Each document's entry (None: a document an update removed)."""
        self.index = TextIndex()
        self.builder = ""
        """:func:`_builder` when the index was made: an index weighted otherwise is not followed."""

    def get(
        self, state: State, cache_dir: str | None = None
    ) -> tuple[list[JSONObject | None], TextIndex]:
        if self.builder != _builder():
            self.state, self.builder = None, _builder()
        if state is not self.state and not self._follow(state):
            # Let the old index go first: a server holds one index at a time, not two.
            self.index, self.state = TextIndex(), None
            entries = [state.entries[k] for k in sorted(state.entries)]
            key = state_key(state)
            if cache_dir is None or key is None:
                self.index = TextIndex.build(entries)
            else:
                # A cold process reads the index a previous one left (rebuilt when stale);
                # a warm one that saw the store change rebuilds in memory, writing nothing.
                save = not self.warm
                self.index = textindex.load_or_build(entries, cache_dir, key, save=save)
            self.entries = list(entries)
            self.state, self.warm = state, True
        return self.entries, self.index

    def _follow(self, state: State) -> bool:
        """Bring the index from the last state to ``state`` when few entries differ."""
        if self.state is None:
            return False
        new = state.entries
        removed: list[tuple[int, JSONObject]] = []
        for doc, entry in enumerate(self.entries):
            if entry is not None and new.get(str(entry.get("id"))) is not entry:
                removed.append((doc, entry))
        fresh = sorted(
            {str(e.get("id")) for _, e in removed} | (new.keys() - self.state.entries.keys())
        )
        added = [new[key] for key in fresh if key in new]
        limit = max(_FOLLOW_MOST, len(new) // 8)
        if len(removed) + len(added) > limit or len(self.index.removed) + len(removed) > limit:
            return False  # many changes, or many holes: a fresh build costs about as much
        try:
            self.index.update(removed, added)
        except (ValueError, KeyError):
            self.state = None
            return False  # not the index these entries were added to: rebuild it
        for doc, _ in removed:
            self.entries[doc] = None
        self.entries.extend(added)
        self.state = state
        return True


def state_key(state: State) -> str | None:
    """What the text index of a store state depends on: the code that builds it (ctxkeeper's
    version and the field weights: an upgrade must not serve an index the old code built),
    the entry file's bytes (by digest), the journal records folded over them, and which
    entries were left out as malformed."""
    if not state.source:
        return None
    skipped = ",".join(sorted(state.skipped))
    return f"{_builder()}:{state.source}:{state.seq}:{state.head}:{len(state.entries)}:{skipped}"


def _builder() -> str:
    """What built an index: this version and the field weights (the kinds registered)."""
    return _builder_of(tuple(sorted(textindex.FIELD_WEIGHTS.items())))


@functools.lru_cache(maxsize=4)
def _builder_of(weights: tuple[tuple[str, float], ...]) -> str:
    text = f"{__version__}{list(weights)}{textindex.CACHE_VERSION}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


#: Changes an index follows (or a store's eighth, when more) before a rebuild is cheaper.
_FOLLOW_MOST: Final = 64
_CACHE = _IndexCache()


def get_context(store: Store, arguments: Mapping[str, object]) -> JSONObject:
    """Rank entries for a query, a file path and tags; see DESIGN.md ``get_context``."""
    request = parse_query(arguments)
    try:
        entries, index = _CACHE.get(store.load(), store.path(CACHE_DIR))
        return rank(entries, index, request, root=store.root)
    except textindex.IndexCacheError:
        # The index read from disk turned out bad on a term this query touched: rebuild.
        _CACHE.state = None
        entries, index = _CACHE.get(store.load())  # no cache_dir: built in memory
        return rank(entries, index, request, root=store.root)


def rank(
    entries: Sequence[JSONObject | None], index: TextIndex, request: ContextQuery, *, root: str
) -> JSONObject:
    """The ranking proper, separate from the store so evals and benchmarks can drive it:
    score the matches, measure each one's relevance, band the answer by the best relevance
    (confident, weak or none), and fill the token budget.

    :param entries: each document's entry, as the index numbers them (None: removed).
    """
    instant = request.as_of or times.now()
    by_id = {str(e["id"]): e for e in entries if e is not None}
    query_terms = terms(coverage.normalise_query(request.query))
    asked = coverage.query_terms(request.query, index) if query_terms else []
    scored, structural = _score(entries, index, request, query_terms, root=root, at=instant)
    ranked = _follow(scored, by_id, request, instant)
    rows = _relevance(ranked, structural, by_id, index, asked, by_text=bool(query_terms))
    band = _band(rows, by_id, request, asked, index)
    result = _fill_budget(rows, by_id, request, band)
    result["weak_match"] = band.name == "weak"
    result["missing"] = band.missing
    result["unmentioned"] = band.unmentioned
    result["common_words_only"] = band.common_only
    return result


_Scored = tuple[float, str, float]
_Row = tuple[str, float, float, "coverage.Match"]


def _score(
    entries: Sequence[JSONObject | None],
    index: TextIndex,
    request: ContextQuery,
    query_terms: list[str],
    *,
    root: str,
    at: datetime,
) -> tuple[dict[str, _Scored], dict[str, float]]:
    """Each matching entry's score (text, tags, scope, nudged by status, origin and age), with
    itself as the source of its relevance; and its structural relevance (tags or scope)."""
    rel_path = relative_path(request.path, root) if request.path else None
    text_scores = index.score_terms(query_terms)[0] if query_terms else {}
    # id -> (score, the entry whose coverage of the query is its relevance, share of it).
    scored: dict[str, _Scored] = {}
    structural: dict[str, float] = {}
    # Without tags or a path, only entries the text matched can score: skip the rest before
    # the validity check, which would otherwise run over the whole store for every query.
    text_only = not request.tags and rel_path is None
    for doc, entry in enumerate(entries):
        if entry is None:
            continue
        text = text_scores.get(doc, 0.0)
        if text_only and text <= 0:
            continue
        if not _eligible(entry, request, at):
            continue
        tag_hits = len(set(request.tags) & {str(t) for t in _list(entry.get("tags"))})
        scopes = [str(s) for s in _list(entry.get("scope"))]
        # dec-004-3b48: only an explicit scope ties an entry to a file; project-wide entries are reached
        # through the query or tags, or every path would return all of them.
        covered = bool(scopes) and rel_path is not None and covers(scopes, rel_path)
        if text <= 0 and not tag_hits and not covered:
            continue
        score = text + _TAG_BOOST * tag_hits
        if covered and rel_path is not None:
            # Narrower scopes say more about this file than project-wide ones.
            score += _SCOPE_BOOST * (1.0 + min(specificity(scopes, rel_path), 4) / 4)
        score *= _secondary(entry, at)
        entry_id = str(entry["id"])
        scored[entry_id] = (score, entry_id, 1.0)
        structural[entry_id] = _structural_relevance(tag_hits, covered)
    return scored, structural


def _follow(
    scored: dict[str, _Scored],
    by_id: Mapping[str, JSONObject],
    request: ContextQuery,
    instant: datetime,
) -> list[tuple[str, _Scored]]:
    """The matches with what they bring along (related entries, history links), best first,
    at most :data:`MAX_RESULTS`."""
    _follow_related(scored, by_id, request, instant)
    if request.include_history:
        _add_history_links(scored, by_id, request, instant)
    return sorted(scored.items(), key=lambda item: (-item[1][0], item[0]))[:MAX_RESULTS]


def _relevance(
    ranked: list[tuple[str, _Scored]],
    structural: Mapping[str, float],
    by_id: Mapping[str, JSONObject],
    index: TextIndex,
    asked: list[coverage.QueryTerm],
    *,
    by_text: bool,
) -> list[_Row]:
    """Each ranked entry's relevance: its source's coverage of the query (read/coverage.py)
    times the share it inherits, or, without query text, the structural relevance."""
    matches: dict[str, coverage.Match] = {}
    rows: list[_Row] = []
    for entry_id, (score, source, share) in ranked:
        if by_text:
            if source not in matches:
                matches[source] = coverage.match(by_id[source], asked, index)
            relevance = matches[source].relevance * share
            own = matches.get(entry_id) or coverage.match(by_id[entry_id], asked, index)
            matches[entry_id] = own
        else:
            relevance = structural.get(source, 0.0) * share
            own = coverage.Match(relevance, (), ())
        rows.append((entry_id, score, relevance, own))
    return rows


@dataclass(frozen=True)
class _Band:
    """How far the best match answers the query, and what it leaves out."""

    top: float
    name: str
    """``none`` (below :data:`RELEVANCE_FLOOR`, or :data:`ASKED_AS_FLOOR`), ``weak`` (below
    :data:`WEAK_FLOOR`) or ``confident``."""
    withhold: bool
    missing: list[JSONValue]
    unmentioned: list[JSONValue]
    common_only: list[JSONValue]
    """The words the best match shares with the query when none of them is distinctive (it
    covers the question only through words many entries hold): the reading model's cue to
    judge the answer, which the floor cannot (issue 26). Empty otherwise."""


def _band(
    rows: list[_Row],
    by_id: Mapping[str, JSONObject],
    request: ContextQuery,
    asked: list[coverage.QueryTerm],
    index: TextIndex,
) -> _Band:
    top = max((row[2] for row in rows), default=0.0)
    best = max(rows, key=lambda row: row[2], default=None)
    missing: list[JSONValue] = list(best[3].missing) if best is not None else []
    unmentioned: list[JSONValue] = list(
        coverage.unmentioned(tuple(str(w) for w in missing), asked, index)
    )
    floor = RELEVANCE_FLOOR
    if best is not None and by_id.get(best[0], {}).get("asked_as"):
        floor = ASKED_AS_FLOOR
    name = "none" if top < floor else ("weak" if top < WEAK_FLOOR else "confident")
    withhold = name == "none" and request.abstain == "withhold"
    matched = set(best[3].matched) if best is not None else set()
    distinctive = any(item.distinctive for item in asked if item.word in matched)
    common_only: list[JSONValue] = (
        [item.word for item in asked if item.word in matched] if matched and not distinctive else []
    )
    return _Band(top, name, withhold, missing, unmentioned, common_only)


def _eligible(entry: Mapping[str, JSONValue], request: ContextQuery, instant: datetime) -> bool:
    if request.kinds and entry.get("kind") not in request.kinds:
        return False
    if request.include_history:
        return True
    return entry.get("status") in LIVE_STATUSES and times.is_valid_at(entry, instant)


def _structural_relevance(tag_hits: int, covered: bool) -> float:
    # Without query text, a tag or scope match is the whole question, so it is confident.
    return 1.0 if tag_hits or covered else 0.0


def _secondary(entry: Mapping[str, JSONValue], instant: datetime) -> float:
    """Status, origin and recency nudge the order among matches; they never create a match."""
    factor = {"active": 1.0, "proposed": 0.85}.get(str(entry.get("status")), 0.6)
    if entry.get("origin") == "user":
        factor *= 1.05
    updated = times.parse_stored_bound(entry.get("updated_at"), end_of_day=False)
    if updated is not None:
        age_days = max((instant - updated).days, 0)
        factor *= 1.0 + 0.1 * math.exp(-age_days / 180)
    return factor


def _follow_related(
    scored: dict[str, _Scored],
    by_id: Mapping[str, JSONObject],
    request: ContextQuery,
    instant: datetime,
) -> None:
    """One hop along ``related_to``: a strong match brings its related entries along."""
    for entry_id, (score, source, share) in list(scored.items()):
        for related in _list(by_id[entry_id].get("related_to")):
            other = by_id.get(str(related))
            if other is None or str(related) in scored or not _eligible(other, request, instant):
                continue
            scored[str(related)] = (score * _RELATED_SHARE, source, share * _RELATED_SHARE)


def _add_history_links(
    scored: dict[str, _Scored],
    by_id: Mapping[str, JSONObject],
    request: ContextQuery,
    instant: datetime,
) -> None:
    """History questions need both ends of a supersession: bring the other end along."""
    for entry_id, (score, source, share) in list(scored.items()):
        entry = by_id[entry_id]
        linked = [entry.get("superseded_by"), *_list(entry.get("supersedes"))]
        for other_id in linked:
            known = isinstance(other_id, str) and other_id in by_id and other_id not in scored
            if known and _eligible(by_id[str(other_id)], request, instant):
                scored[str(other_id)] = (score * 0.9, source, share)


def _label(entry: Mapping[str, JSONValue], by_id: Mapping[str, JSONObject]) -> JSONObject:
    status = entry.get("status")
    info: JSONObject = {}
    if status == "proposed":
        info["label"] = "unreviewed: proposed by an agent, not yet approved by a person"
    elif status == "superseded":
        successor = by_id.get(str(entry.get("superseded_by")))
        info["label"] = "superseded: history, not current practice"
        info["successor"] = (
            {"id": successor["id"], "line": one_line(successor)} if successor else None
        )
    elif status in ("deprecated", "rejected"):
        info["label"] = (
            f"tombstone ({status}): {entry.get('status_reason') or 'no reason recorded'}"
        )
    return info


def _cost(item: JSONValue) -> int:
    """Tokens an item costs the caller, estimated as characters / 4."""
    return len(json.dumps(item, ensure_ascii=False)) // 4 + 1


def _fill_budget(
    rows: list[_Row], by_id: Mapping[str, JSONObject], request: ContextQuery, band: _Band
) -> JSONObject:
    """The rows, best first, that fit the token budget (pointers only when withheld)."""
    withhold = band.withhold
    results: list[JSONValue] = []
    dropped: list[JSONValue] = []
    spent = 0
    for entry_id, score, relevance, own in rows:
        entry = by_id[entry_id]
        item: JSONObject = {
            "id": entry_id,
            "kind": entry["kind"],
            "status": entry["status"],
            "score": round(score, 4),
            "relevance": round(relevance, 4),
            "matched_terms": list(own.matched),
            "missing_terms": list(own.missing),
            **_label(entry, by_id),
        }
        if withhold:
            item["line"] = one_line(entry)
        else:
            item["entry"] = entry
        cost = _cost(item)
        if spent + cost > request.token_budget:
            dropped.append(entry_id)
            continue
        spent += cost
        results.append(item)
    return {
        "results": results,
        "top_relevance": round(band.top, 4),
        "no_confident_match": band.name == "none",
        "withheld": withhold,
        "budget_truncated": bool(dropped),
        "dropped_ids": dropped,
        "tokens_used": spent,
    }
