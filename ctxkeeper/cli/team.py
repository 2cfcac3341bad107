"""The team verbs of the CLI: ``export snapshot``, ``import [FILE]``, and ``init``'s git set-up."""

from __future__ import annotations

import argparse
import sys

from ctxkeeper.cli import views

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxkeeper.core.store import Store

EXPORT_FORMATS = ("snapshot", "rules", "markdown", "agents")


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    export = sub.add_parser(
        "export",
        parents=[common],
        help="write the team snapshot (.context/snapshot.jsonl), or a projection: Claude Code "
        "rules (.claude/rules/ctxkeeper/), DECISIONS.md, or a section of AGENTS.md",
    )
    export.add_argument("format", choices=EXPORT_FORMATS)
    export.add_argument(
        "--path", help="snapshot only: file inside .context/ (default .context/snapshot.jsonl)"
    )
    imports = sub.add_parser(
        "import", parents=[common], help="merge a team snapshot (default .context/snapshot.jsonl)"
    )
    imports.add_argument("file", nargs="?", default=None)
    # What git runs as the merge driver `init --git` registers; not a verb for people.
    # No help=: argparse then lists no line for it (help=SUPPRESS prints "==SUPPRESS==").
    driver = sub.add_parser("merge-driver")
    driver.add_argument("files", nargs=3)


def export(args: argparse.Namespace) -> int:
    from ctxkeeper.cli.agentenv import cli_actor
    from ctxkeeper.core.store import Store
    from ctxkeeper.write.exchange import export_snapshot

    store = Store.open(args.project_dir, writer=cli_actor())
    if args.format != "snapshot":
        return _export_projection(args, store)
    result = export_snapshot(store, args.path)
    return views.emit(args, result, f"wrote {result['path']}; commit it with the code it explains")


def _export_projection(args: argparse.Namespace, store: Store) -> int:
    from ctxkeeper.cli.projectfiles import export_projection

    if args.path is not None:
        from ctxkeeper.core.errors import UsageError

        raise UsageError(
            f"--path applies to `export snapshot` only; `export {args.format}` "
            "writes to its fixed place in the project"
        )
    report = export_projection(store, args.format)
    return views.emit(args, report.to_json(), report.text())


def import_(args: argparse.Namespace) -> int:
    from ctxkeeper.cli.agentenv import cli_actor
    from ctxkeeper.core.store import Store
    from ctxkeeper.write.exchange import import_snapshot, summary_line

    actor = cli_actor()
    store = Store.open(args.project_dir, writer=actor)
    # A person who names a file speaks for it (an agent never does); the team snapshot (no
    # FILE) is the working tree's, which anything may have written: only the team's history
    # vouches for it.
    report = import_snapshot(
        store, args.file, actor=actor, fence="none", vouched_by_actor=args.file is not None
    )
    notes = report.get("notes")
    lines = [summary_line(report), *map(str, notes if isinstance(notes, list) else [])]
    return views.emit(args, report, "\n".join(lines))


def merge_driver(args: argparse.Namespace) -> int:
    from ctxkeeper.team.mergedriver import main

    return main(args.files)


def init_git(root: str, *, register: bool) -> list[str]:
    """``init``'s git part: the union-merge attribute, and the driver when a person asks."""
    from ctxkeeper.team.gitsetup import add_union_attribute, register_driver

    done = [".gitattributes"] if add_union_attribute(root) else []
    if register:
        if not sys.stdin.isatty():
            # A hook or a script must not make git run commands; a person registers it.
            from ctxkeeper.core.errors import UsageError

            raise UsageError(
                "`init --git` registers a command for git to run; run it in a terminal"
            )
        done += register_driver(root)
    return done


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "export": export,
    "import": import_,
    "merge-driver": merge_driver,
}
