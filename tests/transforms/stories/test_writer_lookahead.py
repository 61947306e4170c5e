"""The writer searches its ANN index ahead for the articles due in one firing (transforms/stories/index/index.py
Lookahead): decisions must be those of one search per article, whatever the firing's size (streaming = backfill)."""

from __future__ import annotations

import pytest

from tests.transforms.stories.synth import MIN, TEST_CONFIG, make_articles
from transforms.stories.index.ann import CentroidIndex
from transforms.stories.writer import writer_state
from transforms.stories.writer.cluster import END_OF_TIME, StoryClusterer


@pytest.fixture
def small_ann(monkeypatch):
    """The writer's index switches to ScaNN from 64 stories and syncs every 16 changes (so tokens are voided often)."""
    options = dict(ann_min_size=64, sync_every=16, training_sample_size=2000, leaves_fraction=0.5, min_scan=0)
    monkeypatch.setattr(writer_state, "make_index", lambda dim, exact=False: CentroidIndex(dim, pca_dims=16, **options))


def decide(arts, lookahead: int, firings: list[int] | None):
    w = StoryClusterer("en", config=TEST_CONFIG)
    w._lookahead.size = lookahead
    for a in arts:
        w.add(a)
    out = [o.to_dict() for t in firings for o in w.advance(t)] if firings else [o.to_dict() for o in w.run([])]
    return w, out


def test_batched_search_decides_as_one_search_per_article(small_ann):
    arts, _ = make_articles(n_events=120, per_event=3, noise=0.5, spread_ms=30 * MIN, gap_ms=2 * MIN)
    times = sorted({a.first_seen_at for a in arts})
    one_firing, batched = decide(arts, 32, None)  # a backfill: every article due at once
    assert one_firing.state.index.stats["builds"] >= 1 and one_firing.state.index.stats["syncs"] >= 10  # ScaNN
    assert 10 < one_firing._lookahead.batches < len(arts) // 2  # searched in batches, voided by the syncs
    _, one_at_a_time = decide(arts, 1, None)
    _, streamed = decide(arts, 32, times[::7] + [END_OF_TIME])  # streaming firings of a few articles each
    assert batched == one_at_a_time == streamed
    assert sum(o["change"]["kind"] == "ASSIGN" for o in batched) > 100  # joins happen: the delta matters
