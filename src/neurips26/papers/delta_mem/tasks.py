"""Multi-episode recall dialogues, a word tokenizer and the lexical-retrieval baseline.

A dialogue is a stream of short episodes (one context window each); its last episode asks
about a fact stated in an earlier one, so the fact is never in the query's window. Three
families, as in the spec:

- ``"recall"``: ``"Alice likes tea."``, distractor episodes, then the query;
- ``"overwrite"``: the fact, then ``"Alice now likes milk."`` later; the latest value is
  the answer (the delta rule's erase);
- ``"multi"``: two to four facts about different people, one of them queried.

The query ends in ``"... Answer: Alice likes"`` and the answer is the next token (the
value word). Scores are accuracies over the candidate values (the highest logit among the
values' first tokens), so chance is ``1 / num_values``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import check_int, check_rng

FAMILIES = ("recall", "overwrite", "multi")
NAMES = ("Alice", "Bob", "Carol", "Dave", "Emma", "Frank", "Grace", "Henry", "Ivy", "Jack",
         "Kate", "Liam")  # fmt: skip
VALUES = ("tea", "milk", "coffee", "juice", "water", "soup", "rice", "bread", "cake",
          "fish", "jam", "honey", "corn", "pie", "salt", "wine")  # fmt: skip
PLACES = ("park", "shop", "office", "beach", "school", "library", "station", "garden")
WEATHER = ("sunny", "cold", "rainy", "windy", "warm", "cloudy")


def fact_text(name: str, value: str) -> str:
    return f"{name} likes {value}."


def update_text(name: str, value: str) -> str:
    return f"{name} now likes {value}."


def query_text(name: str) -> str:
    return f"Question: what does {name} like? Answer: {name} likes"


@dataclass(frozen=True)
class Dialogue:
    """One dialogue: ``episodes[-1]`` is the query, ``answer`` its value word.

    Attributes
    ----------
    family : str
    episodes : tuple of str
        One window each, in order.
    answer : str
        The value the query asks for (the latest one in ``"overwrite"``).
    stale : str or None
        The overwritten value (``"overwrite"`` only).
    """

    family: str
    episodes: tuple[str, ...]
    answer: str
    stale: str | None = None

    @property
    def query(self) -> str:
        return self.episodes[-1]

    @property
    def history(self) -> tuple[str, ...]:
        return self.episodes[:-1]


def _distractor(rng: np.random.Generator, names: Sequence[str]) -> str:
    name = names[int(rng.integers(len(names)))]
    if rng.random() < 0.5:
        return f"{name} went to the {PLACES[int(rng.integers(len(PLACES)))]}."
    return f"It is {WEATHER[int(rng.integers(len(WEATHER)))]} today, said {name}."


def make_dialogues(num: int, family: str, *, num_episodes: int = 4, num_names: int = 8,
                   num_values: int = 8, rng) -> list[Dialogue]:  # fmt: skip
    """Draw ``num`` dialogues of one family.

    Parameters
    ----------
    num : int
    family : {"recall", "overwrite", "multi"}
    num_episodes : int
        Episodes per dialogue, the query included (>= 3).
    num_names, num_values : int
        Sizes of the name and value pools (chance accuracy is ``1 / num_values``).
    rng : numpy.random.Generator

    Returns
    -------
    list of Dialogue

    Examples
    --------
    >>> d = make_dialogues(1, "overwrite", num_episodes=4, rng=np.random.default_rng(0))[0]
    >>> len(d.episodes), d.answer != d.stale, d.query.endswith("likes")
    (4, True, True)
    """
    num = check_int(num, "num", min=1, max=1_000_000)
    if family not in FAMILIES:
        raise ValueError(f"family: expected one of {FAMILIES}, got {family!r}")
    num_episodes = check_int(num_episodes, "num_episodes", min=3, max=10_000)
    num_names = check_int(num_names, "num_names", min=4, max=len(NAMES))
    num_values = check_int(num_values, "num_values", min=2, max=len(VALUES))
    rng = check_rng(rng, "rng")
    names, values = NAMES[:num_names], VALUES[:num_values]
    out = []
    for _ in range(num):
        eps = [_distractor(rng, names) for _ in range(num_episodes - 1)]
        person = names[int(rng.integers(num_names))]
        value = values[int(rng.integers(num_values))]
        stale = None
        if family == "recall":
            eps[0] = fact_text(person, value)
        elif family == "overwrite":
            stale = value
            value = values[(values.index(stale) + 1 + int(rng.integers(num_values - 1)))
                           % num_values]  # fmt: skip
            eps[0] = fact_text(person, stale)
            eps[int(rng.integers(1, num_episodes - 1))] = update_text(person, value)
        else:
            k = int(rng.integers(2, min(4, num_episodes - 1) + 1))
            people = rng.choice(num_names, size=k, replace=False)
            slots = np.sort(rng.choice(num_episodes - 1, size=k, replace=False))
            facts = [(names[int(p)], values[int(rng.integers(num_values))]) for p in people]
            for slot, (p, v) in zip(slots, facts, strict=True):
                eps[int(slot)] = fact_text(p, v)
            person, value = facts[int(rng.integers(k))]
        eps.append(query_text(person))
        out.append(Dialogue(family, tuple(eps), value, stale))
    return out


_WORD = re.compile(r"[A-Za-z]+|[^\sA-Za-z]")


def words(text: str) -> list[str]:
    """Words and punctuation marks of ``text`` (``"Bob likes tea."`` -> 4 items)."""
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    return _WORD.findall(text)


class WordTokenizer:
    """A word-level tokenizer over the dialogue vocabulary (for the tiny random LM).

    Ids ``0..vocab_size-1`` in sorted order of the vocabulary; unknown words map to 0.
    ``encode`` of a value word gives one id, as the answer scoring needs.

    >>> tok = WordTokenizer()
    >>> len(tok.encode("Bob likes tea.")), tok.decode(tok.encode("Bob likes tea."))
    (4, 'Bob likes tea .')
    """

    def __init__(self) -> None:
        vocab = set(NAMES) | set(VALUES) | set(PLACES) | set(WEATHER)
        for text in (fact_text("A", "b"), update_text("A", "b"), query_text("A"),
                     "A went to the b.", "It is b today, said A."):  # fmt: skip
            vocab |= set(words(text))
        self.vocab = ("<unk>", *sorted(vocab - {"A", "b"}))
        self.index = {w: i for i, w in enumerate(self.vocab)}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        return [self.index.get(w, 0) for w in words(text)]

    def decode(self, ids) -> str:
        return " ".join(self.vocab[int(i)] for i in ids)


def lexical_retrieve(history: Sequence[str], query: str) -> int:
    """Index of the past episode with the most words in common with ``query``.

    Words are compared lower-cased, punctuation dropped; ties go to the most recent
    episode (so a later update beats the fact it overwrites). A non-parametric memory.

    Parameters
    ----------
    history : sequence of str, non-empty
    query : str

    Returns
    -------
    int

    Examples
    --------
    >>> lexical_retrieve(["Bob likes tea.", "It is cold today, said Amy."],
    ...                  "Question: what does Bob like? Answer: Bob likes")
    0
    """
    if isinstance(history, str) or not isinstance(history, Sequence) or not history:
        raise ValueError("history: expected a non-empty sequence of str")
    if not all(isinstance(h, str) for h in history):
        raise TypeError("history: every entry must be a str")
    if not isinstance(query, str):
        raise TypeError(f"query: expected a str, got {type(query).__name__}")
    q = {w.lower() for w in words(query) if w.isalpha()}
    scores = [len(q & {w.lower() for w in words(h) if w.isalpha()}) for h in history]
    best = max(scores)
    return max(i for i, s in enumerate(scores) if s == best)


def all_texts(*, num_names: int = 8, num_values: int = 8) -> list[str]:
    """Every episode text :func:`make_dialogues` can produce with these pools (sorted).

    >>> len(all_texts(num_names=4, num_values=2))
    76
    """
    num_names = check_int(num_names, "num_names", min=4, max=len(NAMES))
    num_values = check_int(num_values, "num_values", min=2, max=len(VALUES))
    names, values = NAMES[:num_names], VALUES[:num_values]
    out = {query_text(n) for n in names}
    out |= {f(n, v) for n in names for v in values for f in (fact_text, update_text)}
    out |= {f"{n} went to the {p}." for n in names for p in PLACES}
    out |= {f"It is {w} today, said {n}." for n in names for w in WEATHER}
    return sorted(out)
