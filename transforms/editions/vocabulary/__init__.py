"""The editions' shared floor: the words every room of the editions stage speaks.

- :mod:`.config`: which editions exist (region + language), their sections and the regions' gazetteer, read from
  ``editions.json`` (the one place an edition or a section is added);
- :mod:`.params`: the ranking and burst parameters of that file, as typed values;
- :mod:`.settings`: what a job tells the stage (:class:`RankSettings`, :class:`PublishSettings`);
- :mod:`.changes`: the StoryChange records the stage reads and the dead letters of the ones it cannot;
- :mod:`.documents`: the served documents (cards, pages, pools, story coverage, aliases), their canonical bytes and
  their validation.

Exports: the names below, and the modules themselves (``from transforms.editions.vocabulary import documents``).
May import: ``schemas``, ``stores``' plain values, ``transforms.common`` and ``transforms.publishers``; no other room
of the editions stage (every room stands on this one).
"""

from transforms.editions.vocabulary.changes import change_dead_letter, change_of_output, editions_of
from transforms.editions.vocabulary.config import Edition, EditionsConfig, Section, default_config, load_config, subset
from transforms.editions.vocabulary.params import BurstParams, RankParams, RepresentativeParams, SupportingParams
from transforms.editions.vocabulary.settings import PublishSettings, RankSettings

__all__ = [
    "BurstParams",
    "Edition",
    "EditionsConfig",
    "PublishSettings",
    "RankParams",
    "RankSettings",
    "RepresentativeParams",
    "Section",
    "SupportingParams",
    "change_dead_letter",
    "change_of_output",
    "default_config",
    "editions_of",
    "load_config",
    "subset",
]
