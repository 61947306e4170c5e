"""Gazetteer misreads that cost gva-dev its joins (transforms/articles/places.py). A person named in full, then by
surname, is no city (``surnames``), and two reports that name the same such person agree on it
(transforms/stories/vocabulary/places.py, ``~`` entries): gva-dev's airport shooting ("Esteban Santiago" ...
"Santiago, 26,") was read as Santiago de Chile, so its reports conflicted with the ones that name Fort Lauderdale and
the writer's second opinion kept them apart. And a capital's old alternate name is not its own ("Philadelphia")."""

from transforms.articles import places as P
from transforms.stories.vocabulary import places as pl

SHOOTER = "Esteban Santiago, 26, opened fire in the baggage claim. Santiago was taken into custody, the FBI said."


def names(places) -> set[str]:
    return {p.name for p in places}


def test_a_surname_after_the_full_name_is_no_city():
    assert "Santiago" in names(P.quick_places("Shooting", "Santiago was taken into custody, the FBI said.", "en"))
    assert "Santiago" not in names(P.quick_places("Airport shooting", SHOOTER, "en"))


def test_a_place_announced_or_qualified_stays():
    said = "Esteban Santiago, 26, flew in from Alaska. He had lived in Santiago before, the FBI said."
    assert "Santiago" in names(P.quick_places("Airport shooting", said, "en"))  # "in Santiago": a place
    body = "A man was shot in South Dallas on Sunday. Dallas police said the victim died at a hospital."
    assert "Dallas" in names(P.quick_places("Man shot", body, "en"))  # "South Dallas" is part of the city


def test_reports_naming_the_person_agree_and_never_conflict_on_him():
    first = pl.chains("5 dead in airport shooting", SHOOTER, "en")
    second = pl.chains(
        "Victims identified", "Santiago, who flew in from Anchorage, shot Esteban Santiago's victims.", "en"
    )
    florida = pl.chains("Florida airport shooting", "The shooting at the airport in Fort Lauderdale, Florida.", "en")
    assert "~santiago" in first and not any(c.startswith("gn:3871336") for c in first)
    assert pl.relation(first, second) == 1.0
    assert pl.relation(first, florida) == 0.0  # the Chilean capital conflicted with Florida (-1)
    assert pl.relation_matrix([first], [second, florida]).tolist() == [[1.0, 0.0]]


def test_a_capital_goes_first_by_its_own_name_only():
    """ "Philadelphia" is also Amman's ancient name (an alternate name in GeoNames): the capital's rank must not take
    the US city's own name (18 gva-dev reports from Philadelphia were placed in Jordan)."""
    g = P.gazetteer()
    assert g.candidates("Philadelphia")[0].country == "US"
    assert g.candidates("Amman")[0].country == "JO"
    assert "Philadelphia" in names(P.quick_places("Teen shot", "A Philadelphia man was charged, police said.", "en"))
