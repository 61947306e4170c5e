"""The top level of a stored document validated property by property (documents._validate_top, each value found
valid once not validated again) rejects exactly what schemas.pages.validate_page rejects, with its message."""

from __future__ import annotations

import pytest

from schemas.pages import PageError, validate_page
from tests.transforms.editions.test_validate_parts import counted_validations
from transforms.editions.vocabulary import documents


def _page(**kw) -> dict:
    doc = {
        "schema": "newsroom.edition_page/v1",
        "edition": "us-en",
        "section": "top",
        "version": 28_000_000,
        "cycle": "2024-03-01T12:00:00Z",
        "generated_at": "2024-03-01T12:00:00Z",
        "stories": [],
    }
    doc.update(kw)
    return {k: v for k, v in doc.items() if v is not None}


@pytest.mark.parametrize(
    "doc",
    [
        _page(version=0),  # below the minimum
        _page(version="7"),
        _page(cycle="yesterday"),  # not a date-time
        _page(edition="USA"),
        _page(generated_at=None),  # a required property missing
        _page(extra=1),  # not allowed
    ],
)
def test_the_same_documents_are_rejected_with_the_same_message(doc):
    documents._validate_top("edition_page", _page())  # the valid values are remembered first
    with pytest.raises(PageError) as full:
        validate_page("edition_page", doc)
    with pytest.raises(PageError) as parts:
        documents._validate_top("edition_page", doc)
    assert str(parts.value) == str(full.value)


def test_a_valid_top_level_passes_and_new_minutes_are_checked():
    for minute in range(3):
        documents._validate_top("edition_page", _page(version=28_000_000 + minute))
    with pytest.raises(PageError):
        documents._validate_top("edition_page", _page(version=-1))


def _pool(**figures) -> dict:
    concentration = {"index": 0.5, "groups_index": 0.25, "day_groups_index": 0.125, "publishers": 3, "capped": []}
    concentration.update(figures)
    concentration = {k: v for k, v in concentration.items() if v is not None}
    top = {"schema": "newsroom.candidate_pool/v1", "edition": "us-en", "version": 28_000_000}
    return dict(top, cycle="2024-03-01T12:00:00Z", concentration=concentration, stories=[])


@pytest.mark.parametrize(
    "doc",
    [
        _pool(index=2),  # above the maximum
        _pool(index="0.5"),
        _pool(publishers=0.5),  # 0.5 is a valid index, not a publisher count: the memo keys the figure's name
        _pool(publishers=True),
        _pool(capped=[1]),
        _pool(publishers=None),  # a required figure missing
        _pool(extra=1),  # a figure not allowed
        dict(_pool(), concentration=[0.5]),  # not an object
        dict(_pool(), concentration={1: 0.5}),  # a key that is not a string: the whole value checked
    ],
)
def test_a_pools_concentration_is_checked_figure_by_figure_with_the_same_verdicts(doc):
    """The pool's ``concentration`` (an object whose figures move every minute) is checked property by property
    (documents._nested_validators): what its schema rejects is rejected, with validate_page's message."""
    validate_page("candidate_pool", _pool())
    documents._validate_top("candidate_pool", _pool())  # every good figure remembered first
    with pytest.raises(PageError) as full:
        validate_page("candidate_pool", documents.json.loads(documents.json.dumps(doc)))
    with pytest.raises(PageError) as parts:
        documents._validate_top("candidate_pool", doc)
    assert str(parts.value) == str(full.value)


def test_only_a_new_concentration_figure_is_validated(monkeypatch):
    validators = documents._nested_validators("candidate_pool")["concentration"][0]
    documents._validate_top("candidate_pool", _pool())
    calls = counted_validations(monkeypatch, validators)
    documents._validate_top("candidate_pool", _pool(index=0.75))
    assert calls == [0.75]
