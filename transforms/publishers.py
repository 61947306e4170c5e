"""The publisher registry: who a host belongs to, its region, language, time zone and authority.

Reads a JSON file (default: the packaged ``transforms/data/publishers.json``, the local sample world's publishers;
production passes ``--publishers gs://...`` or a path). Used by normalisation (publisher and zone of zone-less
times), syndication (the original is the wire's copy, else the most authoritative), ranking (coverage, regional
relevance) and ingest (feeds, politeness tier).

Unknown hosts get a provisional publisher (id = registrable host, authority 0.1): an article is never dropped for
coming from a publisher we do not know, but it cannot weigh much in coverage until someone rates it.

Local publishers: ``city`` is the code of a sub-national place of the publisher's region in the editions file's
gazetteer (editions.json ``local_places``, the name with hyphens for spaces: ``springfield``, ``new-york``). A
story that a local publisher covers is local to its city (transforms/editions/cycle/run.py adds the code to the pool
entry's ``places``, beside the cities its entities name), so it is on that city's page ``place:{city}``. Loading
checks every city against the gazetteer (:func:`check_cities`) and fails naming the entry: a misspelt city would
otherwise be a page nobody can reach.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

UNKNOWN_AUTHORITY = 0.1


@dataclass(frozen=True)
class Publisher:
    publisher_id: str
    name: str
    hosts: tuple[str, ...]
    region: str  # ISO 3166-1 alpha-2, lower case ("us", "gb", "in", "de" ...); "" = international
    language: str  # ISO 639-1 of its main edition
    timezone: str = "UTC"  # IANA zone, for times written without a zone
    authority: float = 0.5  # 0..1, general
    topic_authority: dict = field(default_factory=dict)  # section -> 0..1 overrides
    is_wire: bool = False
    tier: str = "long_tail"  # "authoritative" (1 min poll floor) or "long_tail" (5 min)
    feeds: tuple[dict, ...] = ()  # {"url", "kind": rss|atom|sitemap|front|auto}
    known: bool = True
    owner: str = ""  # ownership group id: outlets of one owner count as one voice (authority job); "" = itself
    city: str = ""  # gazetteer city code of a local publisher (module docstring); "" = not local to one city

    @property
    def group(self) -> str:
        """The ownership group: ``owner`` if set, else the publisher itself."""
        return self.owner or self.publisher_id

    def authority_for(self, section: str | None) -> float:
        if section and section in self.topic_authority:
            return float(self.topic_authority[section])
        return self.authority


def _normalise_host(host: str) -> str:
    host = (host or "").lower().strip().rstrip(".")
    if ":" in host and not host.startswith("["):
        host = host.split(":", 1)[0]
    for prefix in ("www.", "amp.", "m.", "mobile."):
        if host.startswith(prefix):
            host = host[len(prefix) :]
    return host


class PublisherRegistry:
    def __init__(self, publishers: list[Publisher]):
        self._by_id = {p.publisher_id: p for p in publishers}
        self._by_host: dict[str, Publisher] = {}
        for p in publishers:
            for h in p.hosts:
                self._by_host[_normalise_host(h)] = p

    @classmethod
    def from_dicts(cls, rows: list[dict], gazetteer: dict[str, set[str]] | None = None) -> PublisherRegistry:
        """``gazetteer``: region -> city codes the ``city`` fields are checked against (default: the packaged
        editions file's ``local_places``, :func:`gazetteer_cities`)."""
        pubs = []
        for r in rows:
            r = dict(r)
            r["hosts"] = tuple(r.get("hosts", ()))
            r["feeds"] = tuple(r.get("feeds", ()))
            pubs.append(Publisher(**r))
        check_cities(pubs, gazetteer_cities() if gazetteer is None else gazetteer)
        return cls(pubs)

    @classmethod
    def load(cls, path: str | None = None) -> PublisherRegistry:
        if path is None:
            text = resources.files("transforms").joinpath("data", "publishers.json").read_text(encoding="utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        data = json.loads(text)
        return cls.from_dicts(data["publishers"] if isinstance(data, dict) else data)

    def __iter__(self):
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    def get(self, publisher_id: str) -> Publisher | None:
        return self._by_id.get(publisher_id)

    def for_host(self, host: str) -> Publisher:
        """The registered publisher of ``host`` (or of a parent domain), else a provisional unknown publisher."""
        h = _normalise_host(host)
        parts = h.split(".")
        for i in range(len(parts) - 1):
            p = self._by_host.get(".".join(parts[i:]))
            if p:
                return p
        return Publisher(
            publisher_id=h or "unknown",
            name=h or "unknown",
            hosts=(h,),
            region="",
            language="",
            authority=UNKNOWN_AUTHORITY,
            known=False,
        )


def city_code(name: str) -> str:
    """The code of a gazetteer place name: lower case, hyphens for spaces (``los angeles`` -> ``los-angeles``)."""
    return "-".join(name.lower().split())


@functools.lru_cache(maxsize=1)
def gazetteer_cities() -> dict[str, frozenset[str]]:
    """Region -> the city codes of its ``local_places`` in the packaged editions file."""
    from transforms.editions.vocabulary.config import load_config  # the editions package imports this module

    regions = load_config().regions
    return {code: frozenset(city_code(n) for n in r.local_places) for code, r in regions.items()}


def check_cities(publishers: list[Publisher], gazetteer: dict) -> None:
    """Every ``city`` names a gazetteer city of the publisher's own region; ValueError naming the entry."""
    for p in publishers:
        if not p.city:
            continue
        if not p.region:
            raise ValueError(f"publisher {p.publisher_id!r}: city {p.city!r} but no region (a city is regional)")
        known = gazetteer.get(p.region, frozenset())
        if p.city not in known:
            raise ValueError(
                f"publisher {p.publisher_id!r}: city {p.city!r} is not a local place of region {p.region!r} "
                f"(editions.json local_places, as codes: {', '.join(sorted(known)) or 'none'})"
            )


@functools.lru_cache(maxsize=4)
def default_registry(path: str | None = None) -> PublisherRegistry:
    return PublisherRegistry.load(path)
