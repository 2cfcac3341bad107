"""The drift verbs of the CLI: ``drift [ID...]``, ``verify ID`` and ``stale --days N``."""

from __future__ import annotations

import argparse

from ctxkeeper.cli import views

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def _days(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of days") from None
    if value < 0:
        raise argparse.ArgumentTypeError("the number of days must be 0 or more")
    return value


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    drift = sub.add_parser(
        "drift",
        parents=[common],
        help="entries whose scope changed in git since they were verified, or lost a path",
    )
    drift.add_argument("ids", nargs="*", metavar="ID", help="only these entries")
    drift.add_argument("--all", action="store_true", help="list unchanged entries too")
    verify = sub.add_parser(
        "verify", parents=[common], help="record that an entry still holds at HEAD"
    )
    verify.add_argument("id")
    stale = sub.add_parser(
        "stale", parents=[common], help="entries not verified for N days (a report only)"
    )
    stale.add_argument("--days", type=_days, required=True, metavar="N")


def drift(args: argparse.Namespace) -> int:
    from ctxkeeper.core.store import Store
    from ctxkeeper.read.drift import check_drift, drift_text

    store = Store.open(args.project_dir)
    store.require()
    report = check_drift(store, list(args.ids) or None)
    return views.emit(args, report, drift_text(report, verbose=bool(args.all)))


def verify(args: argparse.Namespace) -> int:
    from ctxkeeper.cli.agentenv import cli_actor
    from ctxkeeper.core.store import Store
    from ctxkeeper.read.render import visible
    from ctxkeeper.write.verbs import verify_entry

    actor = cli_actor()
    store = Store.open(args.project_dir, writer=actor)
    result = verify_entry(store, args.id, actor=actor)
    sha = result.get("verified_sha")
    where = f"at {str(sha)[:12]}" if sha else "(no git commit here: verified_sha stays empty)"
    return views.emit(args, result, f"verified {visible(str(result['id']))} {where}")


def stale(args: argparse.Namespace) -> int:
    from ctxkeeper.core.store import Store
    from ctxkeeper.read.drift import stale_entries, stale_text

    store = Store.open(args.project_dir)
    store.require()
    report = stale_entries(store, args.days)
    return views.emit(args, report, stale_text(report))


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "drift": drift,
    "verify": verify,
    "stale": stale,
}
