"""Text normalisation shared by similarity and ranking: tokens, stems, terms, fingerprints."""

from __future__ import annotations

import itertools
import operator
import re
import unicodedata
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

__all__ = [
    "NEGATION",
    "STOPWORDS",
    "comparable",
    "fingerprint",
    "forbidden_control",
    "readable",
    "readable_length",
    "stem",
    "terms",
    "tokenize",
]

# Letters and digits, with inner apostrophes kept so "don't" stays one detectable token.
# `_` is a word character for `\w` but a separator for us (snake_case names split into words).
_TOKEN: Final = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
# Typographic apostrophes and primes arrive from chat clients and word processors.
_APOSTROPHES: Final = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})

NEGATION: Final = "not"
"""The single term every plain negation maps to, so "never X" and "do not X" share it."""

# Negations are deliberately absent: polarity lives in "not", "no", "never", "without".
# Modal verbs and "always" are present: "must use X", "should always use X" and "use X" state one
# rule, and polarity_conflict reads the raw text when the modality itself matters.
_STOPWORD_LIST: Final = """
    a about above after again all also always am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each either
    etc every few for from further had has have having he her here hers him his how however i
    if in into is it its itself just may me might more most must my myself need needs of off
    on once only or other our ours out over own per please same shall she should so some such
    than that the their theirs them then there these they this those through to too under
    until up upon us very via was we were what when where whether which while who whom why
    will with would yet you your yours
"""
STOPWORDS: Final[frozenset[str]] = frozenset(_STOPWORD_LIST.split())
# Words that negate the clause they are in; contractions ("don't", "can't") are caught by
# their "n't" ending instead of being listed.
_NEGATORS: Final = frozenset({"not", "never", "cannot", "nor"})

_VOWELS: Final = frozenset("aeiouy")
_KEEP_DOUBLE: Final = frozenset("lsz")
# -ly is too greedy on its own: these are not adverbs of a shorter word. (Shorter ones such as
# "apply" and "family" are already protected by the five-letter floor.)
_LY_WORDS: Final = frozenset({"assembly", "multiply", "anomaly", "monopoly"})
# Derivational suffixes tried in order, each with the shortest stem it may leave: a floor of 3
# keeps "state" from becoming "st", a floor of 5 on -ment keeps "document" whole.
_DERIVATIONAL: Final = (
    ("ization", "", 3),
    ("isation", "", 3),
    ("ically", "ic", 3),
    ("ation", "", 3),
    ("ition", "", 4),
    ("ness", "", 3),
    ("ment", "", 5),
    ("able", "", 4),
    ("ible", "", 4),
    ("ful", "", 4),
    ("ity", "", 4),
    ("ion", "", 4),
    ("ize", "", 3),
    ("ise", "", 4),
    ("ate", "", 3),
    ("ly", "", 5),
)
_stem_cache: dict[str, str] = {}
_term_cache: dict[str, str] = {}
_STEM_CACHE_MAX: Final = 200_000


def tokenize(text: str) -> list[str]:
    """Split text into lowercase word tokens.

    Runs of letters and digits are tokens; everything else separates them, except an apostrophe
    between letters ("don't" stays one token so negation remains detectable). "utf-8" gives
    ``["utf", "8"]`` and "retry_policy" gives ``["retry", "policy"]``.
    """
    return _TOKEN.findall(text.translate(_APOSTROPHES).lower())


def _has_vowel(word: str) -> bool:
    return any(char in _VOWELS for char in word)


def _is_short(base: str) -> bool:
    # A short syllable closing a short word: consonant-vowel-consonant, or vowel-consonant at
    # the start (Porter's *o condition, restricted to words of at most three letters).
    if len(base) > 3 or base[-1] in _VOWELS or base[-1] in "wx" or base[-2] not in _VOWELS:
        return False
    return len(base) == 2 or base[-3] not in _VOWELS


def _strip_inflection(word: str) -> str:
    # 1. Plurals and third person: "retries" -> "retri", "processes" -> "process".
    if word.endswith("sses") or (word.endswith("ies") and len(word) > 4):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        word = word[:-1]
    # 2. Past tense and gerund, then repair the stem the way Porter's step 1b does so that
    #    "enabled" meets "enable" and "mapped" meets "map".
    for suffix in ("ing", "ed"):
        if not word.endswith(suffix) or word.endswith("eed"):
            continue
        base = word[: -len(suffix)]
        if len(base) < 2 or not _has_vowel(base):
            continue
        if base.endswith(("at", "bl", "iz")):
            return base + "e"
        if len(base) > 2 and base[-1] == base[-2] and base[-1] not in _VOWELS | _KEEP_DOUBLE:
            return base[:-1]
        if _is_short(base):
            # "using" -> "use", "coding" -> "code": a short stem lost its silent e.
            return base + "e"
        return base
    return word


def _strip_derivation(word: str) -> str:
    for suffix, replacement, floor in _DERIVATIONAL:
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            if len(base) >= floor and _has_vowel(base):
                if suffix == "ly" and word in _LY_WORDS:
                    return word
                return base + replacement
    return word


def stem(word: str) -> str:
    """Return a light, deterministic stem of one lowercase token.

    Conflates inflections ("retries", "retrying", "retried" -> "retri") and the common
    derivations ("deployment" -> "deploy", "validation" and "validate" -> "valid"). It never
    strips -er or -or, which would merge "user" with "use" and "server" with "serve".
    """
    cached = _stem_cache.get(word)
    if cached is not None:
        return cached
    result = word
    if len(word) > 3 and word.isalpha():
        result = _strip_derivation(_strip_inflection(word))
        # Porter's final steps: drop a silent e ("cache" = "cach") and spell a consonant-y as i
        # ("retry" = "retri") so every inflected form lands on the same string.
        if result.endswith("e") and len(result) > 3:
            result = result[:-1]
        if result.endswith("y") and len(result) > 3 and result[-2] not in _VOWELS:
            result = result[:-1] + "i"
    if len(_stem_cache) >= _STEM_CACHE_MAX:
        _stem_cache.clear()
    _stem_cache[word] = result
    return result


def _term(token: str) -> str:
    if token in _NEGATORS or token.endswith("n't"):
        return NEGATION
    bare = token.replace("'", "")
    return "" if bare in STOPWORDS else stem(bare)


def terms(text: str) -> list[str]:
    """Return the stems of the meaningful tokens of text, in order.

    Stopwords are dropped; every plain negation ("not", "never", "don't", "cannot") becomes the
    single term :data:`NEGATION`, while "no", "without" and "avoid" stay as they are.
    """
    # Ranking calls this for every entry of an index build: one dict hit per known token.
    cache = _term_cache
    out = []
    for token in tokenize(text):
        term = cache.get(token)
        if term is None:
            if len(cache) >= _STEM_CACHE_MAX:
                cache.clear()
            term = cache[token] = _term(token)
        if term:
            out.append(term)
    return out


def fingerprint(text: str) -> str:
    """Return the normalised form of text used to detect exact duplicates.

    NFKC, lowercase, punctuation dropped (apostrophes included), whitespace collapsed, each token
    stemmed: "Never log tokens!" and "never  LOG token" give the same string.
    """
    normal = unicodedata.normalize("NFKC", text)
    return " ".join(stem(token.replace("'", "")) for token in tokenize(normal))


# ------------------------------------------------------------------------ what a reader reads

# Categories a reader never sees as a character: format characters (zero-width space and
# joiner, soft hyphen, bidirectional controls), controls, surrogates, private use, unassigned,
# and combining marks (which decorate the character before them instead of adding one).
_UNSEEN_CATEGORIES: Final = frozenset({"Cf", "Cc", "Cs", "Co", "Cn", "Mn", "Me"})
# Letters and symbols that render as blank space although Unicode files them elsewhere.
_BLANK_LOOKING: Final = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_PUNCTUATION_RUN: Final = re.compile(r"([^\w\s])[^\w\s]+")
_LETTER_RUN: Final = re.compile(r"([^\W\d_])\1{3,}")
_REPEATED_WORD: Final = re.compile(r"\b(\w+)(?:\s+\1\b)+", re.IGNORECASE)
_ANY_RUN_OF_FOUR: Final = re.compile(r"(.)\1\1\1", re.ASCII | re.DOTALL)
#: Every byte of ASCII text that ``\w`` does not match, as a space.
_NON_WORD_TO_SPACE: Final = bytes(
    byte if byte < 128 and (chr(byte).isalnum() or byte == ord("_")) else ord(" ")
    for byte in range(256)
)


def _seen(char: str) -> bool:
    if char.isspace():
        return True
    return unicodedata.category(char) not in _UNSEEN_CATEGORIES and char not in _BLANK_LOOKING


def readable(text: str) -> str:
    """Return text as a reader reads it, the form a floor is measured on.

    NFKC; invisible characters (format, control and private-use characters, combining marks,
    blank-looking fillers) dropped; each whitespace run one space, none at the ends; each run of
    punctuation or symbols one character ("!!!!" and "...." count once); a letter repeated
    more than three times in a row counted three times; a word repeated back to back counted
    once ("very very very" is "very").
    """
    normal = unicodedata.normalize("NFKC", text)
    if normal.isascii() and normal.isprintable():
        return _readable_ascii(" ".join(normal.split()))
    normal = "".join(char for char in normal if _seen(char))
    return _collapsed(" ".join(normal.split()))


def _collapsed(normal: str) -> str:
    """The runs and repeats of :func:`readable` collapsed, in a text whose whitespace runs are
    single spaces already."""
    normal = _PUNCTUATION_RUN.sub(r"\1", normal)
    normal = _LETTER_RUN.sub(r"\1\1\1", normal)
    return _REPEATED_WORD.sub(r"\1", normal)


def _readable_ascii(normal: str) -> str:
    """:func:`_collapsed` of printable ASCII text, each pattern applied only where a cheaper
    test finds what it needs (a floor reads every text an import holds): a letter run needs
    some character four times over, and a repeated word two equal runs of word characters in
    a row (every word is one such run, so both tests are necessary; the patterns decide)."""
    normal = _PUNCTUATION_RUN.sub(r"\1", normal) if _PUNCTUATION_RUN.search(normal) else normal
    if _ANY_RUN_OF_FOUR.search(normal):
        normal = _LETTER_RUN.sub(r"\1\1\1", normal)
    words = normal.encode().lower().translate(_NON_WORD_TO_SPACE).split()
    if any(map(operator.eq, words, itertools.islice(words, 1, None))):
        normal = _REPEATED_WORD.sub(r"\1", normal)
    return normal


# con-007-a634: floors count what a reader reads. Cached: an import checks every version of
# every entry, and most versions repeat their unchanged fields.
@lru_cache(maxsize=1 << 16)
def readable_length(text: str) -> int:
    """Return the number of characters a reader reads in text (see :func:`readable`)."""
    return len(readable(text))


# Bidirectional embeddings, overrides and isolates reorder what a terminal shows, so a stored
# rule can display as a different one; the marks (LRM, RLM, ALM) are refused with them.
_BIDI_CONTROLS: Final = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_LINE_SEPARATORS: Final = frozenset("\u2028\u2029")


def forbidden_control(text: str, *, multiline: bool) -> str | None:
    """Return the first character of text a stored field may not hold, or None.

    Control characters (C0, DEL, C1: ESC, CR, NUL, BEL...) and bidirectional controls are
    refused everywhere, and so are the Unicode line and paragraph separators (terminals do not
    agree on how to show them); newline and tab are allowed in multi-line prose fields only.
    """
    if text.isascii() and text.isprintable():
        return None
    for char in text:
        if char in _BIDI_CONTROLS or char in _LINE_SEPARATORS:
            return char
        if char in "\n\t":
            if not multiline:
                return char
        elif unicodedata.category(char) == "Cc":
            return char
    return None


# --------------------------------------------------------------------- comparison (tombstones)

# Cyrillic and Greek letters drawn like Latin ones: a rule retyped with U+0440 for "p" reads the
# same to a person, so it must compare the same.
_HOMOGLYPHS: Final = str.maketrans(
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u051b\u051d\u04bb"
    "\u04cf\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0423\u0406"
    "\u0408\u0405\u03bf\u03b1\u03bd\u03b9\u03ba\u03c1\u03c5\u03c7\u0391\u0392\u0395\u0396"
    "\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7",
    "aeopcyxijsdqwhlABEKMHOPCTXYIJSoavikpuxABEZHIKMNOPTYX",
)
# Shorthands that hide a negation or a preposition from the tokenizer ("w/o" is "w", "o").
_SHORTHANDS: Final = (
    (re.compile(r"\bw/o\b", re.IGNORECASE), "without"),
    (re.compile(r"\bw/(?=\s)", re.IGNORECASE), "with"),
    (re.compile(r"\bb/c\b", re.IGNORECASE), "because"),
)


def comparable(text: str) -> str:
    """Return text with what hides a restatement undone, for comparing two statements.

    NFKC; invisible characters dropped; Cyrillic and Greek look-alikes mapped to the Latin
    letters they imitate; "w/o", "w/" and "b/c" spelled out. Case and words are kept.
    """
    normal = unicodedata.normalize("NFKC", text)
    if not normal.isascii():
        normal = "".join(char for char in normal if _seen(char)).translate(_HOMOGLYPHS)
    if "/" in normal:
        for pattern, replacement in _SHORTHANDS:
            normal = pattern.sub(replacement, normal)
    return normal
