"""The hooks' scope index is verifiably derived from the store (issue 22, section 4).

An index shard overwritten by hand used to hide a hard rule from the edit gate in every later
session while ``doctor`` said ok. The index now records the digest of each shard (and of what
it holds); the PreToolUse hook checks the shards it reads and rebuilds on a mismatch, and
``doctor`` derives the whole index from the store. A planted symbolic link where the index
belongs is replaced by a real directory, never followed. Hooks run as hooks.json starts them;
the CLI runs as a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ctxkeeper.core import scopeindex
from tests.conftest import REPO_ROOT
from tests.hook_harness import add_constraint, edit, hook_env, make_store, run_hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = hook_env(None, PYTHONPATH=REPO_ROOT)
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *args, "--project-dir", str(project)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(project),
        timeout=120,
        check=False,
    )


def _shard(project: Path, key: str) -> Path:
    index = scopeindex.open_index(str(project / ".context"))
    return (
        project
        / ".context"
        / "cache"
        / "scope-index"
        / f"n{index.shards}"
        / (f"{scopeindex.shard_of(key, index.shards)}.json")
    )


def _blank(shard: Path) -> None:
    """Overwrite one shard with a well-formed, empty one: the rule it held is gone."""
    shard.write_text("{}")


def _files(directory: Path) -> list[tuple[str, bytes]]:
    return sorted((str(p.relative_to(directory)), p.read_bytes()) for p in directory.rglob("*.*"))


class TestOverwrittenShard:
    def test_the_gate_rebuilds_a_shard_that_is_not_the_one_built(self, project: Path) -> None:
        store = make_store(project)
        rule = add_constraint(store, scope=["api/"])
        shard = _shard(project, "api")
        meta = project / ".context" / "cache" / "scope-index" / "meta.json"
        # Control: an intact index gates, and is read as it is (not rebuilt).
        before = (meta.stat().st_ino, meta.stat().st_mtime_ns, shard.read_bytes())
        first = run_hook("PreToolUse", edit(project / "api" / "a.py", session="s0"), project)
        assert first.denied
        assert rule in first.reason
        assert (meta.stat().st_ino, meta.stat().st_mtime_ns, shard.read_bytes()) == before
        # The overwrite: a well-formed shard without the rule, the index's stamp untouched.
        _blank(shard)
        result = run_hook("PreToolUse", edit(project / "api" / "a.py", session="s1"), project)
        assert result.denied, result.stdout
        assert rule in result.reason
        assert shard.read_bytes() == before[2]  # rebuilt from the store

    def test_a_hand_edit_of_the_delivery_setting_in_meta_is_not_trusted(
        self, project: Path
    ) -> None:
        store = make_store(project)
        rule = add_constraint(store, scope=["api/"])
        meta = project / ".context" / "cache" / "scope-index" / "meta.json"
        doc = json.loads(meta.read_text())
        assert doc["hard"] == "gate"
        meta.write_text(json.dumps({**doc, "hard": "context"}))
        result = run_hook("PreToolUse", edit(project / "api" / "a.py"), project)
        assert result.denied
        assert rule in result.reason


class TestDoctor:
    def test_doctor_names_the_shard_and_repair_rebuilds_it(self, project: Path) -> None:
        store = make_store(project)
        rule = add_constraint(store, scope=["api/"])
        shard = _shard(project, "api")
        # Control: an intact index is ok.
        intact = _cli(project, "doctor")
        assert intact.returncode == 0, intact.stdout + intact.stderr
        good = shard.read_bytes()
        _blank(shard)
        found = _cli(project, "doctor")
        assert found.returncode == 1
        assert "scope index" in found.stdout
        assert str(shard) in found.stdout
        assert "doctor --repair" in found.stdout
        repaired = _cli(project, "doctor", "--repair")
        assert repaired.returncode == 0, repaired.stdout + repaired.stderr
        assert "rebuilt the hooks' scope index" in repaired.stdout
        assert shard.read_bytes() == good
        assert _cli(project, "doctor").returncode == 0
        assert run_hook("PreToolUse", edit(project / "api" / "a.py"), project).reason.count(rule)


class TestPlantedLink:
    def test_a_link_in_the_index_place_is_replaced_never_followed(
        self, project: Path, tmp_path: Path
    ) -> None:
        store = make_store(project)
        rule = add_constraint(store, scope=["api/"])
        # What a cloned repository could ship: an index that says nothing covers anything.
        elsewhere = tmp_path / "shipped"
        good = project / ".context" / "cache" / "scope-index"
        meta = (good / "meta.json").read_bytes()
        shards = json.loads(meta)["shards"]
        (elsewhere / f"n{shards}").mkdir(parents=True)
        for number in range(shards):
            (elsewhere / f"n{shards}" / f"{number}.json").write_text("{}")
        (elsewhere / "meta.json").write_bytes(meta)
        shipped = _files(elsewhere)
        for path in sorted(good.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        good.rmdir()
        good.symlink_to(elsewhere)
        result = run_hook("PreToolUse", edit(project / "api" / "a.py"), project)
        assert result.denied
        assert rule in result.reason
        assert not good.is_symlink()
        assert good.is_dir()
        # The link's target is left exactly as it was: nothing was written through it.
        assert _files(elsewhere) == shipped
        assert os.path.isfile(good / "meta.json")
