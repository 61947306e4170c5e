"""The gazetteer's cities as the editions stage names them: entity ids -> city codes, and each region's codes.

A city (or state) is a sub-national place of editions.json ``local_places``; its code is the name with hyphens for
spaces (``los-angeles``). A story is local to a city when a local publisher of that city covers it or its main
entities name the city (:func:`city_codes`, the one mapping both the candidate pool's local reserve,
transforms/editions/cycle/scoring.py ``local_reserve``, and the pool's places, overlays/topics.py ``add_cities``,
read, so a story the reserve keeps for a city is on that city's page).
"""

from __future__ import annotations

from transforms.articles.places import gazetteer
from transforms.publishers import city_code


class CityCodes(dict):
    """Entity id (lower case) -> city code, with the memo ``add_cities`` keeps of what each entity list names."""

    def __init__(self, *args):
        super().__init__(*args)
        self.memo: dict[tuple, tuple] = {}


def city_codes(config) -> CityCodes:
    """Entity id (lower case) -> city code, for every sub-national place of the editions file's gazetteer."""
    out = CityCodes()
    g = gazetteer()
    for code in sorted(config.regions):
        for name in config.regions[code].local_places:
            city = "-".join(name.split())
            out.setdefault(name, city)
            out.setdefault("place:" + city, city)
            for p in g.candidates(name):  # every gazetteer place of that name in the region: each Springfield
                if p.country == code.upper():
                    out.setdefault(p.entity_id, city)
    return out


_BY_CONFIG: dict[int, tuple] = {}  # id(config) -> (config, CityCodes, region -> city codes): a config or two


def config_cities(config) -> tuple[CityCodes, dict[str, frozenset[str]]]:
    """:func:`city_codes` of ``config`` and its regions' city codes, computed once per config object."""
    hit = _BY_CONFIG.get(id(config))
    if hit is None or hit[0] is not config:
        if len(_BY_CONFIG) >= 8:
            _BY_CONFIG.clear()
        regions = {code: frozenset(city_code(n) for n in r.local_places) for code, r in config.regions.items()}
        hit = _BY_CONFIG[id(config)] = (config, city_codes(config), regions)
    return hit[1], hit[2]
