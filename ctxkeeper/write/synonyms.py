"""Words a rule can be restated with: classes of interchangeable words for tombstone matching.

A retired rule must not come back in other words ("Every request to the payment gateway must
carry an idempotency key" restates "Never call the payment provider without an idempotency
key"). Similarity counts shared words, so a restatement made of synonyms scores as a new rule.
Tombstone matching reads a candidate's word as the tombstone's word when both are in one class
here, as it reads an obvious misspelling (write/similarity.py); nothing else uses the classes,
so they never make two live entries look alike (dec-033-2411).

A class holds words that name the same thing or act in a rule about software, whatever the
domain. Words that change what a rule allows (may, must, never, skip) are never here: that is
polarity (write/polarity.py). The classes are kept small and are measured on the labelled pairs
(``python evals/similarity_eval.py``): a class that makes a related pair look like a
restatement goes.
"""

from __future__ import annotations

from typing import Final

from ctxkeeper.core.text import stem

_CLASSES: Final = (
    "call request invocation invoke",
    "provider gateway vendor processor",
    "carry include send attach",
    "delete remove erase",
    "database db",
    "configuration config settings",
    "credential secret",
    "deploy release ship",
    "every each all",
    "customer user client",
    "repository repo",
    "directory folder",
    "error exception failure",
)


def _classes() -> dict[str, int]:
    by_term: dict[str, int] = {}
    for number, words in enumerate(_CLASSES):
        for word in words.split():
            by_term[stem(word)] = number
    return by_term


#: The class of each word's stem.
SYNONYM_CLASS: Final = _classes()


def synonym_in(word: str, vocabulary: frozenset[str]) -> str | None:
    """The word of ``vocabulary`` in the same class as ``word`` (not ``word`` itself), if any."""
    number = SYNONYM_CLASS.get(stem(word))
    if number is None or word in vocabulary:
        return None
    for other in sorted(vocabulary):
        if other != word and SYNONYM_CLASS.get(stem(other)) == number:
            return other
    return None
