"""Errors raised from this package: one base class, each failure a subclass with its facts."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject


class CtxkeeperError(Exception):
    """Base class of every error ctxkeeper raises on purpose.

    The message is built once, from structured attributes, and is written for the person or
    agent who has to act on it: what was refused, why, and what to do instead.
    """

    #: A short machine-readable code (``below_floor``, ``previously_rejected``...) that the MCP
    #: server and ``--json`` output carry next to the message.
    code: str = "error"


class UsageError(CtxkeeperError, ValueError):
    """A caller passed arguments that cannot be acted on (bad id, unknown field, bad time)."""

    code = "invalid_argument"


class NotFoundError(CtxkeeperError, LookupError):
    """No entry has the requested id."""

    code = "not_found"

    def __init__(self, entry_id: str) -> None:
        self.entry_id = entry_id
        super().__init__(f"no entry with id {entry_id!r}; list ids with `ctxkeeper list`")


class ValidationError(CtxkeeperError, ValueError):
    """An entry does not satisfy the model (missing field, wrong type, closed vocabulary)."""

    code = "invalid_entry"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        super().__init__(message)


class BelowFloorError(ValidationError):
    """A text field is shorter than its floor: the entry does not explain itself."""

    code = "below_floor"

    def __init__(
        self, kind: str, field: str, length: int, minimum: int, *, unit: str = "characters"
    ) -> None:
        self.kind = kind
        self.length = length
        self.minimum = minimum
        counted = (
            " (counted as read: invisible characters do not count, and a run of spaces, of "
            "punctuation or of one repeated word counts once)"
            if unit == "characters"
            else ""
        )
        super().__init__(
            f"{kind} field {field!r} is {length} {unit}; the minimum is {minimum}{counted}. "
            "Say more: an entry must explain itself to someone who was not there.",
            field=field,
        )


class TooLongError(ValidationError):
    """A field is longer than every door can carry back (the MCP schema's ``maxLength``)."""

    code = "too_long"

    def __init__(self, field: str, length: int, maximum: int, *, unit: str = "characters") -> None:
        self.length = length
        self.maximum = maximum
        super().__init__(
            f"field {field!r} is {length:,} {unit}; the maximum is {maximum:,}, so that every "
            "door (CLI, MCP, snapshot) can return it. Keep the entry to what a reader needs and "
            "point to a document for the rest; nothing was stored.",
            field=field,
        )


class ControlCharacterError(ValidationError):
    """A field holds a control or bidirectional character that would change what a terminal shows."""

    code = "control_character"

    def __init__(self, field: str, char: str, *, multiline_fields: str = "") -> None:
        self.codepoint = f"U+{ord(char):04X}"
        allowed = (
            f" (newline and tab are allowed only in {multiline_fields})" if multiline_fields else ""
        )
        super().__init__(
            f"field {field!r} contains the control character {self.codepoint}, which can make a "
            f"terminal show something other than what is stored; remove it{allowed}. "
            "Nothing was stored.",
            field=field,
        )


class SecretDetectedError(ValidationError):
    """Text contains something shaped like a credential; the value is never echoed."""

    code = "secret_detected"

    def __init__(self, field: str, secret_kind: str) -> None:
        self.secret_kind = secret_kind
        super().__init__(
            f"field {field!r} contains something shaped like a secret ({secret_kind}); nothing "
            "was stored. "
            "Remove the value (describe where the secret lives instead) and try again.",
            field=field,
        )


class StateError(CtxkeeperError):
    """The operation is not allowed in the entry's current status (frozen, tombstoned...)."""

    code = "invalid_state"


class StaleVerdictError(StateError):
    """What a person's verdict decides changed after it was shown to them (issue 22): the
    verdict is refused so that what a person approves is what they saw."""

    code = "stale_verdict"

    def __init__(self, verb: str, token: str, now: JSONObject) -> None:
        self.verb = verb
        self.token = token
        self.now = now
        """What the verdict would decide now (see ``ctxkeeper.cli.review.verdict_subject``)."""
        super().__init__(
            f"{token} changed after it was shown to you, so this {verb} would decide a version "
            "you did not see; nothing was written. Look at the version it holds now and decide "
            "again"
        )


class PersonOnlyError(CtxkeeperError):
    """A verb only a person at their own terminal may run was started by an agent or a script."""

    code = "person_only"


class CancelledError(CtxkeeperError):
    """A person answered anything but yes to a confirmation; nothing was changed."""

    code = "cancelled"


class PreviouslyRejectedError(CtxkeeperError):
    """The content matches a tombstone (a deprecated or rejected entry)."""

    code = "previously_rejected"

    def __init__(self, tombstone_id: str, status: str, reason: str, similarity: float) -> None:
        # The reason is echoed to whoever writes next, so a credential pasted into it once
        # must not travel on (a cycle-free import: secretscan imports this module).
        from ctxkeeper.core.secretscan import find_secret

        secret_kind = find_secret(reason)
        if secret_kind is not None:
            reason = f"(withheld: it contains something shaped like a secret, {secret_kind})"
        self.tombstone_id = tombstone_id
        self.status = status
        self.reason = reason
        self.similarity = similarity
        advice = (
            "it stays refused"
            if status == "purged"
            else f"if circumstances changed, ask a person to run `ctxkeeper lift {tombstone_id}`"
        )
        super().__init__(
            f"previously_rejected: this matches {tombstone_id} ({status}; similarity "
            f"{similarity:.2f}). Its reason: {reason} -- Do not re-record it; {advice}."
        )


class StoreError(CtxkeeperError):
    """The store on disk cannot be used as it is (corrupt, unsafe, unknown version)."""

    code = "store_error"


class CorruptFileError(StoreError):
    """A store file does not parse; it is never overwritten."""

    code = "corrupt_store"

    def __init__(self, path: str, line: int, column: int, detail: str) -> None:
        self.path = path
        self.line = line
        self.column = column
        super().__init__(
            f"{path}:{line}:{column}: {detail}. The file was left untouched; fix it by hand "
            "or run `ctxkeeper doctor` to see how to repair it."
        )


class UnsafeStoreError(StoreError):
    """The store is a symlink or resolves outside the project root (untrusted checkout)."""

    code = "unsafe_store"


class LockTimeoutError(StoreError):
    """Another process held the store lock for too long."""

    code = "lock_timeout"


class SnapshotError(StoreError):
    """A team snapshot cannot be read or written as it is; nothing was written."""

    code = "bad_snapshot"

    def __init__(self, path: str, line: int | None, detail: str) -> None:
        self.path = path
        self.line = line
        self.detail = detail
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {detail}. Nothing was written.")


class ProjectionError(CtxkeeperError):
    """A projection (``export rules|markdown|agents``) would overwrite a file that is not
    ctxkeeper's, write through a link or outside the project root; nothing was written."""

    code = "projection_refused"
