"""Editions as data: which editions exist (region + language), their sections, the regions' gazetteer and the
ranking and burst parameters.

Reads ``transforms/editions/vocabulary/editions.json`` (packaged; production may pass another file with ``--editions``).
Writes nothing. The file is the single place where an edition or a section is added: the ranker, the snapshot
publisher and the origin all iterate :attr:`EditionsConfig.editions`. Loading validates the file and fails naming
the offending entry (an edition id that does not match the page schema, an unknown section, a duplicate).

Design choices, recorded here because they are data rather than code:
- One language per edition. The ranker is keyed by edition and folds the story changes of that language only, so
  an edition's story set is exactly one writer's output (writer sequence numbers are then a total order).
- Sections qualify stories in one of five ways (``match``): ``all`` (top stories), ``label`` (the share of the
  story's articles whose section/topics map to the section), ``world`` (little domestic relevance, or labelled
  world), ``nation`` (domestic: publishers of the edition's region or its places), ``local`` (sub-national places
  of the edition's region are mentioned). This keeps 12 sections meaningful without a per-edition section model.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

EDITION_ID = re.compile(r"^[a-z]{2}-[a-z]{2,3}$")  # schemas/json/edition_page.schema.json
SECTION_ID = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
MATCH_KINDS = ("all", "label", "world", "nation", "local")


class ConfigError(ValueError):
    """The editions file is invalid; the message names the entry."""


@dataclass(frozen=True)
class Section:
    id: str
    name: str
    match: str
    labels: tuple[str, ...] = ()
    min_stories: int = 3


@dataclass(frozen=True)
class Region:
    code: str
    name: str
    places: tuple[str, ...] = ()
    local_places: tuple[str, ...] = ()


@dataclass(frozen=True)
class Edition:
    id: str
    region: str
    language: str
    name: str
    timezone: str = "UTC"
    sections: tuple[str, ...] = ()


@dataclass(frozen=True)
class EditionsConfig:
    version: int
    sections: tuple[Section, ...]
    regions: dict
    editions: tuple[Edition, ...]
    ranking: dict = field(default_factory=dict)
    bursts: dict = field(default_factory=dict)

    def edition(self, edition_id: str) -> Edition:
        for e in self.editions:
            if e.id == edition_id:
                return e
        raise KeyError(f"unknown edition {edition_id!r}")

    def section(self, section_id: str) -> Section:
        for s in self.sections:
            if s.id == section_id:
                return s
        raise KeyError(f"unknown section {section_id!r}")

    def __post_init__(self):
        by_language: dict[str, list] = {}
        for e in self.editions:
            by_language.setdefault(e.language, []).append(e)
        object.__setattr__(self, "_by_language", {k: tuple(v) for k, v in by_language.items()})

    def editions_for_language(self, language: str) -> tuple[Edition, ...]:
        return self._by_language.get(language, ())

    def label_sections(self) -> dict[str, str]:
        """Article section/topic label (lower case) -> section id, for sections matched by labels."""
        out = {}
        for s in self.sections:
            for label in (s.id,) + s.labels:
                out.setdefault(label.lower(), s.id)
        return out

    def pages(self) -> list[tuple[str, str]]:
        """Every (edition, section) page."""
        return [(e.id, s) for e in self.editions for s in e.sections]

    def __hash__(self) -> int:  # frozen, but holds dicts: hash by identity
        return id(self)


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise ConfigError(msg)


def parse_config(data: dict) -> EditionsConfig:
    _require(isinstance(data, dict), "editions config: expected a JSON object")
    sections = []
    for i, s in enumerate(data.get("sections", [])):
        where = f"sections[{i}]"
        _require(SECTION_ID.match(str(s.get("id", ""))) is not None, f"{where}: bad id {s.get('id')!r}")
        _require(s.get("match") in MATCH_KINDS, f"{where} ({s['id']}): match must be one of {MATCH_KINDS}")
        sections.append(
            Section(
                id=s["id"],
                name=s.get("name", s["id"]),
                match=s["match"],
                labels=tuple(x.lower() for x in s.get("labels", ())),
                min_stories=int(s.get("min_stories", 3)),
            )
        )
    ids = [s.id for s in sections]
    _require(len(ids) == len(set(ids)), f"sections: duplicate ids in {ids}")
    _require("top" in ids, "sections: a 'top' section is required")
    regions = {}
    for code, r in data.get("regions", {}).items():
        _require(re.match(r"^[a-z]{2}$", code) is not None, f"regions: bad region code {code!r}")
        regions[code] = Region(
            code=code,
            name=r.get("name", code),
            places=tuple(p.lower() for p in r.get("places", ())),
            local_places=tuple(p.lower() for p in r.get("local_places", ())),
        )
    editions = []
    for i, e in enumerate(data.get("editions", [])):
        where = f"editions[{i}]"
        eid = str(e.get("id", ""))
        _require(EDITION_ID.match(eid) is not None, f"{where}: id {eid!r} does not match {EDITION_ID.pattern}")
        _require(e.get("region") in regions, f"{where} ({eid}): region {e.get('region')!r} is not in regions")
        _require(bool(e.get("language")), f"{where} ({eid}): language is required")
        secs = tuple(e.get("sections") or ids)
        for s in secs:
            _require(s in ids, f"{where} ({eid}): unknown section {s!r}")
        _require("top" in secs, f"{where} ({eid}): every edition has a 'top' section")
        editions.append(
            Edition(
                id=eid,
                region=e["region"],
                language=e["language"],
                name=e.get("name", eid),
                timezone=e.get("timezone", "UTC"),
                sections=secs,
            )
        )
    eids = [e.id for e in editions]
    _require(len(eids) == len(set(eids)), "editions: duplicate ids")
    _require(len(editions) > 0, "editions: at least one edition is required")
    return EditionsConfig(
        version=int(data.get("version", 1)),
        sections=tuple(sections),
        regions=regions,
        editions=tuple(editions),
        ranking=dict(data.get("ranking", {})),
        bursts=dict(data.get("bursts", {})),
    )


def load_config(path: str | None = None) -> EditionsConfig:
    """The packaged editions file, or ``path``."""
    if path is None:
        text = resources.files("transforms.editions.vocabulary").joinpath("editions.json").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    try:
        return parse_config(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # ConfigError and JSON's errors: name the file
        raise ConfigError(f"editions file {path or '(packaged)'}: {exc}") from None


@functools.lru_cache(maxsize=4)
def default_config(path: str | None = None) -> EditionsConfig:
    return load_config(path)


def subset(config: EditionsConfig, edition_ids: list[str] | None) -> EditionsConfig:
    """The same config restricted to some editions (tests and small local runs)."""
    if not edition_ids:
        return config
    unknown = sorted(set(edition_ids) - {e.id for e in config.editions})
    if unknown:
        raise ConfigError(f"--editions_only: unknown edition(s) {', '.join(unknown)}")
    keep = tuple(e for e in config.editions if e.id in set(edition_ids))
    return EditionsConfig(config.version, config.sections, config.regions, keep, config.ranking, config.bursts)
