from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ctxkeeper.core.errors import CtxkeeperError, UsageError
from ctxkeeper.core.scope import covers, normalize_scope, relative_path, scope_covers, specificity

REPO = Path(__file__).resolve().parents[1]

# `<root>` in a table cell stands for the project root, a real directory under tmp_path.
ROOT = "<root>"


@pytest.fixture
def root(tmp_path: Path) -> str:
    project = tmp_path / "proj"
    project.mkdir()
    return str(project)


def _fill(text: str, root: str) -> str:
    return text.replace(ROOT, root)


class TestCoverage:
    @pytest.mark.parametrize(
        ("scopes", "path", "root_spelling", "expected"),
        [
            # Whole components, never substrings.
            pytest.param(["hooks/"], "hooks/pre.py", ROOT, True, id="dir-scope-direct-child"),
            pytest.param(["hooks"], "hooks/pre.py", ROOT, True, id="dir-scope-no-trailing-slash"),
            pytest.param(["hooks/"], "hooks/a/b.py", ROOT, True, id="dir-scope-deep-child"),
            pytest.param(["hooks/"], "api/webhooks/send.py", ROOT, False, id="hooks-vs-webhooks"),
            pytest.param(["billing/"], "billing/invoice.py", ROOT, True, id="billing-child"),
            pytest.param(["billing/"], "billing_legacy/x.py", ROOT, False, id="billing-vs-legacy"),
            pytest.param(["billing"], "billing.py", ROOT, False, id="dir-scope-vs-same-stem-file"),
            pytest.param(["src"], "srcs/x.py", ROOT, False, id="dir-scope-vs-longer-dir"),
            pytest.param(["sr"], "src/app.py", ROOT, False, id="prefix-of-first-component"),
            pytest.param(["src/ap"], "src/app.py", ROOT, False, id="prefix-of-file-name"),
            pytest.param(["src/app"], "src/application.py", ROOT, False, id="prefix-of-name"),
            pytest.param(["a/b"], "a/b/c/d.py", ROOT, True, id="nested-dir-scope"),
            pytest.param(["a/b/c"], "a/b", ROOT, False, id="scope-deeper-than-path"),
            pytest.param(["src/billing"], "src/billing", ROOT, True, id="dir-path-itself"),
            pytest.param(["src/"], "src/", ROOT, True, id="dir-path-trailing-slash"),
            # A file scope covers that file only.
            pytest.param(["src/app.py"], "src/app.py", ROOT, True, id="file-scope-exact"),
            pytest.param(["src/app.py"], "src/app_test.py", ROOT, False, id="file-vs-sibling-test"),
            pytest.param(["src/app.py"], "tests/test_app.py", ROOT, False, id="file-vs-test-file"),
            pytest.param(["src/app.py"], "src/app.py.bak", ROOT, False, id="file-vs-backup"),
            pytest.param(["src/app.py"], "src", ROOT, False, id="file-scope-vs-its-dir"),
            # Project-wide scopes.
            pytest.param([], "docs/x.md", ROOT, True, id="empty-scope-list"),
            pytest.param([""], "docs/x.md", ROOT, True, id="empty-string-scope"),
            pytest.param(["."], "docs/x.md", ROOT, True, id="dot-scope"),
            pytest.param(["./"], "docs/x.md", ROOT, True, id="dot-slash-scope"),
            pytest.param(["."], ".hidden/x", ROOT, True, id="dot-scope-vs-dotfile"),
            pytest.param([], ROOT, ROOT, True, id="project-wide-covers-root-itself"),
            # `./` and `..` are resolved lexically.
            pytest.param(["./src"], "src/app.py", ROOT, True, id="dot-slash-in-scope"),
            pytest.param(["src"], "./src/app.py", ROOT, True, id="dot-slash-in-path"),
            pytest.param(["src"], "src/a/../b.py", ROOT, True, id="dotdot-inside-stays"),
            pytest.param(["src"], "src/../lib/x.py", ROOT, False, id="dotdot-leaves-scope"),
            pytest.param(["lib"], "src/../lib/x.py", ROOT, True, id="dotdot-enters-scope"),
            pytest.param(["src/../lib"], "lib/x.py", ROOT, True, id="dotdot-in-scope"),
            pytest.param([], "../outside.py", ROOT, False, id="escape-vs-project-wide"),
            pytest.param(["."], "../outside.py", ROOT, False, id="escape-vs-dot-scope"),
            pytest.param([], "src/../../x.py", ROOT, False, id="escape-after-normpath"),
            pytest.param(["src"], "../proj/src/x.py", ROOT, False, id="relative-climb-back-in"),
            # Absolute paths.
            pytest.param(["src"], "<root>/src/app.py", ROOT, True, id="absolute-inside-root"),
            pytest.param(["src"], "<root>/lib/app.py", ROOT, False, id="absolute-inside-other"),
            pytest.param([], "/etc/passwd", ROOT, False, id="absolute-outside-root"),
            pytest.param([], "<root>-other/x.py", ROOT, False, id="sibling-sharing-name-prefix"),
            pytest.param([], "<root>src/x.py", ROOT, False, id="sibling-glued-to-root-name"),
            pytest.param(["src"], "<root>/../proj/src/x.py", ROOT, True, id="absolute-dotdot"),
            pytest.param(["src"], "<root>/src/a.py", "<root>/", True, id="root-trailing-slash"),
            pytest.param(["src"], "<root>/src/a.py", "<root>//", True, id="root-double-slash"),
            pytest.param(["<root>/src"], "src/x.py", ROOT, True, id="absolute-scope-inside"),
            # Separators.
            pytest.param(["src"], "src\\app.py", ROOT, True, id="backslash-in-path"),
            pytest.param(["src\\billing"], "src/billing/x.py", ROOT, True, id="backslash-scope"),
            pytest.param(["src\\billing"], "src/billing_old/x", ROOT, False, id="backslash-trap"),
            pytest.param(["src//billing"], "src/billing/x.py", ROOT, True, id="double-slash-scope"),
            pytest.param(["src"], "src//billing///x.py", ROOT, True, id="double-slash-path"),
            # Names are compared as they are: unicode as is, case-sensitive.
            pytest.param(["docs/résumé"], "docs/résumé/cv.md", ROOT, True, id="unicode-match"),
            pytest.param(["docs/résumé"], "docs/resume/cv.md", ROOT, False, id="unicode-accent"),
            pytest.param(["日本"], "日本/語.py", ROOT, True, id="unicode-cjk"),
            pytest.param(["Src"], "src/app.py", ROOT, False, id="case-differs-dir"),
            pytest.param(["README.md"], "readme.md", ROOT, False, id="case-differs-file"),
            # Several scopes: any one covering is enough.
            pytest.param(["src", "docs"], "docs/x.md", ROOT, True, id="multi-second-covers"),
            pytest.param(["src", "docs"], "tests/x.py", ROOT, False, id="multi-none-covers"),
            pytest.param(["hooks/", "api/"], "api/webhooks/s.py", ROOT, True, id="multi-by-api"),
        ],
    )
    def test_covers(
        self, root: str, scopes: list[str], path: str, root_spelling: str, expected: bool
    ) -> None:
        project_root = _fill(root_spelling, root)
        canonical = [normalize_scope(_fill(scope, root), project_root) for scope in scopes]
        rel = relative_path(_fill(path, root), project_root)
        assert covers(canonical, rel) is expected

    def test_none_path_is_never_covered(self) -> None:
        assert covers([], None) is False
        assert covers(["src"], None) is False

    @pytest.mark.parametrize("rel_path", ["..", "../x.py", "/abs/x.py"])
    def test_scope_covers_refuses_escaping_path(self, rel_path: str) -> None:
        assert scope_covers("", rel_path) is False


class TestNormalizeScope:
    @pytest.mark.parametrize(
        ("scope", "expected"),
        [
            pytest.param("", "", id="empty"),
            pytest.param(".", "", id="dot"),
            pytest.param("./", "", id="dot-slash"),
            pytest.param("src/", "src", id="trailing-slash"),
            pytest.param("./src/billing/", "src/billing", id="dot-slash-prefix"),
            pytest.param("src//billing", "src/billing", id="double-slash"),
            pytest.param("src\\billing\\", "src/billing", id="backslashes"),
            pytest.param("src/../lib", "lib", id="dotdot-inside"),
            pytest.param("src/..", "", id="dotdot-to-root"),
            pytest.param("src/app.py", "src/app.py", id="file"),
            pytest.param("...", "...", id="three-dots-is-a-name"),
            # Controls for the drive and home refusals: names that only look alike.
            pytest.param("src/C:/x", "src/C:/x", id="colon-further-in"),
            pytest.param("~backup/x", "~backup/x", id="tilde-in-a-name"),
            pytest.param("docs/~/x", "docs/~/x", id="tilde-further-in"),
        ],
    )
    def test_canonical_form(self, scope: str, expected: str) -> None:
        assert normalize_scope(scope) == expected

    def test_absolute_inside_root(self, root: str) -> None:
        assert normalize_scope(root + "/src/billing/", root) == "src/billing"
        assert normalize_scope(root, root + "/") == ""

    @pytest.mark.parametrize(
        ("scope", "with_root", "reason"),
        [
            pytest.param("..", False, "climbs out of the project root", id="dotdot"),
            pytest.param("../x", False, "climbs out of the project root", id="dotdot-x"),
            pytest.param("src/../../x", False, "climbs out", id="dotdot-after-normpath"),
            pytest.param("..\\x", True, "climbs out", id="dotdot-backslash"),
            pytest.param(
                "/etc",
                False,
                "accepted only where the project root is known",
                id="absolute-no-root",
            ),
            pytest.param("src/**/*.py", False, "use the directory it starts in, 'src/'", id="glob"),
            pytest.param("src/?.py", True, "is a glob pattern", id="glob-question"),
            pytest.param("[ab]/x", True, "is a glob pattern", id="glob-bracket"),
            pytest.param("/etc", True, "is outside the project root", id="absolute-outside"),
            pytest.param("C:\\x", True, "is a Windows drive path", id="windows-drive"),
            pytest.param("d:/src", False, "is a Windows drive path", id="windows-drive-slash"),
            pytest.param("~/x", True, "is a home-directory path", id="home"),
            pytest.param("~\\x", False, "is a home-directory path", id="home-backslash"),
        ],
    )
    def test_rejects(self, root: str, scope: str, with_root: bool, reason: str) -> None:
        with pytest.raises(UsageError) as info:
            normalize_scope(scope, root if with_root else None)
        message = str(info.value)
        assert repr(scope) in message
        assert reason in message
        # The message must say what a valid scope looks like, not only what was wrong.
        assert "relative to the project root, such as 'src/billing/'" in message
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, CtxkeeperError)
        assert info.value.code == "invalid_argument"


class TestRelativePath:
    @pytest.mark.parametrize(
        ("path", "expected"),
        [
            pytest.param("src/app.py", "src/app.py", id="relative"),
            pytest.param("./src//app.py", "src/app.py", id="relative-unclean"),
            pytest.param("src\\app.py", "src/app.py", id="backslash"),
            pytest.param("", "", id="empty-is-root"),
            pytest.param(".", "", id="dot-is-root"),
            pytest.param("src/..", "", id="dotdot-to-root"),
            pytest.param("..", None, id="dotdot"),
            pytest.param("../x.py", None, id="dotdot-x"),
            pytest.param("a/../../x.py", None, id="dotdot-after-normpath"),
            pytest.param("<root>/src/app.py", "src/app.py", id="absolute-inside"),
            pytest.param("<root>", "", id="absolute-root"),
            pytest.param("<root>/", "", id="absolute-root-slash"),
            pytest.param("/<root>/src/a.py", "src/a.py", id="leading-double-slash"),
            pytest.param("<root>/../x.py", None, id="absolute-dotdot-out"),
            pytest.param("<root>-other/x.py", None, id="absolute-sibling"),
            pytest.param("/etc/passwd", None, id="absolute-elsewhere"),
        ],
    )
    def test_relative_path(self, root: str, path: str, expected: str | None) -> None:
        assert relative_path(_fill(path, root), root) == expected

    def test_filesystem_root(self) -> None:
        assert relative_path("/srv/app/x.py", "/") == "srv/app/x.py"
        assert relative_path("/", "/") == ""

    def test_relative_root_is_taken_from_cwd(
        self, root: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(Path(root).parent)
        assert relative_path(root + "/src/a.py", "proj") == "src/a.py"
        assert relative_path(root + "/src/a.py", "./proj/") == "src/a.py"
        assert relative_path(root + "-other/a.py", "proj") is None


class TestRealpathFallback:
    @pytest.fixture
    def layout(self, tmp_path: Path) -> tuple[Path, Path]:
        real = tmp_path / "real"
        (real / "src").mkdir(parents=True)
        link = tmp_path / "link"
        link.symlink_to(real, target_is_directory=True)
        return real, link

    def test_root_through_symlink(self, layout: tuple[Path, Path]) -> None:
        real, link = layout
        assert relative_path(str(real / "src" / "a.py"), str(link)) == "src/a.py"

    def test_path_through_symlink(self, layout: tuple[Path, Path]) -> None:
        real, link = layout
        assert relative_path(str(link / "src" / "a.py"), str(real)) == "src/a.py"
        assert relative_path(str(link / "src" / "a.py"), str(real) + "/") == "src/a.py"

    def test_new_file_through_symlink(self, layout: tuple[Path, Path]) -> None:
        real, link = layout
        # The file does not exist yet: PreToolUse sees Write calls for new files.
        assert relative_path(str(link / "new" / "b.py"), str(real)) == "new/b.py"

    def test_lexical_match_wins_over_symlinks(self, layout: tuple[Path, Path]) -> None:
        real, link = layout
        # A symlink inside the project keeps its own name when the lexical spelling matches.
        (real / "alias").symlink_to(real / "src", target_is_directory=True)
        assert relative_path(str(real / "alias" / "a.py"), str(real)) == "alias/a.py"
        assert relative_path(str(real / "alias" / "a.py"), str(link)) == "alias/a.py"

    def test_outside_stays_outside(self, layout: tuple[Path, Path], tmp_path: Path) -> None:
        real, link = layout
        (tmp_path / "other").mkdir()
        assert relative_path(str(tmp_path / "other" / "a.py"), str(link)) is None
        assert relative_path(str(tmp_path / "other" / "a.py"), str(real)) is None
        assert covers([], relative_path(str(tmp_path / "other" / "a.py"), str(real))) is False

    def test_symlink_leading_outside(self, layout: tuple[Path, Path], tmp_path: Path) -> None:
        real, _ = layout
        (tmp_path / "other").mkdir()
        outside_link = tmp_path / "outside-link"
        outside_link.symlink_to(tmp_path / "other", target_is_directory=True)
        assert relative_path(str(outside_link / "a.py"), str(real)) is None

    def test_covers_through_symlink(self, layout: tuple[Path, Path]) -> None:
        real, link = layout
        scope = normalize_scope(str(link / "src"), str(real))
        assert scope == "src"
        assert covers([scope], relative_path(str(link / "src" / "a.py"), str(real))) is True


class TestSpecificity:
    @pytest.mark.parametrize(
        ("scopes", "path", "expected"),
        [
            pytest.param([], "src/a.py", 0, id="project-wide"),
            pytest.param([""], "src/a.py", 0, id="empty-string-scope"),
            pytest.param(["src"], "src/a.py", 1, id="one-component"),
            pytest.param(["src", "src/billing"], "src/billing/a.py", 2, id="longest-wins"),
            pytest.param(["src/billing", "src"], "src/billing/a.py", 2, id="order-irrelevant"),
            pytest.param(["", "src/billing/a.py"], "src/billing/a.py", 3, id="file-scope"),
            pytest.param(["src/billing", "docs"], "src/other.py", -1, id="not-covered"),
            pytest.param(["docs", "src"], "src/a.py", 1, id="only-covering-counts"),
            pytest.param(["hooks"], "api/webhooks/a.py", -1, id="substring-not-covered"),
            pytest.param([], "../x.py", -1, id="escaping-path"),
        ],
    )
    def test_specificity(self, scopes: list[str], path: str, expected: int) -> None:
        assert specificity(scopes, path) == expected


def test_import_stays_light() -> None:
    # Hooks import ctxkeeper.core.scope before every edit; these modules would slow every start-up.
    heavy = "{'re', 'pathlib', 'typing', 'json', 'unicodedata'}"
    listing = f"print(' '.join(sorted(m for m in sys.modules if m in {heavy})))"

    def loaded(imports: str) -> set[str]:
        result = subprocess.run(
            [sys.executable, "-c", f"import {imports}; {listing}"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        return set(result.stdout.split())

    baseline = loaded("sys")
    assert loaded("sys, ctxkeeper.core.scope") - baseline == set()
