"""What a job tells the editions stage, as typed values: a transform never reads a job's options.

:class:`RankSettings` says which editions and registry the ranker reads and how it runs (a replay, change-only);
:class:`PublishSettings` how snapshots are accepted and where Breaking purges go. The jobs (pipelines/stories.py,
the backfill's ``--snapshots``) build them once from their options and hand them to
:class:`~transforms.editions.beam.stage.PublishEditions`; tests build them with the few fields they change.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RankSettings:
    """The ranker's inputs and mode.

    ``editions_path`` / ``publishers_path``: the editions file and publisher registry (default: packaged).
    ``editions_only``: rank only these editions (tests, small local runs); default all. ``overrides``: ranking
    parameters replacing the file's (tests). ``replay``: the input is bounded and complete (a backfill): each
    edition's minute chain runs to its end in one timer firing instead of one timer round per minute; default
    False (streaming: a firing cannot know events that have not arrived yet). ``change_only``: a minute whose pages
    cannot differ from the last built builds no documents (transforms/editions/ranker/steady.py; the snapshots stay
    byte-identical); default False: every minute built (streaming, and the baseline the replay is compared with).
    """

    editions_path: str | None = None
    publishers_path: str | None = None
    editions_only: list[str] | None = None
    overrides: dict | None = None
    replay: bool = False
    change_only: bool = False


@dataclass(frozen=True)
class PublishSettings:
    """``confirm_shrink_cycles``: cycles a > 50 % shrink must persist before it is published. ``cdn`` /
    ``cdn_url_map``: where Breaking purges go (``stores.cdn.open_purger``); "none" (default): records only."""

    confirm_shrink_cycles: int = 15
    cdn: str | None = "none"
    cdn_url_map: str | None = None
