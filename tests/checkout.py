"""A clean copy of this checkout, as a fresh clone holds it (no .venv, .cache, build output)."""

from __future__ import annotations

import os
import shutil
import subprocess

from tests.mcp_wire import REPO_ROOT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def clean_copy(destination: Path) -> Path:
    """The checkout as a clone holds it: tracked and unignored files only (no .venv, .cache)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for relative in filter(None, listed.split("\0")):
        source = os.path.join(REPO_ROOT, relative)
        target = destination / relative
        if os.path.islink(source):
            # plugin/ is links into the checkout, as a clone holds them.
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(source), target)
            continue
        if not os.path.isfile(source):
            continue  # deleted in the working tree but not yet in the index
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return destination
