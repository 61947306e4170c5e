"""The top level of a stored document validated property by property (documents._validate_top, each value found
valid once not validated again) rejects exactly what schemas.pages.validate_page rejects, with its message."""

from __future__ import annotations

import pytest

from schemas.pages import PageError, validate_page
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
