"""Git integration of the team snapshot: the union merge for everyone, a driver on request.

The ``.gitattributes`` line is committed, so every clone (and a hosting service's merge button)
merges the snapshot with git's built-in ``union`` driver, with no per-clone setup. ctxkeeper's
own driver writes a normalised snapshot instead; it is registered only in this clone's local
git config and ``.git/info/attributes`` and only when a person runs ``ctxkeeper init --git``,
since a cloned repository must never make git run a command (con-017-5308).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from typing import Final

from ctxkeeper.core import fsutil
from ctxkeeper.core.errors import StoreError

SNAPSHOT_PATTERN: Final = ".context/snapshot.jsonl"
UNION_LINE: Final = f"{SNAPSHOT_PATTERN} merge=union"
DRIVER_NAME: Final = "ctxkeeper"
DRIVER_LINE: Final = f"{SNAPSHOT_PATTERN} merge={DRIVER_NAME}"


def ensure_line(path: str, line: str, comment: str) -> bool:
    """Append ``line`` to the file at ``path`` unless it is there; True when it was added.
    The rest of the file is kept byte for byte."""
    fsutil.check_not_link(path)
    data = fsutil.read_bytes(path) or b""
    if line.encode() in data.splitlines():
        return False
    text = data.decode("utf-8", "surrogateescape")
    if text and not text.endswith("\n"):
        text += "\n"
    text += f"# {comment}\n{line}\n"
    fsutil.write_atomic(path, text.encode("utf-8", "surrogateescape"))
    return True


def add_union_attribute(root: str) -> bool:
    return ensure_line(
        os.path.join(root, ".gitattributes"),
        UNION_LINE,
        "ctxkeeper: teammates' snapshots merge without conflict markers",
    )


def driver_command() -> str:
    """The command git runs to merge two snapshots: this interpreter and this ctxkeeper."""
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = (
        f"import sys; sys.path.insert(0, {package_parent!r}); "
        "from ctxkeeper.cli.mergedriver import main; sys.exit(main(sys.argv[1:]))"
    )
    return shlex.join([sys.executable, "-I", "-c", code]) + " %O %A %B"


def _git(root: str, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", root, *args], capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StoreError(f"cannot run git: {exc}") from None
    if done.returncode != 0:
        raise StoreError(f"git {' '.join(args)} failed: {done.stderr.strip() or done.returncode}")
    return done.stdout.strip()


def register_driver(root: str) -> list[str]:
    """Register the merge driver in this clone only; return what was set."""
    if _git(root, "rev-parse", "--is-inside-work-tree") != "true":
        raise StoreError(f"{root} is not a git work tree; `init --git` needs one")
    _git(root, "config", "--local", f"merge.{DRIVER_NAME}.name", "ctxkeeper snapshot merge")
    _git(root, "config", "--local", f"merge.{DRIVER_NAME}.driver", driver_command())
    attributes = _git(root, "rev-parse", "--git-path", "info/attributes")
    attributes = os.path.join(root, attributes) if not os.path.isabs(attributes) else attributes
    os.makedirs(os.path.dirname(attributes), exist_ok=True)
    ensure_line(attributes, DRIVER_LINE, "ctxkeeper: this clone merges snapshots with its driver")
    return [f"git config merge.{DRIVER_NAME}.driver", os.path.relpath(attributes, root)]
