"""The ``ctxkeeper`` command line: a thin door that parses argv and renders the verbs' results."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import textwrap
from typing import NoReturn, cast

from ctxkeeper import __version__
from ctxkeeper.cli import driftcli, fieldflags, personedits, team, term, views
from ctxkeeper.core.errors import (
    BelowFloorError,
    CtxkeeperError,
    SecretDetectedError,
    StaleVerdictError,
    UsageError,
    ValidationError,
)
from ctxkeeper.core.model import EDITABLE_FIELDS, KINDS, STATUSES, kind_spec
from ctxkeeper.read import render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ctxkeeper.cli.review import Plan
    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.store import Store

#: Verbs only a person at a terminal may run (DESIGN.md, "Review policy").
HUMAN_VERBS = ("approve", "reject", "lift", "purge", "edit", "deprecate")


class _Args(argparse.Namespace):
    command: str
    project_dir: str | None
    json: bool
    no_color: bool
    kind: str
    ids: list[str]
    id: str
    reason: str | None
    statuses: list[str] | None
    kinds: list[str] | None
    repair: bool
    quality: bool
    query: str
    path: str | None
    budget: int
    include_history: bool
    git: bool


class _FailureError(Exception):
    """An error already worded for the terminal, with its exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _fail(message: str, status: int = 1) -> NoReturn:
    raise _FailureError(message, status)


#: Exit status of a write refused for its content, not its form (DESIGN.md, "CLI").
_REFUSED = (BelowFloorError, SecretDetectedError)
#: Exit status when stdout is a pipe whose reader has gone: what a shell reports for a
#: program killed by SIGPIPE (128 + 13), which is how ``cat`` or ``grep`` end in ``| head``.
_BROKEN_PIPE_STATUS = 141
_DEBUG_VARIABLE = "CTXKEEPER_DEBUG"


def _add_common_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    parser.add_argument(
        "--project-dir",
        default=argparse.SUPPRESS if suppress else None,
        help="project root (default: CLAUDE_PROJECT_DIR, git top-level, or cwd)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="print machine-readable JSON",
    )
    parser.add_argument(
        "--no-color",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="no colour even on a terminal (NO_COLOR=1 does the same)",
    )


class _UsageExit(SystemExit):
    """argparse's exit on a usage error (status 2), carrying the message it printed."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors that say where to look next."""

    def error(self, message: str) -> NoReturn:
        # argparse quotes some values with repr and others raw ("unrecognized arguments").
        text = f"{_shown(message)} (see `{self.prog} --help`)"
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {text}\n")
        raise _UsageExit(text)


class _KindHelp(argparse.Action):
    """``add KIND --help``: that kind's fields alone, each with its floor and whether it is
    required; ``add --help`` (no kind yet): every field."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: str) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, help=kwargs.get("help"))

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        kind = getattr(namespace, "kind", None)
        if kind not in KINDS:
            parser.print_help()
            parser.exit()
        spec = kind_spec(str(kind))
        example = spec.example
        shown = _Parser(
            prog=f"{parser.prog} {kind}",
            description=spec.about or f"Record a {kind}.",
            epilog=fieldflags.FLOORS_NOTE + (f"\n\nexample:\n  {example}" if example else ""),
            formatter_class=_DescribedFormatter,
            add_help=False,
        )
        fieldflags.add_flags(shown, kind=str(kind))
        _add_common_options(shown, suppress=False)
        shown.print_help()
        parser.exit()


class _DescribedFormatter(argparse.HelpFormatter):
    """Wraps the description like argparse, but keeps the epilog's example on lines of its
    own so it can be copied."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(
            super(_DescribedFormatter, self)._fill_text(part, width, indent)
            if not part.startswith("  ")
            else part
            for part in text.split("\n")
        )


def _parser() -> argparse.ArgumentParser:
    # The options are accepted before the verb and after it. After it they are added with
    # SUPPRESS defaults, so a verb that was not given them leaves the value from before the
    # verb in place, and one that was given them wins.
    common = _Parser(add_help=False)
    _add_common_options(common, suppress=True)
    parser = _Parser(
        prog="ctxkeeper",
        description="Typed project memory for coding agents: decisions, constraints, pipelines.",
    )
    parser.add_argument("--version", action="version", version=f"ctxkeeper {__version__}")
    _add_common_options(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="VERB")

    init = sub.add_parser(
        "init",
        parents=[common],
        help="create .context/ with config.json and .gitignore",
        description="Create the store in .context/ at the project root: config.json (shared "
        "settings) and a .gitignore that keeps this machine's working store out of git. It "
        "says what to commit and what to do next; running it again changes nothing.",
    )
    init.add_argument(
        "--git",
        action="store_true",
        help="also register ctxkeeper's snapshot merge driver in this clone's git config",
    )
    add = sub.add_parser(
        "add",
        parents=[common],
        add_help=False,
        help="record an entry (a person's is active; under an agent, a proposal)",
        description="Record a decision, constraint or pipeline. `ctxkeeper add KIND --help` "
        "lists that kind's fields, which are required, and their floors.",
        epilog=fieldflags.FLOORS_NOTE,
    )
    add.add_argument(
        "-h", "--help", action=_KindHelp, help="show the fields of KIND (or of every kind)"
    )
    add.add_argument("kind", choices=KINDS, metavar="KIND", help="decision, constraint or pipeline")
    fieldflags.add_flags(add)

    listing = sub.add_parser("list", parents=[common], help="list entries")
    listing.add_argument("--kind", dest="kinds", action="append", choices=KINDS)
    listing.add_argument("--status", dest="statuses", action="append", choices=STATUSES)
    for verb, text in (("show", "show one entry"), ("history", "show an entry's revisions")):
        sub.add_parser(verb, parents=[common], help=text).add_argument("id")
    search = sub.add_parser("search", parents=[common], help="ranked search (get_context)")
    search.add_argument("query", nargs="?", default="")
    search.add_argument("--path", help="a file you are about to change")
    search.add_argument("--kind", dest="kinds", action="append", choices=KINDS)
    search.add_argument("--budget", type=int, default=4000, help="token budget (default 4000)")
    search.add_argument("--include-history", action="store_true")
    sub.add_parser("status", parents=[common], help="counts, pending reviews")
    sub.add_parser(
        "review",
        parents=[common],
        help="decide what awaits review, one item at a time (terminal only; --json lists it)",
    )
    doctor = sub.add_parser("doctor", parents=[common], help="verify journal and entries")
    doctor.add_argument(
        "--repair", action="store_true", help="rebuild a corrupt entries.json from the journal"
    )
    doctor.add_argument(
        "--quality",
        action="store_true",
        help="list advice on thin, untagged, isolated, duplicate or expired entries (read-only)",
    )

    for verb, text in (
        ("approve", "approve proposed entries"),
        ("reject", "reject proposed entries"),
    ):
        human = sub.add_parser(verb, parents=[common], help=text + " (terminal only)")
        human.add_argument("ids", nargs="+", metavar="ID")
        human.add_argument("--reason", required=verb == "reject")
    lift = sub.add_parser("lift", parents=[common], help="lift a tombstone (terminal only)")
    lift.add_argument("id")
    lift.add_argument("--reason")
    purge = sub.add_parser("purge", parents=[common], help="remove an entry (terminal only)")
    purge.add_argument("id")
    purge.add_argument("--reason", required=True)

    # The verbs' parsers are _Parser too (argparse makes them of the parent's class).
    team.add_parsers(cast("argparse._SubParsersAction[argparse.ArgumentParser]", sub), common)
    personedits.add_parsers(
        cast("argparse._SubParsersAction[argparse.ArgumentParser]", sub), common
    )
    driftcli.add_parsers(cast("argparse._SubParsersAction[argparse.ArgumentParser]", sub), common)
    sub.add_parser(
        "demo",
        parents=[common],
        help="walk through ctxkeeper on a sample store",
        description="Walk through ctxkeeper on a sample store in a temporary folder (your "
        "project is not touched): a thin entry refused, the first edit of a governed file held "
        "back with the exact text the agent reads, an agent's change waiting for a person, "
        "review, tombstones, knowing when nothing stored answers, and team sharing.",
    )
    sub.add_parser("serve", parents=[common], help="run the MCP stdio server")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb; return the exit status (0 ok, 1 refused or failed, 2 usage).

    Every failure is one line on stderr; a traceback only with ``CTXKEEPER_DEBUG=1``.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    undecodable = _undecodable_argument(arguments)
    if undecodable:
        print(f"ctxkeeper: {undecodable}", file=sys.stderr)
        return 2
    try:
        args = _parser().parse_args(arguments, _Args())
    except _UsageExit as usage:
        # A script that asked for JSON reads stdout: it gets the error there too, as for
        # every other failure (_report_error), not only text on stderr.
        if "--json" in arguments:
            print(json.dumps({"error": "usage", "message": usage.message}), flush=True)
        raise
    try:
        status = _HANDLERS[args.command](args)
        # Written here, a closed pipe is caught below rather than at interpreter exit. With
        # fd 1 closed at start-up (`>&-`) there is no sys.stdout and print() discards.
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _drop_stdout()
        return _BROKEN_PIPE_STATUS
    except _FailureError as failure:
        return _report_error(args, "error", str(failure), failure.status)
    except CtxkeeperError as exc:
        return _report_error(args, exc.code, str(exc), _exit_status(exc))
    except KeyboardInterrupt:
        message = "interrupted; nothing was written (run the command again to finish it)"
        return _report_error(args, "interrupted", message, 1)
    except EOFError:
        if _interactive():
            print(file=sys.stderr)  # end the prompt's line
        message = (
            "end of input; nothing was written (answer the prompt, or pass what it asks as "
            f"options: see `ctxkeeper {args.command} --help`)"
        )
        return _report_error(args, "end_of_input", message, 1)
    except OSError as exc:
        message = _os_failure(f"cannot {args.command}", exc) + _os_hint(exc)
        return _report_error(args, "os_error", message, 1)
    except Exception as exc:  # noqa: BLE001  # the last resort: one line, the traceback on demand
        _debug_traceback()
        message = (
            f"this is a bug in ctxkeeper: {type(exc).__name__}: {exc} "
            f"(set {_DEBUG_VARIABLE}=1 to see the traceback, and please report it)"
        )
        return _report_error(args, "internal_error", message, 1)
    return status


def _undecodable_argument(arguments: list[str]) -> str | None:
    # Python hands bytes that are not UTF-8 over as lone surrogates (PEP 383); no store file
    # or terminal line could hold them, so they are refused before anything runs.
    for position, argument in enumerate(arguments, start=1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            shown = argument.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return f"argument {position} ({shown!r}) is not valid UTF-8; pass UTF-8 text"
    return None


# con-009-df39: malformed request 2, refusal 1.
def _exit_status(exc: CtxkeeperError) -> int:
    """2 for a request malformed in itself (an unknown or missing field, a value outside a
    closed vocabulary, a bad id or time); 1 for one refused for its content or the store's
    state (a floor, a secret, a tombstone, a frozen entry, no such entry, a broken store)."""
    if isinstance(exc, _REFUSED):
        return 1
    return 2 if isinstance(exc, (UsageError, ValidationError)) else 1


def _os_failure(what: str, exc: OSError) -> str:
    """``what (path): reason``, the path and reason from the OS."""
    # A call on a descriptor reports the number as its filename; it names nothing.
    paths = [os.fsdecode(p) for p in (exc.filename, exc.filename2) if isinstance(p, (str, bytes))]
    where = f" ({' -> '.join(paths)})" if paths else ""
    return f"{what}{where}: {exc.strerror or exc}"


_OS_HINTS = {
    errno.EACCES: "check that path's permissions, then run the command again",
    errno.EPERM: "check that path's permissions, then run the command again",
    errno.EROFS: "the file system is read-only; run it where the project can be written",
    errno.ENOSPC: "free some disk space, then run the command again",
    errno.EDQUOT: "free some disk space, then run the command again",
    errno.ENOENT: "check that the path exists (or pass --project-dir), then run it again",
    errno.ENOTDIR: "something that is not a directory is in the way; move it, then run it again",
    errno.EISDIR: "a directory is where a file should be; move it, then run it again",
}


def _os_hint(exc: OSError) -> str:
    hint = _OS_HINTS.get(exc.errno or 0, "then `ctxkeeper doctor` checks the store")
    return f"; {hint}"


def _debug_traceback() -> None:
    if os.environ.get(_DEBUG_VARIABLE) == "1":
        import traceback

        traceback.print_exc()


def _drop_stdout() -> None:
    # Python flushes stdout once more at exit; pointed at /dev/null that flush cannot fail
    # with a second BrokenPipeError ("Exception ignored ...", exit 120).
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass  # not a real file (captured in tests); nothing is flushed at exit


def _report_error(args: _Args, code: str, message: str, status: int) -> int:
    if getattr(args, "json", False):
        try:
            print(json.dumps({"error": code, "message": message}), flush=True)
        except BrokenPipeError:
            _drop_stdout()
    print(f"ctxkeeper: {_shown(message)}", file=sys.stderr)
    return status


def _shown(message: str) -> str:
    """``message`` safe for a terminal: a control character an argument or a path brought in
    (an escape sequence, a bidi override) shows as ``<U+001B>``; line breaks stay; a word too
    long to read (a 100 KB argument echoed back) is cut, so the advice after it stays in view."""
    return "\n".join(
        " ".join(_clipped(word) for word in render.visible(line).split(" "))
        for line in message.split("\n")
    )


def _clipped(word: str) -> str:
    if len(word) <= _WORD_MAX:
        return word
    # The quote or bracket that closes the value stays, so the sentence still reads.
    tail = word[len(word.rstrip("'\"):;,.")) :][:4]
    return f"{word[: _WORD_MAX // 2]}...({len(word):,} characters){tail}"


_WORD_MAX = 240


def _store(args: _Args, writer: JSONObject | None = None) -> Store:
    """The store ``--project-dir`` names; ``writer`` is who a write through it acts as."""
    from ctxkeeper.core.store import Store

    store = Store.open(args.project_dir, writer=writer)
    if args.command != "init":
        store.require()
    return store


def _style(args: _Args) -> term.Style:
    """Colour only on a terminal, and never with ``--no-color``, ``NO_COLOR`` or ``--json``."""
    return term.Style.for_stream(sys.stdout, no_color=args.no_color or args.json)


def _room() -> int:
    """Columns to wrap for: the terminal's, else ``COLUMNS``, else 80."""
    return term.width(sys.stdout)


def _clip_room() -> int:
    """Columns a table row is clipped to: the terminal's; a pipe's readers get whole lines."""
    isatty = getattr(sys.stdout, "isatty", None)
    return term.width(sys.stdout) if callable(isatty) and isatty() else views.NO_CLIP


def _init(args: _Args) -> int:
    store = _store(args)
    try:
        created = store.init()
        created += team.init_git(store.root, register=args.git)
    except OSError as exc:
        _fail(_os_failure(f"cannot create the store in {store.root}", exc) + _os_hint(exc))
    text = f"initialised {store.dir}" + (
        f" (created {', '.join(created)})" if created else " (already there)"
    )
    attributes = os.path.isfile(os.path.join(store.root, ".gitattributes"))
    commit = _INIT_COMMIT.format(
        also=", .context/.gitignore and .gitattributes"
        if attributes
        else " and .context/.gitignore"
    )
    text += "\n" + textwrap.fill(commit, width=88) + "\n" + textwrap.fill(_INIT_NEXT, 88)
    shown: JSONObject = {"dir": store.dir, "created": list(created), "commit": list(_COMMITTED)}
    return views.emit(args, shown, text)


#: What a team commits of the store (DESIGN.md, "What git sees"), and what init says of it.
_COMMITTED = (".context/config.json", ".context/snapshot.jsonl", ".context/.gitignore")
_INIT_COMMIT = (
    "Commit .context/config.json (shared settings){also} now, and .context/snapshot.jsonl (the team snapshot every write refreshes) with the code "
    "each entry explains. The rest of .context/ is this machine's working store; its "
    ".gitignore keeps it out of git."
)
_INIT_NEXT = (
    "Next: record a rule (`ctxkeeper add constraint --help` lists the fields), then start "
    "`claude` here with the ctxkeeper plugin installed: the first edit of a file the rule "
    "covers is held back until the agent has read it. `ctxkeeper demo` walks through it all."
)


def _interactive() -> bool:
    return sys.stdin.isatty()


def _asker(args: _Args) -> Callable[[str], str]:
    """``input``; with ``--json`` the prompt goes to stderr, so stdout holds only the JSON."""
    if not args.json:
        return input

    def ask(prompt: str) -> str:
        print(prompt, end="", file=sys.stderr, flush=True)
        return input()

    return ask


def _prompt_missing(kind: str, fields: dict[str, object], ask: Callable[[str], str]) -> None:
    """Ask a person at a terminal for each missing required field of ``kind``."""
    for spec in kind_spec(kind).fields:
        if spec.name in fields or (spec.is_list and not spec.floor):
            continue
        if not spec.is_list:
            fields[spec.name] = ask(spec.prompt + ": ").strip()
            continue
        items: list[str] = []
        while item := ask(f"{spec.prompt} {len(items) + 1} (empty line to finish): ").strip():
            items.append(item)
        fields[spec.name] = items


def _add(args: _Args) -> int:
    from ctxkeeper.cli.agentenv import cli_actor
    from ctxkeeper.write.verbs import record_entry

    actor = cli_actor()
    store = _store(args, actor)
    fields = fieldflags.given_fields(vars(args), args.kind, f"add {args.kind}")
    if _interactive():
        _prompt_missing(args.kind, fields, _asker(args))
    supersedes = fields.pop("supersedes", None)
    result = record_entry(
        store,
        args.kind,
        fields,
        actor=actor,
        supersedes=list(supersedes) if isinstance(supersedes, list) else None,
    )
    lines = views.record_lines(result, _style(args), room=_room())
    return views.emit(args, result, "\n".join(lines))


def _list(args: _Args) -> int:
    entries = sorted(_store(args).load().entries.values(), key=lambda e: str(e["id"]))
    if args.kinds:
        entries = [e for e in entries if e.get("kind") in args.kinds]
    if args.statuses:
        entries = [e for e in entries if e.get("status") in args.statuses]
    text = views.entry_table(entries, _style(args), room=_clip_room())
    return views.emit(args, {"results": list(entries), "total": len(entries)}, text)


def _show(args: _Args) -> int:
    entry = _store(args).get(_checked_id(args.id))
    return views.emit(args, entry, views.entry_view(entry, _style(args), room=_room()))


def _checked_id(entry_id: str) -> str:
    from ctxkeeper.core.model import check_id

    try:
        return check_id(entry_id)
    except UsageError as exc:
        raise UsageError(f"{exc}; `ctxkeeper list` shows the ids") from None


def _history(args: _Args) -> int:
    from ctxkeeper.core.errors import NotFoundError
    from ctxkeeper.write.verbs import get_entry

    store = _store(args)
    entry_id = _checked_id(args.id)
    try:
        result = get_entry(store, entry_id)
    except NotFoundError:
        # A purged id is gone from the store, but the purge promised the journal keeps it.
        records = store.history(entry_id)
        if not records:
            raise
        result = {
            "entry": None,
            "purged": records[-1].get("op") == "purge",
            "history": [{key: record.get(key) for key in _HISTORY_KEYS} for record in records],
        }
    history = result["history"]
    assert isinstance(history, list)
    purged = result["entry"] is None
    text = views.history_view(entry_id, history, _style(args), room=_room(), purged=purged)
    return views.emit(args, result, text)


_HISTORY_KEYS = ("seq", "at", "op", "actor", "reason", "before", "after")


def _search(args: _Args) -> int:
    from ctxkeeper.read.rank import get_context

    result = get_context(
        _store(args),
        {
            "query": args.query,
            "path": args.path,
            "kinds": args.kinds or [],
            "token_budget": args.budget,
            "include_history": args.include_history,
        },
    )
    text = views.search_text(result, _style(args), room=_clip_room())
    return views.emit(args, result, text)


def _status(args: _Args) -> int:
    from ctxkeeper.cli import statusreport

    data = statusreport.gather(_store(args))
    views.emit(args, data, statusreport.render_text(data, _style(args), room=_room()))
    journal = data.get("journal")
    if data.get("problem") or (isinstance(journal, dict) and not journal.get("ok")):
        print(
            "ctxkeeper: the store has a problem (shown above); run `ctxkeeper doctor` to see "
            "how to repair it",
            file=sys.stderr,
        )
        return 1
    return 0


def _review(args: _Args) -> int:
    from ctxkeeper.core.changes import pending_changes

    if not args.json:
        # The queue a person decides from; `review --json` stays open as a read-only query.
        from ctxkeeper.cli import reviewqueue

        _refuse_under_agent("review")
        problem = reviewqueue.terminal_problem()
        if problem:
            _fail(problem)
        return reviewqueue.run_queue(_store(args), no_color=getattr(args, "no_color", False))
    entries = _store(args).load().entries
    pending = sorted(
        (e for e in entries.values() if e.get("status") == "proposed"), key=lambda e: str(e["id"])
    )
    changes = pending_changes(entries.values())
    data: JSONObject = {
        "results": list(pending),
        "changes": list(changes),
        "total": len(pending) + len(changes),
    }
    return views.emit(args, data, "")


def _refuse_under_agent(verb: str) -> None:
    from ctxkeeper.cli.persongate import refuse_under_agent

    refuse_under_agent(verb)


def _confirm(question: str, ask: Callable[[str], str] = input) -> None:
    from ctxkeeper.cli.persongate import confirm

    confirm(question, ask)


def _human(args: _Args) -> int:
    from ctxkeeper.cli import review
    from ctxkeeper.cli.persongate import require_terminal
    from ctxkeeper.write.verbs import user_actor

    _refuse_under_agent(args.command)
    require_terminal(args.command)
    store = _store(args)
    actor = user_actor()
    ids = list(args.ids) if args.command in ("approve", "reject") else [args.id]
    reason = args.reason or ""
    # Validate every id and the reason first (a dry run), so the question comes last.
    planned = review.plan(store, args.command, ids, actor=actor, reason=reason)
    # With --json the plan and the question go to stderr: stdout holds only the JSON.
    print("\n".join(_plan_lines(planned)), file=sys.stderr if args.json else None)
    _confirm(f"{args.command} as listed above?", _asker(args))
    try:
        # Bound to what was listed: if any of it moved while the question waited, no `y` for it.
        done = review.decide(
            store, args.command, ids, actor=actor, reason=reason, shown=planned.shown
        )
    except StaleVerdictError as exc:
        _fail(_stale_message(args, planned, exc))
    lines = []
    for item in done:
        entry = item["entry"]
        assert isinstance(entry, dict)
        change = f" {item['change']}" if item.get("change") else ""
        lines.append(f"{item['action']}{change}: {render.one_line(entry)}")
    data: JSONObject = {"results": [item["entry"] for item in done]}
    if args.command == "purge":
        from ctxkeeper.cli import forget

        purged = done[0]["entry"]
        assert isinstance(purged, dict)
        found = forget.report(store, args.id, forget.texts_of(purged))
        lines += found
        data["report"] = list(found)
    return views.emit(args, data, "\n".join(lines))


def _plan_lines(planned: Plan) -> list[str]:
    """What a human verb is about to do, each entry it decides shown whole as it stands."""
    from ctxkeeper.cli import review

    lines: list[str] = []
    for item in planned.items:
        lines.extend(str(item["text"]).splitlines())
        if item.get("change") is None or item.get("action") == "supersede":
            now = review.shown_entry(planned, str(item["id"]))
            if now is not None:
                fields = EDITABLE_FIELDS.get(str(now.get("kind")), ())
                shown = render.block(now, fields=fields).splitlines()[1:]
                lines.extend("    " + line for line in shown)
    return lines


def _stale_message(args: _Args, planned: Plan, exc: StaleVerdictError) -> str:
    from ctxkeeper.cli import verdicts

    changed = verdicts.what_changed(planned.subjects.get(exc.token, {}), exc.now)
    again = " ".join([f"ctxkeeper {args.command}", *_again_arguments(args)])
    done = _PAST[args.command]
    return "\n".join(
        [
            (
                f"not {done}: {render.visible(exc.token)} changed after it was shown to you, so "
                f"your answer would have {done} a version you did not see; nothing was written. "
                "What changed while the question waited:"
            ),
            *(changed or ["  (what it decides is no longer the same)"]),
            f"Run `{again}` again to see the version it holds now and decide that one.",
        ]
    )


_PAST = {"approve": "approved", "reject": "rejected", "lift": "lifted", "purge": "purged"}


def _again_arguments(args: _Args) -> list[str]:
    import shlex

    ids = list(args.ids) if args.command in ("approve", "reject") else [args.id]
    reason = ["--reason", shlex.quote(args.reason or "...")]
    return [*ids, *(reason if args.command in ("reject", "purge") else [])]


def _doctor(args: _Args) -> int:
    from ctxkeeper.cli.agentenv import cli_actor
    from ctxkeeper.cli.doctor import run_doctor

    # A repair journals the hand edits it finds as the actor's manual_edit: under an agent,
    # as the agent's, never a person's.
    actor = cli_actor()
    store = _store(args, actor)
    if args.quality:
        return _doctor_quality(args, store)
    report = run_doctor(store, actor=actor, repair=args.repair)
    if report.needs_confirmation:
        lines = [f"would lose: {item}" for item in report.would_lose]
        if args.json:
            views.emit(args, report.as_json(), "")
            print(
                "ctxkeeper: the repair would lose what `would_lose` lists, so nothing was "
                "changed; run `ctxkeeper doctor --repair` at a terminal to confirm",
                file=sys.stderr,
            )
            return 1
        if not _interactive():
            print("\n".join(lines))
            _fail(
                "the repair would lose what is listed above, so nothing was changed; run "
                "`ctxkeeper doctor --repair` at a terminal to confirm"
            )
        print("\n".join(lines))
        _confirm("repair anyway (every replaced file is kept as a backup)?")
        report = run_doctor(store, actor=actor, repair=True, accept_loss=True)
    lines = [f"problem: {p}" for p in report.problems] + [f"note: {n}" for n in report.notes]
    lines += [f"backup: {b}" for b in report.backups]
    style = _style(args)
    if report.ok:
        lines.append(style("ok: journal chain verified and entries equal its fold", "green"))
    elif args.repair:
        lines.append(
            style("doctor found problems its repair cannot fix: each says what to do", "red")
        )
    else:
        lines.append(
            style(
                "doctor found problems: each says what to do; `ctxkeeper doctor --repair` "
                "fixes what it can",
                "red",
            )
        )
    views.emit(args, report.as_json(), "\n".join(lines))
    return 0 if report.ok else 1


def _doctor_quality(args: _Args, store: Store) -> int:
    """Findings are advice, not failure: exit 0 whatever they say (1 only if the store cannot
    be read). Read-only, so it is refused beside ``--repair``."""
    from ctxkeeper.cli.doctor import run_quality

    if args.repair:
        _fail("--quality only reads; run `ctxkeeper doctor --repair` on its own", 2)
    report = run_quality(store)
    return views.emit(args, report.as_json(), "\n".join(report.lines()))


def _demo(args: _Args) -> int:
    from ctxkeeper.cli.demo import run_demo

    if args.json:
        _fail("`demo` is a walkthrough for people and prints no JSON; run it without --json", 2)

    return run_demo(print)


def _serve(args: _Args) -> int:
    from ctxkeeper.mcp.server import main as serve_main

    return serve_main(["--project-dir", args.project_dir] if args.project_dir else [])


_HANDLERS: dict[str, Callable[[_Args], int]] = {
    "init": _init,
    "add": _add,
    "list": _list,
    "show": _show,
    "history": _history,
    "search": _search,
    "status": _status,
    "review": _review,
    "approve": _human,
    "reject": _human,
    "lift": _human,
    "purge": _human,
    "doctor": _doctor,
    "demo": _demo,
    "serve": _serve,
    **team.HANDLERS,
    **personedits.HANDLERS,
    **driftcli.HANDLERS,
}
