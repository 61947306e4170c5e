"""Run the story writers and the linker in-process, without Beam (tests, calibration, benchmarks).

Reads :class:`ArticleFeatures` with vectors; writes the writers' outputs (dicts) and the link changes, exactly what
the Beam path (transforms/stories/beam/) produces for the same input.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from transforms.common import EXPIRE
from transforms.stories.links.links import StoryLinker
from transforms.stories.writer.cluster import ClusterConfig, StoryClusterer


def cluster_features(
    features,
    config: ClusterConfig | None = None,
    exact_index: bool = False,
    links: bool = True,
) -> tuple[list[dict], list[dict], dict[str, StoryClusterer]]:
    """(writer outputs of every language, link changes, the writers) for a finite input."""
    by_lang = defaultdict(list)
    for f in features:
        by_lang[f.language].append(f)
    outputs: list[dict] = []
    writers = {}
    for lang in sorted(by_lang):
        fs = by_lang[lang]
        w = StoryClusterer(lang, model=fs[0].model, config=config, exact_index=exact_index)
        writers[lang] = w
        outputs.extend(o.to_dict() for o in w.run(fs))
    link_changes = link_outputs(outputs) if links else []
    return outputs, link_changes, writers


def link_outputs(outputs: Sequence[dict]) -> list[dict]:
    """Cross-language links of a finished run: the stories as they stand before expiry. ``outputs``: a list or
    any sequence (the backfill's Packed)."""
    linker = StoryLinker()
    at = 0
    keys = sorted((o["change"]["language"], o["change"]["seq"], i) for i, o in enumerate(outputs))
    for *_, i in keys:  # (language, seq) order, each output read once (a Packed decodes it here)
        o = outputs[i]
        if o["change"]["kind"] != EXPIRE:
            linker.observe(o)
            at = max(at, int(o["change"]["at"]))
    return linker.link_changes(at)
