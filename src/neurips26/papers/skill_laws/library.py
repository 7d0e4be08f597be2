"""Skill libraries, routing queries and multi-step chains (the substitute data).

The paper measures 15 LLM routers on 1,141 real agent skills. Neither is available
offline, so this module builds a *structured synthetic* library with the three
features the paper's error taxonomy is about: skills grouped in families that share
vocabulary (so siblings compete), skill-specific keywords reused across families
(so routers can drift to another family), and a few broad catch-all "black-hole"
skills whose descriptions mix generic terms of many families. Every skill also has an
input and an output *state type*, so skills can be chained (the execution law).

Users can build a :class:`SkillLibrary` and :class:`QuerySet` from their own lists of
descriptions and queries; everything downstream only needs those two objects.

Deviations from the paper
-------------------------
- The library, its queries and its chains are generated (grade C substitute); the
  paper's real skills and LLM-written intents cannot be used offline.
- Paraphrase is template-based: verb synonyms, family-term synonyms, keyword dropout
  and sibling distractor words, instead of LLM rewrites.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import check_int, check_seed

from .vocab import (
    DESCRIPTION_BOILERPLATE,
    FAMILIES,
    FORMATS,
    GENERIC_PHRASES,
    KEYWORDS,
    QUERY_OPENERS,
    VERBS,
)

__all__ = [
    "ChainSet",
    "QuerySet",
    "SkillLibrary",
    "generate_chains",
    "generate_library",
    "generate_queries",
    "generic_draws",
    "tokenize",
]

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric tokens of ``text`` (the lexical routers' analyser).

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    list of str
        The tokens, in order.

    Raises
    ------
    TypeError
        ``text`` is not a ``str`` (``bytes`` included).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _TOKEN.findall(text.lower())


def _check_texts(texts: object, what: str) -> tuple[str, ...]:
    if isinstance(texts, str):
        raise TypeError(f"{what} must be a sequence of strings, not a single string")
    try:
        out = tuple(texts)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{what} must be a sequence of strings, got {type(texts).__name__}"
        ) from None
    if len(out) == 0:
        raise ValueError(f"{what} is empty; give at least one text")
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{what}[{i}] must be a str, got {type(t).__name__}")
    return out


@dataclass(frozen=True)
class SkillLibrary:
    """A library of ``N`` skills that a router chooses from.

    Parameters
    ----------
    names : tuple of str, length N
        Unique skill identifiers.
    descriptions : tuple of str, length N
        The text a router sees for each skill.
    families : ndarray of int, shape (N,)
        Family index of each skill (skills of one family are "siblings").
    family_names : tuple of str
        Name of each family index.
    black_holes : ndarray of int, shape (B,)
        Indices of designated black-hole (catch-all) skills; may be empty.
    inputs, outputs : tuple of str, length N, or None
        State types a skill consumes and produces (needed only for chains).

    Examples
    --------
    >>> lib = SkillLibrary.from_lists(["send an email", "book a flight"], families=[0, 1])
    >>> lib.num_skills
    2
    """

    names: tuple[str, ...]
    descriptions: tuple[str, ...]
    families: np.ndarray
    family_names: tuple[str, ...]
    black_holes: np.ndarray
    inputs: tuple[str, ...] | None = None
    outputs: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        names = _check_texts(self.names, "names")
        desc = _check_texts(self.descriptions, "descriptions")
        if len(names) != len(desc):
            raise ValueError(f"{len(names)} names but {len(desc)} descriptions")
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})[:5]
            raise ValueError(f"duplicate skill ids {dup}; skill names must be unique")
        fam = np.asarray(self.families)
        if fam.shape != (len(names),) or not np.issubdtype(fam.dtype, np.integer):
            raise ValueError(
                f"families must be an int array of shape ({len(names)},), got shape "
                f"{fam.shape} and dtype {fam.dtype}"
            )
        fnames = tuple(self.family_names)
        if fam.min() < 0 or fam.max() >= len(fnames):
            raise ValueError(f"family indices must lie in [0, {len(fnames)})")
        bh = np.asarray(self.black_holes, dtype=np.int64).reshape(-1)
        if bh.size and (bh.min() < 0 or bh.max() >= len(names)):
            raise ValueError(f"black_holes must index skills in [0, {len(names)})")
        for attr in ("inputs", "outputs"):
            val = getattr(self, attr)
            if val is not None:
                val = _check_texts(val, attr)
                if len(val) != len(names):
                    raise ValueError(f"{attr} has {len(val)} entries for {len(names)} skills")
                object.__setattr__(self, attr, val)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "descriptions", desc)
        object.__setattr__(self, "families", fam.astype(np.int64))
        object.__setattr__(self, "family_names", fnames)
        object.__setattr__(self, "black_holes", np.unique(bh))

    @classmethod
    def from_lists(
        cls,
        descriptions: Sequence[str],
        *,
        names: Sequence[str] | None = None,
        families: Sequence[int] | None = None,
        black_holes: Sequence[int] = (),
        inputs: Sequence[str] | None = None,
        outputs: Sequence[str] | None = None,
    ) -> SkillLibrary:
        """Build a library from plain lists (a user's own skills).

        Parameters
        ----------
        descriptions : list of str, length N
            Skill descriptions.
        names : list of str, optional
            Unique ids (default ``skill_0 ... skill_{N-1}``).
        families : list of int, optional
            Family index per skill (default: every skill its own family).
        black_holes : list of int
            Indices of known catch-all skills.
        inputs, outputs : list of str, optional
            State types, for chains.
        """
        desc = _check_texts(descriptions, "descriptions")
        blank = [i for i, t in enumerate(desc) if not t.strip()]
        if blank:
            raise ValueError(f"descriptions {blank[:5]} are empty; every skill needs a description")
        n = len(desc)
        names_t = tuple(names) if names is not None else tuple(f"skill_{i}" for i in range(n))
        fam = np.arange(n) if families is None else np.asarray(families)
        if fam.shape != (n,):
            raise ValueError(f"families must have length {n}, got shape {fam.shape}")
        num_f = int(fam.max()) + 1 if n else 0
        return cls(
            names=names_t,
            descriptions=desc,
            families=fam,
            family_names=tuple(f"family_{i}" for i in range(num_f)),
            black_holes=np.asarray(black_holes, dtype=np.int64),
            inputs=None if inputs is None else tuple(inputs),
            outputs=None if outputs is None else tuple(outputs),
        )

    @property
    def num_skills(self) -> int:
        """Library size ``N``."""
        return len(self.names)

    def is_black_hole(self) -> np.ndarray:
        """Boolean mask of shape (N,), true for black-hole skills."""
        mask = np.zeros(self.num_skills, dtype=bool)
        mask[self.black_holes] = True
        return mask

    def with_descriptions(self, descriptions: Sequence[str]) -> SkillLibrary:
        """The same library with new descriptions (used by the optimiser)."""
        return SkillLibrary(
            names=self.names,
            descriptions=tuple(descriptions),
            families=self.families,
            family_names=self.family_names,
            black_holes=self.black_holes,
            inputs=self.inputs,
            outputs=self.outputs,
        )


@dataclass(frozen=True)
class QuerySet:
    """Routing queries with their gold skills.

    Parameters
    ----------
    texts : tuple of str, length Q
        The user intents.
    gold : ndarray of int, shape (Q,)
        Index of the correct skill for each query.
    heldout : ndarray of bool, shape (Q,)
        True for the held-out (test) split, never used by the optimiser.
    """

    texts: tuple[str, ...]
    gold: np.ndarray
    heldout: np.ndarray

    def __post_init__(self) -> None:
        texts = _check_texts(self.texts, "query texts")
        gold = np.asarray(self.gold)
        if gold.shape != (len(texts),) or not np.issubdtype(gold.dtype, np.integer):
            raise ValueError(
                f"gold must be an int array of shape ({len(texts)},), got {gold.shape} {gold.dtype}"
            )
        held = np.asarray(self.heldout, dtype=bool)
        if held.shape != (len(texts),):
            raise ValueError(f"heldout must have shape ({len(texts)},), got {held.shape}")
        object.__setattr__(self, "texts", texts)
        object.__setattr__(self, "gold", gold.astype(np.int64))
        object.__setattr__(self, "heldout", held)

    @classmethod
    def from_lists(
        cls,
        texts: Sequence[str],
        gold: Sequence[int] | Sequence[str],
        library: SkillLibrary,
        *,
        heldout: Sequence[bool] | None = None,
    ) -> QuerySet:
        """Queries from plain lists; ``gold`` holds skill indices or skill names."""
        texts_t = _check_texts(texts, "query texts")
        gold_list = list(gold)
        if len(gold_list) != len(texts_t):
            raise ValueError(f"{len(texts_t)} queries but {len(gold_list)} gold labels")
        if gold_list and isinstance(gold_list[0], str):
            index = {n: i for i, n in enumerate(library.names)}
            missing = [g for g in gold_list if g not in index]
            if missing:
                raise ValueError(f"gold skills {missing[:5]} are not in the library")
            gold_arr = np.array([index[g] for g in gold_list], dtype=np.int64)
        else:
            gold_arr = np.asarray(gold_list, dtype=np.int64)
        qs = cls(
            texts=texts_t,
            gold=gold_arr,
            heldout=np.zeros(len(texts_t), bool) if heldout is None else np.asarray(heldout),
        )
        qs.check_against(library)
        return qs

    @property
    def num_queries(self) -> int:
        """Number of queries ``Q``."""
        return len(self.texts)

    def check_against(self, library: SkillLibrary) -> None:
        """Raise ValueError if a gold skill is missing from ``library``."""
        bad = (self.gold < 0) | (self.gold >= library.num_skills)
        if bad.any():
            raise ValueError(
                f"{int(bad.sum())} queries have a gold skill missing from the library of "
                f"{library.num_skills} skills (e.g. gold index {int(self.gold[bad][0])})"
            )

    def subset(self, mask: np.ndarray) -> QuerySet:
        """The queries where boolean ``mask`` (shape (Q,)) is true."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.num_queries,):
            raise ValueError(f"mask must have shape ({self.num_queries},), got {mask.shape}")
        if not mask.any():
            raise ValueError("the subset is empty")
        idx = np.flatnonzero(mask)
        return QuerySet(
            texts=tuple(self.texts[i] for i in idx),
            gold=self.gold[idx],
            heldout=self.heldout[idx],
        )


@dataclass(frozen=True)
class ChainSet:
    """Multi-step tasks: chains of skills whose states connect.

    Parameters
    ----------
    skills : tuple of ndarray of int
        Gold skill index per step of each chain (length K_c in 3..5).
    step_texts : tuple of tuple of str
        The step's intent as written in the task text ("before" state realisation).
    state_texts : tuple of tuple of str
        Text of the executed state after each step (the output type of the skill);
        the "after" query of step t is ``step_texts[t] + " given " + state_texts[t-1]``.
    """

    skills: tuple[np.ndarray, ...]
    step_texts: tuple[tuple[str, ...], ...]
    state_texts: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        if len(self.skills) == 0:
            raise ValueError("a ChainSet needs at least one chain")
        if not (len(self.skills) == len(self.step_texts) == len(self.state_texts)):
            raise ValueError("skills, step_texts and state_texts must have the same length")
        for c, (s, q, st) in enumerate(
            zip(self.skills, self.step_texts, self.state_texts, strict=True)
        ):
            if not (len(s) == len(q) == len(st)) or len(s) < 2:
                raise ValueError(f"chain {c} needs >= 2 steps with one text and state each")

    @property
    def num_chains(self) -> int:
        """Number of chains."""
        return len(self.skills)

    def check_against(self, library: SkillLibrary) -> None:
        """Raise ValueError if a chain references a skill not in ``library``."""
        for c, s in enumerate(self.skills):
            s = np.asarray(s)
            if s.min() < 0 or s.max() >= library.num_skills:
                raise ValueError(
                    f"chain {c} references unknown skill index {int(s.max())}; the library "
                    f"has {library.num_skills} skills"
                )


def _type_name(k: int) -> str:
    kw = KEYWORDS_UNIQUE[(7 * k + 3) % len(KEYWORDS_UNIQUE)]
    return f"{kw} {FORMATS[k % len(FORMATS)]}"


KEYWORDS_UNIQUE: tuple[str, ...] = tuple(dict.fromkeys(KEYWORDS))

#: Verbs and families named by each black-hole description.
_BH_BREADTH = 6

#: Words of a black hole's nominal part that are not verbs or family terms.
_BH_FILLER = frozenset({"can", "anything", "for", "any", "task"})


def generate_library(
    *,
    num_families: int = 40,
    skills_per_family: int = 30,
    black_hole_frac: float = 0.03,
    num_types: int | None = None,
    seed: int = 0,
) -> SkillLibrary:
    """Generate a hierarchical synthetic skill library.

    Each of ``num_families`` families has a vocabulary of four synonymous family terms;
    each skill gets a verb, 2-4 skill-specific keywords (reused across families), one
    or two family terms and a boilerplate phrase. About ``black_hole_frac`` of the
    skills are black holes: broad "general helper" descriptions that name 6 verbs and
    the family terms of 6 random families, and advertise generic help ("help with any
    task or request, whenever you need help with anything"): the vocabulary of the
    vague queries they capture (see ``generic_prob`` of :func:`generate_queries`).

    Parameters
    ----------
    num_families : int
        Number of families ``F`` (at most 40, the size of the hand-written vocabulary).
    skills_per_family : int
        Skills per family; the library has ``F * skills_per_family + B`` skills with
        ``B = round(black_hole_frac * F * skills_per_family)`` black holes.
    black_hole_frac : float
        Fraction of black holes, in [0, 0.5].
    num_types : int, optional
        Number of state types for the input/output signatures (default ``2 F``).
    seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    SkillLibrary
        Black holes form their own extra family ``"general"``.

    Examples
    --------
    >>> lib = generate_library(num_families=3, skills_per_family=4, seed=0)
    >>> lib.num_skills
    12
    """
    if not 1 <= num_families <= len(FAMILIES):
        raise ValueError(f"num_families must be in [1, {len(FAMILIES)}], got {num_families}")
    if skills_per_family < 1:
        raise ValueError(f"skills_per_family must be >= 1, got {skills_per_family}")
    if not 0.0 <= black_hole_frac <= 0.5:
        raise ValueError(f"black_hole_frac must be in [0, 0.5], got {black_hole_frac}")
    rng = np.random.default_rng(seed)
    num_types = 2 * num_families if num_types is None else num_types
    if num_types < 1:
        raise ValueError(f"num_types must be >= 1, got {num_types}")
    types = [_type_name(k) for k in range(num_types)]
    kw = np.array(KEYWORDS_UNIQUE)
    names, desc, fams, ins, outs = [], [], [], [], []
    for f in range(num_families):
        terms = FAMILIES[f]
        used: set[str] = set()
        for _ in range(skills_per_family):
            verb = VERBS[rng.integers(len(VERBS))][0]
            n_kw = int(rng.integers(2, 5))
            keys = list(rng.choice(kw, size=n_kw, replace=False))
            name = f"{terms[0]}_{verb}_{keys[0]}"
            while name in used:  # make ids unique within the family
                name = f"{name}_{len(used)}"
            used.add(name)
            fam_terms = list(rng.choice(terms, size=int(rng.integers(1, 3)), replace=False))
            it, ot = types[rng.integers(num_types)], types[rng.integers(num_types)]
            boiler = DESCRIPTION_BOILERPLATE[rng.integers(len(DESCRIPTION_BOILERPLATE))]
            text = (
                f"{name.replace('_', ' ')}: {verb} {' '.join(fam_terms)} {' '.join(keys)}; "
                f"{boiler}. takes a {it}, returns a {ot}."
            )
            names.append(name)
            desc.append(text)
            fams.append(f)
            ins.append(it)
            outs.append(ot)
    num_bh = round(black_hole_frac * num_families * skills_per_family)
    bh_idx = []
    for b in range(num_bh):
        fam_pick = rng.choice(num_families, size=min(_BH_BREADTH, num_families), replace=False)
        terms = [FAMILIES[f][int(rng.integers(4))] for f in fam_pick]
        verbs = [VERBS[v][0] for v in rng.choice(len(VERBS), size=_BH_BREADTH, replace=False)]
        it, ot = types[rng.integers(num_types)], types[rng.integers(num_types)]
        # the part before ";" is what the skill nominally does (its own queries ask for
        # it); the rest is the generic help that vague queries match
        text = (
            f"general helper {b}: can {', '.join(verbs)} anything for any "
            f"{', '.join(terms)} task; help with any task or request, whenever you need "
            f"help with anything. takes a {it}, returns a {ot}."
        )
        bh_idx.append(len(names))
        names.append(f"general_helper_{b}")
        desc.append(text)
        fams.append(num_families)
        ins.append(it)
        outs.append(ot)
    family_names = (*(FAMILIES[f][0] for f in range(num_families)), "general")
    return SkillLibrary(
        names=tuple(names),
        descriptions=tuple(desc),
        families=np.array(fams, dtype=np.int64),
        family_names=family_names,
        black_holes=np.array(bh_idx, dtype=np.int64),
        inputs=tuple(ins),
        outputs=tuple(outs),
    )


def _paraphrase(
    library: SkillLibrary,
    s: int,
    rng: np.random.Generator,
    keyword_dropout: float,
    distractor_prob: float,
    siblings: np.ndarray,
) -> str:
    """One paraphrased intent for skill ``s`` of a generated library."""
    name = library.names[s]
    desc_tokens = tokenize(library.descriptions[s])
    opener = QUERY_OPENERS[rng.integers(len(QUERY_OPENERS))]
    if s in set(library.black_holes.tolist()):
        # a black hole's own intents ask for one of the things it nominally does
        head = library.descriptions[s].split(";")[0]
        head = head.split(":", 1)[1] if ":" in head else head
        words = [w for w in tokenize(head) if w.isalpha() and w not in _BH_FILLER]
        if not words:
            words = [w for w in desc_tokens if w.isalpha()][:2] or [name]
        picked = rng.choice(words, size=min(2, len(words)), replace=False)
        keep = [str(w) for w in picked if rng.random() >= keyword_dropout] or [str(picked[0])]
        return f"{opener} {' '.join(keep)}"
    fam_idx = int(library.families[s])
    parts = name.split("_")
    verb = parts[1]
    syn = next((v for v in VERBS if v[0] == verb), (verb,))
    verb_text = syn[int(rng.integers(len(syn)))]  # synonym substitution
    # keywords: the ones listed after the verb and family terms in the description
    head = library.descriptions[s].split(";")[0].split(":")[1].split()
    fam_terms = set(FAMILIES[fam_idx]) if fam_idx < len(FAMILIES) else set()
    keys = [w for w in head[1:] if w not in fam_terms]
    kept = [k for k in keys if rng.random() >= keyword_dropout]  # keyword dropout
    fam_word = FAMILIES[fam_idx][int(rng.integers(4))] if fam_idx < len(FAMILIES) else parts[0]
    words = [fam_word, *kept]
    if siblings.size and rng.random() < distractor_prob:  # sibling distractor
        sib = int(rng.choice(siblings))
        sib_head = library.descriptions[sib].split(";")[0].split(":")[1].split()
        sib_keys = [w for w in sib_head[1:] if w not in fam_terms]
        if sib_keys:
            words.insert(int(rng.integers(len(words) + 1)), str(rng.choice(sib_keys)))
    return f"{opener} {verb_text} {' '.join(words)}"


def generic_draws(seed: int, num_queries: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The random draws that decide which queries are phrased generically.

    They come from their own stream (``default_rng([seed, 7919])``), apart from the
    paraphrase stream, so that for a fixed ``seed`` raising ``generic_prob`` only turns
    more of the same queries generic: query ``i`` is generic iff ``u[i] < generic_prob``
    (this is what makes :func:`~neurips26.papers.skill_laws.calibrate_black_holes`
    exact).

    Parameters
    ----------
    seed : int
        The ``seed`` given to :func:`generate_queries`.
    num_queries : int
        Number of queries ``Q`` (>= 0).

    Returns
    -------
    u : ndarray of float, shape (Q,)
        Uniform draws in [0, 1).
    phrase : ndarray of int, shape (Q,)
        Index into :data:`~neurips26.papers.skill_laws.vocab.GENERIC_PHRASES`.
    front : ndarray of bool, shape (Q,)
        True where the phrase opens the query rather than closing it.
    """
    num_queries = check_int(num_queries, "num_queries", min=0, max=10**8)
    rng = np.random.default_rng([check_seed(seed), 7919])
    u = rng.random(num_queries)
    phrase = rng.integers(len(GENERIC_PHRASES), size=num_queries)
    front = rng.random(num_queries) < 0.5
    return u, phrase, front


def generate_queries(
    library: SkillLibrary,
    *,
    per_skill: int = 5,
    keyword_dropout: float = 0.3,
    distractor_prob: float = 0.2,
    generic_prob: float = 0.0,
    heldout_frac: float = 0.6,
    seed: int = 0,
) -> QuerySet:
    """Paraphrased routing intents for every skill of a generated library.

    Each query keeps the skill's verb (or a synonym), one family term (a random
    synonym), each skill keyword with probability ``1 - keyword_dropout``, and with
    probability ``distractor_prob`` one keyword of a random sibling skill. With
    probability ``generic_prob`` the query is also phrased vaguely: it opens or closes
    with a generic request ("help with any task", "whenever you need help", ...), the
    words black-hole skills advertise. This is the generative knob of the black holes'
    capture rate (:func:`~neurips26.papers.skill_laws.calibrate_black_holes` sets it).

    Parameters
    ----------
    library : SkillLibrary
        A library from :func:`generate_library`.
    per_skill : int
        Queries per skill.
    keyword_dropout : float
        Probability in [0, 1] of dropping each skill keyword.
    distractor_prob : float
        Probability in [0, 1] of inserting a sibling's keyword.
    generic_prob : float
        Probability in [0, 1] that a query carries a generic request phrase; which
        queries do is fixed by :func:`generic_draws` (nested in ``generic_prob``).
    heldout_frac : float
        Fraction in (0, 1) of each skill's queries put in the held-out split.
    seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    QuerySet
        ``per_skill * N`` queries; ``heldout`` marks the test split.
    """
    if not isinstance(library, SkillLibrary):
        raise TypeError(f"library must be a SkillLibrary, got {type(library).__name__}")
    if per_skill < 1:
        raise ValueError(f"per_skill must be >= 1, got {per_skill}")
    for nm, p in (
        ("keyword_dropout", keyword_dropout),
        ("distractor_prob", distractor_prob),
        ("generic_prob", generic_prob),
    ):
        if not (0.0 <= p <= 1.0):
            raise ValueError(f"{nm} must be in [0, 1], got {p}")
    if not 0.0 < heldout_frac < 1.0:
        raise ValueError(f"heldout_frac must be in (0, 1), got {heldout_frac}")
    rng = np.random.default_rng(seed)
    texts, gold, held = [], [], []
    bh = library.is_black_hole()
    n_test = max(1, round(heldout_frac * per_skill)) if per_skill > 1 else 0
    for s in range(library.num_skills):
        siblings = np.flatnonzero((library.families == library.families[s]) & ~bh)
        siblings = siblings[siblings != s]
        for j in range(per_skill):
            texts.append(_paraphrase(library, s, rng, keyword_dropout, distractor_prob, siblings))
            gold.append(s)
            held.append(j >= per_skill - n_test)
    if generic_prob > 0:
        u, phrase, front = generic_draws(seed, len(texts))
        for i in np.flatnonzero(u < generic_prob):
            g = GENERIC_PHRASES[phrase[i]]
            texts[i] = f"{g}: {texts[i]}" if front[i] else f"{texts[i]}, {g}"
    return QuerySet(texts=tuple(texts), gold=np.array(gold), heldout=np.array(held))


def generate_chains(
    library: SkillLibrary,
    *,
    num_chains: int = 300,
    chain_len: tuple[int, int] = (3, 5),
    keyword_dropout: float = 0.3,
    distractor_prob: float = 0.2,
    seed: int = 0,
) -> ChainSet:
    """Chains of skills in which step ``t+1`` consumes the state step ``t`` produced.

    A chain is a random walk on the state-type graph: the next skill is drawn among the
    non-black-hole skills whose input type equals the previous skill's output type.
    The state after a step is the text of its output type.

    Parameters
    ----------
    library : SkillLibrary
        Needs ``inputs`` and ``outputs`` (a generated library has them).
    num_chains : int
        Number of chains.
    chain_len : (int, int)
        Inclusive range of chain lengths ``K`` (the paper: 3-5).
    keyword_dropout, distractor_prob : float
        Paraphrase settings of the step texts, as in :func:`generate_queries`.
    seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    ChainSet
    """
    if library.inputs is None or library.outputs is None:
        raise ValueError("chains need a library with inputs and outputs (state types)")
    if num_chains < 1:
        raise ValueError(f"num_chains must be >= 1, got {num_chains}")
    lo, hi = chain_len
    if not 2 <= lo <= hi:
        raise ValueError(f"chain_len must satisfy 2 <= min <= max, got {chain_len}")
    for nm, p in (("keyword_dropout", keyword_dropout), ("distractor_prob", distractor_prob)):
        if not (0.0 <= p <= 1.0):
            raise ValueError(f"{nm} must be in [0, 1], got {p}")
    rng = np.random.default_rng(seed)
    bh = library.is_black_hole()
    consumers: dict[str, np.ndarray] = {}
    for s in np.flatnonzero(~bh):
        consumers.setdefault(library.inputs[s], []).append(int(s))  # type: ignore[arg-type]
    consumers = {k: np.array(v) for k, v in consumers.items()}
    starts = np.flatnonzero(~bh)
    skills, steps, states = [], [], []
    while len(skills) < num_chains:
        k = int(rng.integers(lo, hi + 1))
        chain = [int(rng.choice(starts))]
        while len(chain) < k:
            nxt = consumers.get(library.outputs[chain[-1]])
            if nxt is None:
                break
            chain.append(int(rng.choice(nxt)))
        if len(chain) < k:
            continue
        skills.append(np.array(chain, dtype=np.int64))
        steps.append(
            tuple(
                _paraphrase(
                    library,
                    s,
                    rng,
                    keyword_dropout,
                    distractor_prob,
                    np.flatnonzero((library.families == library.families[s]) & ~bh),
                )
                for s in chain
            )
        )
        states.append(tuple(f"a {library.outputs[s]}" for s in chain))
    return ChainSet(skills=tuple(skills), step_texts=tuple(steps), state_texts=tuple(states))
