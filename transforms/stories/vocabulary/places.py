"""The places an article reports from, as the story writer keeps them: chains of gazetteer keys.

Reads title + the start of the body (where a report names the event's city: a dateline, the first sentence);
writes a tuple of chains ``"gn:5399020>gn:5332921>gn:6252001>..."`` (a place's key, then the keys of the places
containing it, nearest first), one per most specific place (:func:`transforms.articles.places.leaves`). The chains
carry the hierarchy, so two articles' places are compared without the gazetteer (:func:`relation`): the writer's
state and a restored writer hold them as plain strings.

Why: events of one kind on one day (shootings in Stockton, Indianapolis and Richmond) read alike in every similarity
the writer has; where they happened is what tells them apart. Measured on gva-dev (title + first 600 characters):
78 % of articles name a place; of same-event pairs 51 % name the same place and 13 % conflicting ones (gazetteer
misreads such as "Male", neighbouring towns), of different events of one day 1 % the same and 58 % conflicting.
Evidence for the learned pair score (its ``places`` feature), not a veto.

Local places (streets, courts, housing projects: :mod:`transforms.stories.vocabulary.streets`) ride along as
``"@<name>"`` entries (so the writer's state and a restored writer keep them with no new field) and decide where the
gazetteer says nothing (:func:`relation`): two shootings of one day in "Mosby Court" and "the 4300 block of West
Monroe Street" conflict, reports of one that name its street agree. Where the two levels disagree the relation is 0:
one city and two streets is as often two reports of one shooting as two shootings on gva-dev (same-event pairs 19,
different 32 of the pairs at most 72 h apart), and a shared street under two gazetteer places a misread (22 against
2). The pair score is fitted on the gazetteer relation alone (:func:`gazetteer_matrix`; a fit on both moved the
places weight of every fold, and BASIL and ECB+ with it, docs/stories.md); the writer decides on both.
"""

from __future__ import annotations

import numpy as np

from transforms.stories.vocabulary import streets

PLACE_CHARS = 600  # the start of the body read for places: the dateline and the first sentences
LOCAL = "@"  # marks a local place name among the chains (transforms/stories/vocabulary/streets.py)
# Marks a person's surname that the gazetteer would have read as a city (transforms/articles/places.py surnames:
# "Esteban Santiago" ... "Santiago"): shared, it is what the misread city shared was (the same +1); never a conflict.
NAME = "~"


def chains(title: str, body: str, language: str, entities: list[dict] | None = None) -> tuple[str, ...]:
    """The article's most specific places as key chains (module docstring), sorted, then its local places (streets,
    courts, neighbourhoods: :mod:`transforms.stories.vocabulary.streets`) as ``"@<name>"`` entries."""
    from transforms.articles import places as P

    names: tuple[str, ...] = ()
    if entities is None:
        found, names = P.places_and_surnames(title or "", (body or "")[:PLACE_CHARS], language or "und")
    else:
        found = P.places_of(title or "", (body or "")[:PLACE_CHARS], language or "und", entities)
    local = streets.local_places(title or "", body or "", language or "und")
    gazetteer = sorted(">".join((p.key, *p.parents)) for p in P.leaves(found))
    return (*gazetteer, *sorted(LOCAL + n for n in local), *sorted({NAME + P.fold(n) for n in names}))


def relation(a, b) -> float:
    """The places relation of two articles: their gazetteer relation (:func:`gazetteer_relation`) where either names
    no local place, their local relation (:func:`transforms.stories.vocabulary.streets.relation`) where the gazetteer
    says nothing (0), and 0 where the two disagree (one city, two streets; a gazetteer misread, one street)."""
    return float(_combine(gazetteer_relation(a, b), streets.relation(_local(a), _local(b))))


def gazetteer_relation(a, b) -> float:
    """+1 when two sets of chains share a most specific place, -1 when no place of one lies in (or contains) a place
    of the other, 0 when either names none or they are only compatible (a city and its state)."""
    if _names(a) & _names(b):
        return 1.0
    a, b = _chains(a), _chains(b)
    if not a or not b:
        return 0.0
    la = {c.split(">", 1)[0] for c in a}
    lb = {c.split(">", 1)[0] for c in b}
    if la & lb:
        return 1.0
    wa = {k for c in a for k in c.split(">")}
    wb = {k for c in b for k in c.split(">")}
    if la & wb or lb & wa:
        return 0.0
    return -1.0


def _chains(places) -> list[str]:
    return [c for c in places if not c.startswith((LOCAL, NAME))]


def _names(places) -> frozenset[str]:
    return frozenset(c for c in places if c.startswith(NAME))


def _local(places) -> frozenset[str]:
    return frozenset(c for c in places if c.startswith(LOCAL))


def _combine(gazetteer, local):
    """Gazetteer and local relations (numbers or arrays) as one: either where the other is 0, else 0 unless equal."""
    return np.where(local == 0, gazetteer, np.where(gazetteer == 0, local, np.where(gazetteer == local, local, 0.0)))


def relation_matrix(rows_a: list, rows_b: list | None = None) -> np.ndarray:
    """:func:`relation` between every place set of ``rows_a`` and of ``rows_b`` (default: ``rows_a``), vectorised."""
    rows_b = rows_a if rows_b is None else rows_b
    if not any(rows_a) or not any(rows_b):
        return np.zeros((len(rows_a), len(rows_b)))
    return _combine(gazetteer_matrix(rows_a, rows_b), _local_matrix(rows_a, rows_b))


def _local_matrix(rows_a: list, rows_b: list) -> np.ndarray:
    la, lb = [_local(r) for r in rows_a], [_local(r) for r in rows_b]
    if not any(la) or not any(lb):
        return np.zeros((len(rows_a), len(rows_b)))
    shared = _shared(rows_a, rows_b, _local)
    known = np.array([bool(r) for r in la])[:, None] & np.array([bool(r) for r in lb])[None, :]
    return np.where(~known, 0.0, np.where(shared, 1.0, -1.0))


def _shared(rows_a: list, rows_b: list, part) -> np.ndarray:
    """Whether each row of ``rows_a`` shares an entry of ``part`` (:func:`_local`, :func:`_names`) with each of
    ``rows_b``."""
    la, lb = [part(r) for r in rows_a], [part(r) for r in rows_b]
    if not any(la) or not any(lb):
        return np.zeros((len(rows_a), len(rows_b)), dtype=bool)
    vocab = {k: i for i, k in enumerate(sorted(set().union(*la, *lb)))}

    def mat(rows):
        m = np.zeros((len(rows), len(vocab)))
        for i, r in enumerate(rows):
            m[i, [vocab[k] for k in r]] = 1.0
        return m

    return (mat(la) @ mat(lb).T) > 0


def gazetteer_matrix(rows_a: list, rows_b: list) -> np.ndarray:
    """:func:`gazetteer_relation` between every place set of ``rows_a`` and of ``rows_b``, vectorised."""
    named = _shared(rows_a, rows_b, _names)
    rows_a, rows_b = [_chains(r) for r in rows_a], [_chains(r) for r in rows_b]
    if not any(rows_a) or not any(rows_b):
        return np.where(named, 1.0, 0.0)
    vocab: dict[str, int] = {}
    for r in (*rows_a, *rows_b):
        for c in r:
            for k in c.split(">"):
                vocab.setdefault(k, len(vocab))

    def mats(rows):
        leaf = np.zeros((len(rows), len(vocab)))
        within = np.zeros((len(rows), len(vocab)))
        for i, r in enumerate(rows):
            for c in r:
                keys = c.split(">")
                leaf[i, vocab[keys[0]]] = 1.0
                within[i, [vocab[k] for k in keys]] = 1.0
        return leaf, within

    la, wa = mats(rows_a)
    lb, wb = mats(rows_b)
    same = (la @ lb.T) > 0
    compatible = ((la @ wb.T) > 0) | ((wa @ lb.T) > 0)
    known = np.array([bool(r) for r in rows_a])[:, None] & np.array([bool(r) for r in rows_b])[None, :]
    return np.where(named | same, 1.0, np.where(~known | compatible, 0.0, -1.0))
