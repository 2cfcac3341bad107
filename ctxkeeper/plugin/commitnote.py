"""PostToolUse on Bash: after a commit whose message reads like a decision or a rule, one line.

The line suggests recording it with ``record_entry`` and names the kind. It never writes
anything: what is worth keeping is the agent's call, and a person reviews it.

Import-light on purpose (con-001-5f40).
"""

from __future__ import annotations

from ctxkeeper.plugin.shellwords import split_commands

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.plugin.hookio import HookContext

DECISION_CUES = (
    "we chose",
    "chose",
    "decided",
    "decide to",
    "switch to",
    "switched to",
    "switching to",
    "instead of",
    "because",
    "in favour of",
    "in favor of",
    "rather than",
)
RULE_CUES = ("never", "always", "must", "must not", "do not", "don't", "dont")
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_MESSAGE_CAP = 4000


def _words_of(text: str) -> str:
    # Lower-case, punctuation to spaces, padded: " must " matches whole words without `re`.
    kept = "".join(ch if ch.isalnum() or ch == "'" else " " for ch in text.lower())
    return " " + " ".join(kept.split()) + " "


def commit_message(words: list[str]) -> str | None:
    """The message of a ``git commit`` command (its ``-m``/``--message`` values), else None."""
    if not words or words[0].replace("\\", "/").rsplit("/", 1)[-1] != "git":
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in _GIT_VALUE_OPTIONS else 1
    if i >= len(words) or words[i] != "commit":
        return None
    parts: list[str] = []
    rest = words[i + 1 :]
    for n, word in enumerate(rest):
        if word in ("-m", "--message") and n + 1 < len(rest):
            parts.append(rest[n + 1])
        elif word.startswith("--message="):
            parts.append(word[len("--message=") :])
        elif word.startswith("-") and not word.startswith("--") and word.endswith("m"):
            if n + 1 < len(rest):  # bundles such as -am
                parts.append(rest[n + 1])
        elif word.startswith("-m") and len(word) > 2 and not word.startswith("--"):
            parts.append(word[2:])
    return "\n".join(parts) if parts else None


def classify(message: str) -> str | None:
    """``decision``, ``constraint``, ``decision or constraint``, or None for an ordinary message."""
    text = _words_of(message[:_MESSAGE_CAP])
    decision = any(f" {cue} " in text for cue in DECISION_CUES)
    rule = any(f" {cue} " in text for cue in RULE_CUES)
    if decision and rule:
        return "decision or constraint"
    if decision:
        return "decision"
    return "constraint" if rule else None


def _succeeded(ctx: HookContext) -> bool:
    response = ctx.payload.get("tool_response")
    if not isinstance(response, dict):
        return True
    if response.get("interrupted") is True:
        return False
    out = response.get("stdout")
    return not (isinstance(out, str) and "nothing to commit" in out)


def handle(ctx: HookContext) -> JSONObject | None:
    """One line of ``additionalContext`` after a decision-like commit; None otherwise."""
    tool_input = ctx.payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        # As bashguard does: not what Claude Code documents for Bash, so logged (fail open).
        from ctxkeeper.plugin.hookio import HookInputError

        raise HookInputError("tool_input.command is missing or not a string")
    if "commit" not in command or not _succeeded(ctx):
        return None
    for words in split_commands(command):
        message = commit_message(words)
        kind = classify(message) if message else None
        if kind is None:
            continue
        kinds = " or ".join(repr(k) for k in kind.split(" or "))
        line = (
            f"ctxkeeper: the commit message just made reads like a {kind}; record_entry with "
            f"kind {kinds} would keep it, and its why, for later sessions."
        )
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": line}}
    return None
