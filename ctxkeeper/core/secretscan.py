"""Secret scanning: the patterns that keep credential-shaped strings out of the store."""

from __future__ import annotations

import base64
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ctxkeeper.core.errors import SecretDetectedError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

__all__ = ["check_fields", "find_secret", "scan_fields", "secret_kinds"]

# A token behind a vendor prefix is already unlikely prose; the entropy bar only has to reject
# documentation fillers such as "ghp_xxxx...".
_MIN_PREFIXED_ENTROPY: Final = 1.5
# Unprefixed values earn suspicion from their assignment context alone, so they must also look
# random. Passwords are chosen by people and are shorter and less random than generated keys.
_MIN_PASSWORD_LENGTH: Final = 8
_MIN_PASSWORD_ENTROPY: Final = 2.75
_MIN_KEY_LENGTH: Final = 12
_MIN_KEY_ENTROPY: Final = 3.0
_MIN_URL_PASSWORD_LENGTH: Final = 4
_MIN_MEAN_WORD_LENGTH: Final = 3.5
# How far past a PEM header to look for key material; a real block has it on the next line.
_PEM_LOOKAHEAD: Final = 400

# Compared case-insensitively against a whole value: the words documentation uses for
# "put your secret here", and the defaults of local development containers.
_PLACEHOLDER_WORDS: Final = frozenset(
    {
        "abc", "admin", "apikey", "api_key", "bar", "baz", "changeit", "changeme", "default",
        "dummy", "example", "foo", "guest", "hidden", "mysql", "none", "null", "pass",
        "passwd", "password", "postgres", "pwd", "qux", "redacted", "redis", "root", "secret",
        "test", "token", "user", "username", "xxx", "xyz",
    }
)  # fmt: skip
# Substrings that mark a whole value as a filler even when decorated ("your-api-key-123").
_PLACEHOLDER_PARTS: Final = (
    "example", "your", "placeholder", "redacted", "changeme", "change_me", "dummy", "sample",
    "xxxx", "fake", "replace", "insert",
)  # fmt: skip
# Template and reference syntaxes: <...>, ${VAR}, $VAR, %(name)s, {name}, {{ var }}, [...].
_TEMPLATE_STARTS: Final = frozenset("<$%{[(")
_FILLER_CHARS: Final = frozenset("*x.-_#•")

# Values in an assignment that are names of secrets, not secrets: code references, environment
# variable names, paths, URLs, dates, versions, digests and UUIDs (idempotency and request
# tokens are UUIDs far more often than credentials are).
_NOT_A_SECRET_VALUE: Final = re.compile(
    r"""
      [A-Za-z_]\w{0,80}(?:\.[A-Za-z_]\w{0,80}){1,8}$   # settings.DATABASE_PASSWORD
    | [A-Z][A-Z0-9]{0,40}(?:_[A-Z0-9]{1,40}){1,8}$     # GITHUB_TOKEN
    | [a-z0-9]{1,40}(?:[-_][a-z0-9]{1,40}){1,12}$      # 90-day-rotation, prod_db_2024
    | (?:\.{0,2}|~)/                                    # /etc/app/secret.key, ./key, ~/key
    | [A-Za-z][A-Za-z0-9+.\-]{0,20}://                  # URLs: the URL rule judges those
    | \d{4}-\d{2}-\d{2}                                 # ISO dates and timestamps
    | v?\d{1,6}(?:\.\d{1,6}){1,3}(?:[-+.][\w.\-+]{0,40})?$  # versions and semver
    | (?:sha1|sha256|sha512|md5):                       # content digests
    | [0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$
    """,
    re.VERBOSE,
)
_BASE64_RUN: Final = re.compile(r"[A-Za-z0-9+/]{40}")
# Ends where the search window ends (endpos); the lookbehind still sees the text before it.
_DISCORD_ID: Final = re.compile(r"(?<![A-Za-z0-9_\-.])[A-Za-z0-9_\-]{23,28}\Z")
_HAS_LETTER: Final = re.compile(r"[A-Za-z]")
_CHARACTER_CLASSES: Final = (re.compile(r"[a-z]"), re.compile(r"[A-Z]"), re.compile(r"\d"))
_HAS_DIGIT_OR_SYMBOL: Final = re.compile(r"[^A-Za-z_]")
# The words of a CamelCase name: an acronym, a capitalised or lower-case word, or a number.
# The acronym branch gives back one letter at most, so a scan stays linear.
_CAMEL_WORDS: Final = re.compile(r"[A-Z]{1,40}(?![a-z])|[A-Z]?[a-z]{1,40}|\d{1,40}")
_IDENTIFIER: Final = re.compile(r"\w{1,256}", re.ASCII)

# Shared tail of the generic assignment rules: the key (matched by each rule) may be quoted, the
# operator is one of = : := =>, and the value stops at whitespace, quotes or separators
# ("&" ends a value in a query string). The value is capped at 256 characters so that a match
# costs a bounded amount of work.
_ASSIGNED_VALUE: Final = (
    r"""["']?[ \t]{0,4}(?::=|=>|[:=])[ \t]{0,4}["'`]?(?P<v>(?!=)[^\s"'`,;&]{1,256})"""
)


def _entropy(text: str) -> float:
    """Shannon entropy of text in bits per character."""
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


def _is_placeholder(value: str) -> bool:
    value = value.strip("'\"`").lower()
    return (
        not value
        or value[0] in _TEMPLATE_STARTS
        # "password1" and "changeme123" are the same filler with a counter on the end.
        or value.rstrip("0123456789") in _PLACEHOLDER_WORDS
        or any(part in value for part in _PLACEHOLDER_PARTS)
        or set(value) <= _FILLER_CHARS
    )


def _prefixed_token(match: re.Match[str]) -> bool:
    token = match["t"]
    return "example" not in token.lower() and _entropy(token) >= _MIN_PREFIXED_ENTROPY


def _random_key(value: str) -> bool:
    return (
        len(value) >= _MIN_KEY_LENGTH
        # Generated keys mix lower case, upper case and digits; one class alone is a word or
        # a number, while two already cover hex and base32 keys.
        and sum(cls.search(value) is not None for cls in _CHARACTER_CLASSES) >= 2
        and _entropy(value) >= _MIN_KEY_ENTROPY
        and not _is_placeholder(value)
        and _NOT_A_SECRET_VALUE.match(value) is None
        and not _spelled_in_words(value)
    )


def _spelled_in_words(value: str) -> bool:
    # A type or variable name (SSHCertPrivateKeyTypes, Ed25519PrivateKey) is spelled in words
    # of four letters or more on average; in a random mixed-case key a capital starts a new
    # "word" every two or three characters. Single-case values are left to the other checks:
    # long runs of one case are just as common in hex and base32 keys.
    if _IDENTIFIER.fullmatch(value) is None or value.islower() or value.isupper():
        return False
    words = _CAMEL_WORDS.findall(value)
    return sum(map(len, words)) / len(words) >= _MIN_MEAN_WORD_LENGTH


def _assigned(match: re.Match[str]) -> str | None:
    """The assigned value, or None when it is code (a call or a subscript), not a literal."""
    # Closing brackets and a full stop end the surrounding call or sentence, not the value.
    value = match["v"].rstrip(").]}>")
    return None if "(" in value or "[" in value else value


def _assigned_key(match: re.Match[str]) -> bool:
    value = _assigned(match)
    return value is not None and _random_key(value)


def _assigned_password(match: re.Match[str]) -> bool:
    # People pick passwords: shorter and less random than keys, but with a digit or a symbol.
    value = _assigned(match)
    return (
        value is not None
        and len(value) >= _MIN_PASSWORD_LENGTH
        and _HAS_LETTER.search(value) is not None
        and _HAS_DIGIT_OR_SYMBOL.search(value) is not None
        and _entropy(value) >= _MIN_PASSWORD_ENTROPY
        and not _is_placeholder(value)
        and _NOT_A_SECRET_VALUE.match(value) is None
    )


def _url_password(match: re.Match[str]) -> bool:
    password = match["pw"]
    # user:user (postgres:postgres, guest:guest) is a local default, a:b is a documentation
    # example, and host:port@ is a typo rather than a password.
    return not (
        len(password) < _MIN_URL_PASSWORD_LENGTH
        or _is_placeholder(password)
        or password == match["user"]
        or (password.isdigit() and len(password) <= 5)
    )


def _pem_body(match: re.Match[str]) -> bool:
    # The header alone is quoted in prose about key formats; only key material is a secret.
    following = match.string[match.end() : match.end() + _PEM_LOOKAHEAD]
    body = following.split("-----END", 1)[0]
    return _BASE64_RUN.search(body) is not None


def _b64decode(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def _jwt_header(match: re.Match[str]) -> bool:
    try:
        header = json.loads(_b64decode(match["h"]))
    except ValueError:
        return False
    return isinstance(header, dict) and "alg" in header


def _discord_user_id(match: re.Match[str]) -> bool:
    # A bot token's first segment is the bot's snowflake id in base64; that is what sets it
    # apart from any other dotted identifier of the same shape. The rule's regex starts at the
    # first dot (a literal lets the scan skip ahead fast), so the id is found looking back.
    start = match.start()
    found = _DISCORD_ID.search(match.string, max(0, start - 28), start)
    if found is None:
        return False
    try:
        user_id = _b64decode(found[0])
    except ValueError:
        return False
    return user_id.isdigit() and 17 <= len(user_id) <= 20


@dataclass(frozen=True)
class _Rule:
    kind: str
    hints: tuple[str, ...]
    """Lower-case substrings of which one must occur before the regex is worth running."""
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool]
    gate: re.Pattern[str] | None = None
    """For a token with no fixed text to hint at: a pattern every match's lower-cased text
    holds, in place of the hints."""


def _rule(
    kind: str,
    hints: tuple[str, ...],
    regex: str,
    accept: Callable[[re.Match[str]], bool],
    *,
    flags: int = 0,
    gate: str | None = None,
) -> _Rule:
    return _Rule(
        kind, hints, re.compile(regex, flags), accept, None if gate is None else re.compile(gate)
    )


# A token glued to a longer word is not one. The left boundary is a lookbehind placed *after*
# the literal prefix and spanning it: a pattern that opens with a literal lets the engine skip
# ahead with a fast substring search (a leading lookbehind is about 30 times slower on prose),
# and checking the boundary before the long token body keeps runs like "eyJeyJeyJ..." linear.
# Right boundaries are lookaheads on the token's own alphabet; \b would treat "_" as a word
# character and "-" as a boundary, which is wrong for most token alphabets. Every repetition
# has an upper bound.
_ALNUM: Final = "A-Za-z0-9"
_WORD: Final = "A-Za-z0-9_"
_TOKEN: Final = "A-Za-z0-9_\\-"


def _not_after(chars: str, prefix_width: int) -> str:
    return f"(?<![{chars}].{{{prefix_width}}})"


_NOT_BEFORE_WORD: Final = r"(?![A-Za-z0-9_])"
_NOT_BEFORE_TOKEN: Final = r"(?![A-Za-z0-9_\-])"
# The separator and value of a key assignment; see _ASSIGNED_VALUE for the generic one.
_ASSIGNED: Final = r"""["']?[ \t]{0,4}(?::=|=>|[:=])[ \t]{0,4}["']?"""

# Most specific first: a vendor prefix names the kind exactly, the structural rules (JWT, URL)
# come next, and the assignment heuristics last, so that "GITHUB_TOKEN=ghp_..." is reported
# as a GitHub token rather than as a token assignment.
_RULES: Final[tuple[_Rule, ...]] = (
    _rule(
        "GCP service account key",
        ("private_key",),
        r"private_key\\?\"[ \t]{0,4}:[ \t]{0,4}\\?\"-----BEGIN[A-Z ]{0,30}PRIVATE KEY-----",
        _pem_body,
    ),
    _rule(
        "private key block",
        ("private key",),
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----",
        _pem_body,
    ),
    # Access key ids are base32; AKIA is long-term, ASIA a temporary STS credential.
    _rule(
        "AWS access key id",
        ("akia", "asia"),
        r"(?P<t>(?:AKIA|ASIA)" + _not_after(_ALNUM, 4) + r"[A-Z2-7]{16})(?![A-Za-z0-9])",
        _prefixed_token,
    ),
    # The secret half is 40 characters of base64 with nothing to recognise it by but its key.
    _rule(
        "AWS secret access key",
        ("access_key", "accesskey", "access-key", "secret_key", "secretkey", "secret-key"),
        r"(?:secret[_.\-]?access|aws[_.\-]?secret)[_.\-]?key"
        + _ASSIGNED
        + r"(?P<t>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        _prefixed_token,
        flags=re.IGNORECASE,
    ),
    _rule(
        "Google API key",
        ("aiza",),
        "AIza" + _not_after(_TOKEN, 4) + r"(?P<t>[A-Za-z0-9_\-]{35})" + _NOT_BEFORE_TOKEN,
        _prefixed_token,
    ),
    _rule(
        "Google OAuth client secret",
        ("gocspx-",),
        "GOCSPX-" + _not_after(_TOKEN, 7) + r"(?P<t>[A-Za-z0-9_\-]{28})" + _NOT_BEFORE_TOKEN,
        _prefixed_token,
    ),
    _rule(
        "Azure storage account key",
        ("accountkey",),
        r"AccountKey[ \t]{0,4}=[ \t]{0,4}(?P<t>[A-Za-z0-9+/]{30,100}={0,2})",
        _prefixed_token,
        flags=re.IGNORECASE,
    ),
    _rule(
        "Azure shared access key",
        ("sharedaccesskey",),
        r"SharedAccessKey[ \t]{0,4}=[ \t]{0,4}(?P<t>[A-Za-z0-9+/]{30,100}={0,2})",
        _prefixed_token,
        flags=re.IGNORECASE,
    ),
    _rule(
        "GitHub token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        "g"
        + _not_after(_WORD, 1)
        + r"(?:h[pousr]_(?P<t>[A-Za-z0-9]{36,251})|ithub_pat_(?P<t2>[A-Za-z0-9_]{50,240}))"
        + _NOT_BEFORE_WORD,
        lambda m: _entropy(m["t"] or m["t2"]) >= _MIN_PREFIXED_ENTROPY,
    ),
    _rule(
        "GitLab token",
        ("glpat-", "gldt-", "glrt-", "glptt-"),
        "gl"
        + _not_after(_TOKEN, 2)
        + r"(?:pat|dt|rt|ptt)-(?P<t>[A-Za-z0-9_\-]{20,64})"
        + _NOT_BEFORE_TOKEN,
        _prefixed_token,
    ),
    # Slack tokens carry numeric team and user ids; requiring them keeps "xoxb-your-token" out.
    _rule(
        "Slack token",
        ("xox", "xapp-"),
        "x"
        + _not_after(_TOKEN, 1)
        + r"(?:ox[abeoprs]-\d{6,15}-[0-9A-Za-z\-]{0,60}?(?P<t>[0-9A-Za-z]{20,64})"
        r"|app-\d-[A-Z0-9]{6,20}-\d{6,20}-(?P<t2>[A-Za-z0-9]{20,100}))" + _NOT_BEFORE_TOKEN,
        lambda m: _entropy(m["t"] or m["t2"]) >= _MIN_PREFIXED_ENTROPY,
    ),
    _rule(
        "Slack webhook URL",
        ("hooks.slack.com",),
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]{10,80}/"
        r"(?P<t>[A-Za-z0-9]{20,64})",
        _prefixed_token,
    ),
    _rule(
        "Stripe secret key",
        ("sk_live_", "sk_test_"),
        "sk_"
        + _not_after(_WORD, 3)
        + r"(?:live|test)_(?P<t>[A-Za-z0-9]{16,247})"
        + _NOT_BEFORE_WORD,
        _prefixed_token,
    ),
    _rule(
        "Stripe restricted key",
        ("rk_live_", "rk_test_"),
        "rk_"
        + _not_after(_WORD, 3)
        + r"(?:live|test)_(?P<t>[A-Za-z0-9]{16,247})"
        + _NOT_BEFORE_WORD,
        _prefixed_token,
    ),
    _rule(
        "Stripe webhook secret",
        ("whsec_",),
        "whsec_" + _not_after(_WORD, 6) + r"(?P<t>[A-Za-z0-9]{24,64})" + _NOT_BEFORE_WORD,
        _prefixed_token,
    ),
    # Before the OpenAI rule: both start with "sk-".
    _rule(
        "Anthropic API key",
        ("sk-ant-",),
        "sk-ant-" + _not_after(_TOKEN, 7) + r"(?P<t>[A-Za-z0-9_\-]{32,200})" + _NOT_BEFORE_TOKEN,
        _prefixed_token,
    ),
    # "sk-" also opens ordinary hyphenated words, so the key must look generated as well.
    _rule(
        "OpenAI API key",
        ("sk-",),
        "sk-"
        + _not_after(_TOKEN, 3)
        + r"(?:(?:proj|svcacct|admin)-)?(?P<v>[A-Za-z0-9_\-]{32,200})"
        + _NOT_BEFORE_TOKEN,
        lambda m: _random_key(m["v"]),
    ),
    _rule(
        "npm access token",
        ("npm_",),
        "npm_" + _not_after(_WORD, 4) + r"(?P<t>[A-Za-z0-9]{36})" + _NOT_BEFORE_WORD,
        _prefixed_token,
    ),
    # "AgE" opens every PyPI macaroon; the next bytes encode the pypi.org or test.pypi.org id.
    _rule(
        "PyPI API token",
        ("pypi-age",),
        "pypi-AgE" + _not_after(_TOKEN, 8) + r"(?P<t>[A-Za-z0-9_\-]{50,300})" + _NOT_BEFORE_TOKEN,
        _prefixed_token,
    ),
    _rule(
        "Hugging Face token",
        ("hf_",),
        "hf_" + _not_after(_WORD, 3) + r"(?P<v>[A-Za-z0-9]{34,40})" + _NOT_BEFORE_WORD,
        lambda m: _random_key(m["v"]),
    ),
    _rule(
        "Twilio API key",
        ("sk",),
        "SK" + _not_after(_WORD, 2) + r"(?P<t>[0-9a-f]{32})" + _NOT_BEFORE_WORD,
        _prefixed_token,
    ),
    # The auth token is 32 bare hex digits: only the Twilio name next to it identifies it.
    _rule(
        "Twilio auth token",
        ("twilio",),
        r"twilio[A-Za-z0-9_.\-]{0,30}(?:token|secret)"
        + _ASSIGNED
        + r"(?P<t>[0-9a-f]{32})(?![0-9a-z])",
        _prefixed_token,
        flags=re.IGNORECASE,
    ),
    _rule(
        "SendGrid API key",
        ("sg.",),
        r"SG\."
        + _not_after(_TOKEN, 3)
        + r"(?P<t>[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})"
        + _NOT_BEFORE_TOKEN,
        _prefixed_token,
    ),
    _rule(
        "Discord webhook URL",
        ("discord",),
        r"discord(?:app)?\.com/api/webhooks/\d{17,20}/(?P<t>[A-Za-z0-9_\-]{60,80})",
        _prefixed_token,
    ),
    _rule(
        "JSON Web Token",
        ("eyj",),
        "(?P<h>eyJ"
        + _not_after(_TOKEN, 3)
        + r"[A-Za-z0-9_\-]{10,2000})\.[A-Za-z0-9_\-]{2,8000}\.[A-Za-z0-9_\-]{16,2000}"
        + _NOT_BEFORE_TOKEN,
        _jwt_header,
    ),
    _rule(
        "Discord bot token",
        (),
        r"\.[A-Za-z0-9_\-]{6,7}\.[A-Za-z0-9_\-]{27,40}(?![A-Za-z0-9_\-.])",
        _discord_user_id,
        # A "." hint would send nearly every sentence through the pattern. Lower-casing maps
        # the ASCII letters onto the class, so every match's lower-cased text holds this.
        gate=r"\.[a-z0-9_\-]{6,7}\.[a-z0-9_\-]{27}",
    ),
    _rule(
        "bearer token",
        ("bearer",),
        "bearer"
        + _not_after(_ALNUM, 6)
        + r"[ \t]{1,4}(?P<v>[A-Za-z0-9_\-.~+/]{12,1000}={0,2})(?![A-Za-z0-9_\-.~+/=])",
        lambda m: _random_key(m["v"]),
        flags=re.IGNORECASE,
    ),
    # Anchored on "://" (the scheme does not matter). Neither part may hold ":" or "@" (a URL
    # percent-encodes them), so each ends at its first delimiter and nothing backtracks.
    _rule(
        "URL with inline password",
        ("://",),
        r"""://(?P<user>[^\s:/?#@'"<>]{0,100}):(?P<pw>[^\s:/?#@'"<>]{1,200})@""",
        _url_password,
    ),
    _rule(
        "password assignment",
        ("pass",),
        r"pass(?:word|wd|phrase)" + _ASSIGNED_VALUE,
        _assigned_password,
        flags=re.IGNORECASE,
    ),
    _rule(
        "API key assignment",
        ("key",),
        r"(?:api|access|auth)[_\-]?key" + _ASSIGNED_VALUE,
        _assigned_key,
        flags=re.IGNORECASE,
    ),
    _rule(
        "token assignment",
        ("token",),
        r"token" + _ASSIGNED_VALUE,
        _assigned_key,
        flags=re.IGNORECASE,
    ),
    _rule(
        "secret assignment",
        ("secret", "private"),
        r"(?:secret|private[_\-]?key)(?:[_\-]?key)?" + _ASSIGNED_VALUE,
        _assigned_key,
        flags=re.IGNORECASE,
    ),
)


# Characters that do not show and so can split a token without a reader noticing: format
# characters (zero-width space, joiners, soft hyphen, bidi controls), combining marks, controls
# other than whitespace, private use and unassigned code points.
_HIDDEN_CATEGORIES: Final = frozenset({"Cf", "Mn", "Me", "Cc", "Co", "Cn", "Cs"})


def _visible(text: str) -> str:
    # Compatibility decomposition folds full-width letters (U+FF47 "g") onto the ASCII a rule
    # looks for and splits accented letters, so a combining mark glued on (Y + U+0301) drops off.
    normal = unicodedata.normalize("NFKD", text)
    return "".join(
        char
        for char in normal
        if char.isspace() or unicodedata.category(char) not in _HIDDEN_CATEGORIES
    )


def find_secret(text: str) -> str | None:
    """Return the kind of the first secret-shaped string in text, or None.

    The kind is a short name such as ``"AWS access key id"``. Rules are tried from the most
    specific to the most general, so the kind names the vendor whenever a vendor prefix is
    present. The matched value itself is never returned. Text holding characters that do not
    show (a token split by a zero-width space) is scanned a second time without them.
    """
    kind = _find_in(text)
    if kind is None and not (text.isascii() and text.isprintable()):
        visible = _visible(text)
        if visible != text:
            kind = _find_in(visible)
    return kind


#: Every rule's hints once: each is looked for once per text, not once per rule.
_ALL_HINTS: Final = tuple(sorted({hint for rule in _RULES for hint in rule.hints}))


#: The rules that a gate pattern admits rather than hints, by their place in _RULES.
_GATED: Final = tuple((index, rule) for index, rule in enumerate(_RULES) if rule.gate is not None)


def _find_in(text: str) -> str | None:
    lowered = text.lower()
    present = {hint for hint in _ALL_HINTS if hint in lowered}
    gated = {index for index, rule in _GATED if rule.gate is not None and rule.gate.search(lowered)}
    return _matched(text, _candidates(present, gated))


#: Each hint's rules, by their place in _RULES.
_RULES_BY_HINT: Final = {
    hint: frozenset(index for index, rule in enumerate(_RULES) if hint in rule.hints)
    for hint in _ALL_HINTS
}


def _candidates(hints: Iterable[str], gated: Iterable[int]) -> list[_Rule]:
    """The rules a text's hints and the gates it holds (rules by place) call for, in their
    order in _RULES (the most specific first)."""
    indexes = set(gated)
    for hint in hints:
        indexes |= _RULES_BY_HINT[hint]
    return [_RULES[index] for index in sorted(indexes)]


def _matched(text: str, rules: Iterable[_Rule]) -> str | None:
    for rule in rules:
        for match in rule.pattern.finditer(text):
            if rule.accept(match):
                return rule.kind
    return None


def secret_kinds(texts: Iterable[str]) -> dict[str, str]:
    """The kind :func:`find_secret` gives each secret-shaped text among ``texts``, by text
    (the others are left out); each distinct text is scanned once."""
    found: dict[str, str] = {}
    for text in dict.fromkeys(texts):
        kind = find_secret(text)
        if kind is not None:
            found[text] = kind
    return found


def scan_fields(fields: Mapping[str, object]) -> tuple[str, str] | None:
    """Return (field_path, kind) of the first secret in fields, or None.

    Walks string values, lists of strings (field path like ``steps[2]``) and nested dicts
    (``meta.note``). Values of other types (numbers, booleans, None) are skipped.
    """
    for name, value in fields.items():
        hit = _scan_value(str(name), value)
        if hit is not None:
            return hit
    return None


def _scan_value(path: str, value: object) -> tuple[str, str] | None:
    if isinstance(value, str):
        kind = find_secret(value)
        return None if kind is None else (path, kind)
    if isinstance(value, Mapping):
        for name, item in value.items():
            hit = _scan_value(f"{path}.{name}", item)
            if hit is not None:
                return hit
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            hit = _scan_value(f"{path}[{index}]", item)
            if hit is not None:
                return hit
    return None


def check_fields(fields: Mapping[str, object]) -> None:
    """Raise SecretDetectedError(field_path, kind) on the first hit.

    :raises SecretDetectedError: naming the field and the kind of secret, never the value.
    """
    hit = scan_fields(fields)
    if hit is not None:
        raise SecretDetectedError(*hit)
