from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeeper.core import text
from ctxkeeper.core.text import NEGATION, STOPWORDS, fingerprint, stem, terms, tokenize


class TestTokenize:
    @pytest.mark.parametrize(
        ("source", "expected"),
        [
            pytest.param("Don't use UTF-8", ["don't", "use", "utf", "8"], id="contraction-kept"),
            pytest.param("retry_policy.max", ["retry", "policy", "max"], id="snake-case-split"),
            pytest.param("It\u2019s `fine`", ["it's", "fine"], id="typographic-apostrophe"),
            pytest.param("HTTP/2 on :443", ["http", "2", "on", "443"], id="punctuation"),
            pytest.param("'quoted'", ["quoted"], id="outer-quotes-dropped"),
            pytest.param("", [], id="empty"),
        ],
    )
    def test_tokens(self, source: str, expected: list[str]) -> None:
        assert tokenize(source) == expected


class TestStem:
    @pytest.mark.parametrize(
        "family",
        [
            pytest.param(("retries", "retry", "retrying", "retried"), id="retry"),
            pytest.param(("caching", "cache", "cached", "caches"), id="cache"),
            pytest.param(("deploys", "deployment", "deploying", "deployed"), id="deploy"),
            pytest.param(("use", "using", "used", "uses"), id="use"),
            pytest.param(("validate", "validation", "validated", "validating"), id="validate"),
            pytest.param(("enable", "enabled", "enabling", "enables"), id="enable"),
            pytest.param(("configure", "configuration", "configurable"), id="configure"),
            pytest.param(("normalize", "normalized", "normalization"), id="normalize"),
            pytest.param(("log", "logs", "logging", "logged"), id="doubled-consonant"),
            pytest.param(("map", "mapped", "mapping"), id="undouble"),
            pytest.param(("install", "installed", "installing"), id="keep-double-l"),
            pytest.param(("process", "processes", "processing"), id="sses"),
            pytest.param(("strict", "strictly"), id="adverb"),
            pytest.param(("secure", "security"), id="ity"),
            pytest.param(("connect", "connection", "connected"), id="ion"),
            pytest.param(("automatic", "automatically"), id="ically"),
            pytest.param(("update", "updated", "updating"), id="ate"),
            pytest.param(("code", "coding", "coded"), id="short-stem-silent-e"),
        ],
    )
    def test_family_shares_a_stem(self, family: tuple[str, ...]) -> None:
        assert len({stem(word) for word in family}) == 1, {word: stem(word) for word in family}

    @pytest.mark.parametrize(
        ("a", "b"),
        [
            pytest.param("user", "use", id="no-er-stripping"),
            pytest.param("server", "serve", id="server"),
            pytest.param("status", "state", id="status"),
            pytest.param("apply", "app", id="ly-floor"),
            pytest.param("assembly", "assemb", id="ly-exception"),
            pytest.param("need", "ne", id="eed-kept"),
            pytest.param("string", "str", id="ing-needs-a-vowel"),
        ],
    )
    def test_distinct_words_stay_apart(self, a: str, b: str) -> None:
        assert stem(a) != stem(b)

    @pytest.mark.parametrize("word", ["api", "v2", "443", "s3", "x"])
    def test_short_and_alphanumeric_words_unchanged(self, word: str) -> None:
        assert stem(word) == word

    def test_cache_is_bounded(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # A fresh cache: other tests leave words in the shared one, which would skip the clear.
        monkeypatch.setattr(text, "_stem_cache", {})
        monkeypatch.setattr(text, "_STEM_CACHE_MAX", 1)
        assert stem("deployments") == "deploy"
        assert stem("retrying") == "retri"
        assert len(text._stem_cache) == 1


class TestTerms:
    @pytest.mark.parametrize(
        ("source", "expected"),
        [
            pytest.param("Never log tokens", [NEGATION, "log", "token"], id="never"),
            pytest.param("Do not log tokens", [NEGATION, "log", "token"], id="do-not"),
            pytest.param("Don't log tokens", [NEGATION, "log", "token"], id="contraction"),
            pytest.param("You cannot log tokens", [NEGATION, "log", "token"], id="cannot"),
            pytest.param(
                "avoid logs without tokens", ["avoid", "log", "without", "token"], id="kept"
            ),
            pytest.param("It's the rule we must always follow", ["rul", "follow"], id="stopwords"),
        ],
    )
    def test_terms(self, source: str, expected: list[str]) -> None:
        assert terms(source) == expected

    @pytest.mark.parametrize("word", ["not", "no", "never", "without", "avoid", "nor", "cannot"])
    def test_negations_are_not_stopwords(self, word: str) -> None:
        assert word not in STOPWORDS

    def test_cache_is_bounded(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # A fresh cache: other tests leave words in the shared one, which would skip the clear.
        monkeypatch.setattr(text, "_term_cache", {})
        monkeypatch.setattr(text, "_STEM_CACHE_MAX", 1)
        assert terms("cache retries") == ["cach", "retri"]
        assert len(text._term_cache) == 1


class TestFingerprint:
    @pytest.mark.parametrize(
        ("a", "b"),
        [
            pytest.param("Never log tokens!", "never  LOG token", id="case-punctuation-plural"),
            pytest.param("Don't cache.", "dont cache", id="apostrophe"),
            pytest.param("Use \uff35\uff34\uff23 stamps", "use UTC stamps", id="nfkc-fullwidth"),
            pytest.param("back-end\ttimeouts", "back end timeout", id="hyphen-tab"),
        ],
    )
    def test_equal(self, a: str, b: str) -> None:
        assert fingerprint(a) == fingerprint(b)

    @pytest.mark.parametrize(
        ("a", "b"),
        [
            pytest.param("Never log tokens", "Always log tokens", id="polarity"),
            pytest.param("Do not log tokens", "Don't log tokens", id="expanded-contraction"),
        ],
    )
    def test_different(self, a: str, b: str) -> None:
        assert fingerprint(a) != fingerprint(b)


class TestReadable:
    @pytest.mark.parametrize(
        ("source", "expected"),
        [
            pytest.param("Plain prose, kept as is.", "Plain prose, kept as is.", id="prose"),
            pytest.param("  a \t\n  b  ", "a b", id="whitespace-runs"),
            pytest.param("wait!!!! ...", "wait! .", id="punctuation-runs"),
            pytest.param("zero\u200bwidth\u2060", "zerowidth", id="format-characters"),
            pytest.param("\uff26\uff55\uff4c\uff4c width", "Full width", id="nfkc"),
            pytest.param("soooooo good", "sooo good", id="letter-run"),
            pytest.param("very very Very good", "very good", id="repeated-word"),
            pytest.param("1000000 rows", "1000000 rows", id="digits-kept"),
        ],
    )
    def test_readable_form(self, source: str, expected: str) -> None:
        assert text.readable(source) == expected
        assert text.readable_length(source) == len(expected)


class TestForbiddenControl:
    @pytest.mark.parametrize(
        ("source", "multiline", "expected"),
        [
            pytest.param("clean text", False, None, id="clean"),
            pytest.param("caf\u00e9 \u6570\u636e \U0001f600", False, None, id="unicode"),
            pytest.param("a\x1bb", True, "\x1b", id="esc"),
            pytest.param("a\x7fb", True, "\x7f", id="del"),
            pytest.param("a\nb\tc", True, None, id="newline-tab-in-prose"),
            pytest.param("a\nb", False, "\n", id="newline-in-one-line"),
            pytest.param("a\u202eb", True, "\u202e", id="bidi-override"),
            pytest.param("a\u2029b", True, "\u2029", id="paragraph-separator"),
        ],
    )
    def test_first_forbidden(self, source: str, multiline: bool, expected: str | None) -> None:
        assert text.forbidden_control(source, multiline=multiline) == expected


class TestComparable:
    @pytest.mark.parametrize(
        ("source", "expected"),
        [
            pytest.param("p\u0430yment", "payment", id="cyrillic"),
            pytest.param("Ν\u03bf", "No", id="greek"),
            pytest.param("with\u200bout", "without", id="zero-width"),
            pytest.param(
                "never w/o a key, w/ care b/c",
                "never without a key, with care because",
                id="shorthands",
            ),
            pytest.param("and/or w/o", "and/or without", id="slash-words-kept"),
            pytest.param("Plain", "Plain", id="unchanged"),
        ],
    )
    def test_comparable(self, source: str, expected: str) -> None:
        assert text.comparable(source) == expected


#: Pieces of printable ASCII text that each collapse rule acts on: words in other cases, runs
#: of one letter, digit and underscore runs, punctuation runs, words joined by punctuation.
_PIECES = st.sampled_from(
    [
        "ab", "AB", "Ab", "a", "A", "aaaa", "AAAAA", "aaa", "x_y", "X_Y", "_", "1", "1111",
        "ok", "OK", "ray", "x-ray", "it's", " ", "  ", "-", "'", "...", "!!", ",", "(", ")",
        "!", "?!", "....", "a1", "A1",
    ]
)  # fmt: skip


@settings(max_examples=800, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_ascii_text_reads_as_the_general_rules_read_it(sample: str) -> None:
    """The printable-ASCII path skips each pattern only where it cannot apply: it gives
    what the general path gives (NFKC and the filter leave such text as it is)."""
    assert text.readable(sample) == text._collapsed(" ".join(sample.split()))


@pytest.mark.parametrize(
    ("sample", "read"),
    [
        ("very Very VERY good", "very good"),
        ("an x-ray ray", "an x-ray"),
        ("aaaaargh!!!! now", "aaargh! now"),
        ("1111 22", "1111 22"),
    ],
)
def test_each_collapse_rule_still_applies_to_ascii_text(sample: str, read: str) -> None:
    assert text.readable(sample) == read
