"""The acceptance flow of "Analysts 2" in seconds: a live writer (the streaming writer's way: each arrival decided as
it comes, a late one at the writer's clock) decides the articles of an embedded article store into its story store;
then `newsroom export assignments`, `newsroom backfill --from_store` and `newsroom diff` over that store. In
first-seen order the backfill reproduces the live stories exactly; when one article reached the live writer late
(after its story had expired there), the diff's one difference names that article with both decision times.
The slow variants: tests/pipelines/test_backfill_reproduces_live.py (the stories job's store) and the real 10-minute
`newsroom run` recorded in docs/analysts.md."""

from __future__ import annotations

import json

import pytest

from tests.pipelines.test_backfill_from_store import articles

DAY_MS = 86_400_000


def live_store(tmp_path, sample_record, late: str | None):
    """The article store and the story store of a live run over six articles (three events, two reports each) and a
    seventh three days later; ``late``: that article reaches the writer after the seventh."""
    from schemas import codec
    from stores import StoreConfig, open_store
    from transforms.stories.embed import embed as embmod
    from transforms.stories.vocabulary import features as F
    from transforms.stories.writer.apply import apply_output
    from transforms.stories.writer.cluster import END_OF_TIME, StoryClusterer

    config = StoreConfig(data_dir=str(tmp_path / "live"))
    records = articles(sample_record)[:6]
    at = records[-1]["first_seen_at"] + 3 * DAY_MS
    body = "The council voted to fund the new central library and its reading rooms."
    later = dict(records[0], article_id="later", title="Council approves new library budget", lede=body, body=body)
    records.append(codec.check("Article", dict(later, first_seen_at=at, published_at=at, canonical_url="https://l/1")))
    store, stories = open_store("articles", config), open_store("stories", config)
    for r in records:
        store.write(r)
    model = embmod.get_embedder("hash")
    feats = [F.from_article(r) for r in records]
    for f, v in zip(feats, model.encode([f.embed_text for f in feats])):
        f.vector, f.model = v, model.name
    arrivals = sorted(feats, key=lambda f: (f.article_id == late, f.first_seen_at, f.article_id))
    w = StoryClusterer("en")
    for f in arrivals:
        if w.until is not None and f.first_seen_at <= w.until:  # late: decided at the writer's clock, as live
            f.first_seen_at = w.until + 1
        w.add(f)
        for out in w.advance(f.first_seen_at):
            apply_output(stories, out.to_dict(), strict=True)
    for out in w.advance(END_OF_TIME):  # the stream drained
        apply_output(stories, out.to_dict(), strict=True)
    return config.data_dir


@pytest.mark.parametrize("late", [pytest.param(None, marks=pytest.mark.slow), "art03"])  # the late case checks the rest
def test_backfilling_the_live_history_gives_its_stories_or_names_the_late_article(
    tmp_path, sample_record, late, capsys
):
    from pipelines.cli import main as newsroom

    data = live_store(tmp_path, sample_record, late)
    assert newsroom(["export", "assignments", f"--data_dir={data}", f"--out={tmp_path / 'prod'}"]) == 0
    assert newsroom(["backfill", f"--from_store={data}", f"--output={tmp_path / 'bf'}", "--embedder=hash"]) == 0
    capsys.readouterr()
    assert newsroom(["diff", str(tmp_path / "prod"), str(tmp_path / "bf"), "--json", "--no-html"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["articles_compared"] == 7 and d["only_in_a"] == d["only_in_b"] == 0
    changes = d["languages"]["en"]["changes"]
    if late is None:
        assert d["counts"]["unchanged"] == d["counts"]["stories_a"] == d["counts"]["stories_b"] == 4, changes
        return
    # live: the quake story expired before art03 arrived, so art03 founded a story; the backfill put it with art00
    assert d["counts"]["unchanged"] == 3 and d["counts"]["joined"] == 1, d["counts"]
    (change,) = changes
    assert [t["article_id"] for t in change["timing"]] == ["art03"]
    assert change["timing"][0]["at_a"] > change["timing"][0]["at_b"] + 2 * DAY_MS  # live decided it days later
