"""The backfill's overlapped writer (transforms/stories/writer/overlap.py) decides exactly what the sequential one decides:
embedding runs ahead in decision order while the writer advances behind it, batch by batch."""

from __future__ import annotations

import json
import threading

import pytest

from transforms.stories.backfill import backfill_files
from transforms.stories.embed.embed import HashEmbedder
from transforms.stories.writer.cluster import ClusterConfig, StoryClusterer
from transforms.stories.writer.overlap import advance_overlapped

TOPICS = [
    "earthquake strikes coast of Chile {k}",
    "pizza chain files for bankruptcy {k}",
    "console game launches at low resolution {k}",
    "central bank raises interest rates {k}",
]
END = 2**62


def features(n=90):
    """``n`` headline features, several sharing a second (so batch bounds fall inside one time)."""
    lines = []
    for i in range(n):
        t = 1_767_225_600 + 20 * (i // 3)  # three articles per time
        lines.append(
            json.dumps(
                {
                    "id": f"x{i:03d}",
                    "language": "en",
                    "title": TOPICS[(i * 7) % len(TOPICS)].format(k=i % 5),
                    "text": "",
                    "published_at": t,
                    "publisher": f"p{i % 6}",
                }
            )
        )
    return [f for _, f, bad in backfill_files.labelled_features(lines) if bad is None]


def embed_with(model):
    def embed(batch):
        for f, v in zip(batch, model.encode([f.embed_text for f in batch])):
            f.vector, f.model = v, model.name

    return embed


def outputs(writer_outputs):
    return [o.to_dict() for o in writer_outputs]


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7, 1000])
def test_overlapped_writer_decides_what_the_sequential_one_decides(batch_size):
    model = HashEmbedder(32)
    config = ClusterConfig(repair_every_min=1.0)
    seq_w = StoryClusterer("en", config=config)
    done = features()
    embed_with(model)(done)
    expected = outputs(seq_w.run(done, until=END))

    w = StoryClusterer("en", config=config)
    for f in features():
        w.add(f)
    counts = []
    got = outputs(advance_overlapped(w, END, embed_with(model), batch_size, decided=counts.append))
    assert got == expected
    assert counts == list(range(1, len(done) + 1))  # the writer's progress counts over the call, as one advance
    assert len({o["change"]["story_id"] for o in got}) > 1 and w.state_token() == seq_w.state_token()


def test_articles_that_already_have_vectors_are_decided_without_waiting():
    model = HashEmbedder(32)
    fs = features(30)
    embed_with(model)(fs[::2])  # half restored with vectors (a writer rebuilt from its buffer)
    calls = []

    def embed(batch):
        calls.append([f.article_id for f in batch])
        embed_with(model)(batch)

    w = StoryClusterer("en")
    for f in fs:
        w.add(f)
    seen = []
    out = advance_overlapped(w, END, embed, 4, progress=lambda done, total: seen.append((done, total)))
    assert sorted(a for c in calls for a in c) == sorted(f.article_id for f in fs[1::2])
    assert seen[0] == (19, 30) and seen[-1] == (30, 30) and len(seen) == 4  # 15 had vectors, then 4 + 4 + 4 + 3
    assert sum(1 for o in out if o.change["kind"] != "expire") >= len(fs)


def test_an_embedding_error_fails_the_tick_and_stops_the_producer():
    fs = features(40)
    seen = []

    def embed(batch):
        seen.append(len(batch))
        if len(seen) == 2:
            raise RuntimeError("model failed")
        embed_with(HashEmbedder(32))(batch)

    w = StoryClusterer("en")
    for f in fs:
        w.add(f)
    before = threading.active_count()
    with pytest.raises(RuntimeError, match="model failed"):
        advance_overlapped(w, END, embed, 5)
    assert len(seen) == 2 and threading.active_count() == before  # nothing embedded after the error, no thread left
