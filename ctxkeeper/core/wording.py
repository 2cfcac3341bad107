"""Counts and lists in words, for every line a person or the agent reads: ``1 entry``,
``2 entries``, ``a, b or c``. Import-light: no imports at all."""

from __future__ import annotations


def counted(count: int, one: str, many: str | None = None) -> str:
    """``count`` with the noun that agrees with it: ``1 entry``, ``0 entries``.

    :param many: the plural when it is not ``one`` + ``s``.
    """
    return f"{count} {one if count == 1 else (many or one + 's')}"


def listed(words: list[str], conjunction: str = "or") -> str:
    """Words joined for a sentence: ``a``, ``a or b``, ``a, b or c``."""
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {conjunction} {words[-1]}"
