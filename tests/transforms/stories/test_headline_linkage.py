"""Repair merges of headline-only stories by average linkage (ClusterConfig.merge_headline_average)."""

from __future__ import annotations

import dataclasses

import numpy as np

from transforms.stories.vocabulary.features import ArticleFeatures
from transforms.stories.writer.cluster import ClusterConfig, StoryClusterer
from transforms.stories.writer.lexical import dot
from transforms.stories.writer.repair import merge_pass
from transforms.stories.writer.scoring import linkage_mean

DIM = 32
T0 = 946_684_800_000


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _fragments(n: int = 16, seed: int = 7):
    """Two fragments of one headline-only story (each with its own angle: words, names and a vector offset) and a
    fragment of another story; times unknown, as in a headline feed without dates."""
    rng = np.random.default_rng(seed)
    event, other, angle_a, angle_b = (_unit(rng.standard_normal(DIM)) for _ in range(4))

    def fragment(prefix, base, core, own, names, own_names, start):
        out = []
        for i in range(n):
            words = sorted(set(rng.choice(core, 2, replace=False)) | {str(rng.choice(own))})
            ents = sorted({str(rng.choice(names)), str(rng.choice(own_names))})
            out.append(
                ArticleFeatures(
                    article_id=f"{prefix}{i:03d}",
                    language="en",
                    first_seen_at=start + i * 1000,
                    time_known=False,
                    title=f"headline {prefix}{i}",
                    terms=tuple(words),
                    term_tf=tuple(1 for _ in words),
                    entities=tuple(ents),
                    vector=_unit(base + 0.15 * rng.standard_normal(DIM)),
                    model="test",
                    has_body=False,
                )
            )
        return out

    core, names = ["recall", "ignition", "switch", "gm"], ["gm", "barra", "chevrolet"]
    a = fragment("a", event + 0.3 * angle_a, core, ["probe", "congress", "deaths", "fine"], names, ["senate"], T0)
    b = fragment("b", event + 0.3 * angle_b, core, ["apology", "ceo", "victims", "fund"], names, ["feinberg"], T0 + 100)
    words, names = ["flight", "search", "ocean", "debris"], ["malaysia", "mh370"]
    x = fragment("x", other, words, ["radar", "plane"], names, ["perth"], T0 + 200)
    return a, b, x


def _writer_with(config: ClusterConfig, fragments) -> tuple[StoryClusterer, list[int]]:
    """A writer holding each fragment as one story (built directly: the online join is not what is tested)."""
    w = StoryClusterer("en", model="test", config=config, exact_index=True)
    sids = []
    for frag in fragments:
        first = frag[0]
        w.state.ensure_index(DIM)
        out = w._new_story(first, None)
        sid = out.change["story_id"]
        for f in frag[1:]:
            w._join(w.stories[sid], f, None, is_copy=False)
        sids.append(sid)
    return w, sids


def test_two_large_fragments_of_one_headline_story_merge_and_another_story_does_not():
    frags = _fragments()
    w, (a, b, x) = _writer_with(ClusterConfig(), frags)
    sa, sb, sx = (w.stories[s] for s in (a, b, x))
    assert not (sa.has_body or sb.has_body)
    cache: dict = {}
    assert w.scorer.merge_margin(sa, sb, cache) > 0  # average linkage: one story
    assert w.scorer.merge_margin(sa, sx, cache) < 0 and w.scorer.merge_margin(sb, sx, cache) < 0
    # the profile score with its size term (+0.2 per doubling of 16 articles) keeps the two fragments apart
    assert w.score_stories(sa, sb) - w.scorer.merge_bar(sa, sb) < 0

    tick = max(s.last_at for s in (sa, sb, sx)) + 1
    outs = merge_pass(w.state, [sa, sb, sx], tick, set())
    merges = [(o.change["story_id"], o.change["other_story_id"]) for o in outs if o.change["kind"] == "MERGE"]
    assert merges == [(min(a, b), max(a, b))]  # the older story survives
    assert len(w.stories[min(a, b)].members) == 32 and x in w.stories


def test_without_average_linkage_the_size_term_blocks_the_merge():
    frags = _fragments()
    w, (a, b, x) = _writer_with(dataclasses.replace(ClusterConfig(), merge_headline_average=None), frags)
    stories = [w.stories[s] for s in (a, b, x)]
    tick = max(s.last_at for s in stories) + 1
    assert [o for o in merge_pass(w.state, stories, tick, set()) if o.change["kind"] == "MERGE"] == []


def test_linkage_mean_is_the_average_of_the_article_pair_scores():
    frags = _fragments(n=5)
    w, (a, b, _) = _writer_with(ClusterConfig(), frags)
    sa, sb = w.stories[a], w.stories[b]
    ma = sorted(sa.originals, key=lambda m: m.article_id)
    mb = sorted(sb.originals, key=lambda m: m.article_id)
    W = w.scorer.pair_matrix(ma + mb)
    want = float(W[: len(ma), len(ma) :].mean())
    got = linkage_mean(w.scorer.linkage_sums(sa, {}), w.scorer.linkage_sums(sb, {}), w.config)
    assert abs(got - want) < 1e-9


def test_stories_with_a_body_keep_the_profile_criterion():
    frags = [[dataclasses.replace(f, has_body=True) for f in frag] for frag in _fragments()]
    w, (a, b, _) = _writer_with(ClusterConfig(), frags)
    sa, sb = w.stories[a], w.stories[b]
    assert w.scorer.merge_margin(sa, sb, {}) == w.score_stories(sa, sb) - w.scorer.merge_bar(sa, sb)


def test_headline_merges_use_the_learned_pair_score_averaged_over_article_pairs():
    """The margin of two headline-only stories is the average logit of the learned pair score over their article
    pairs (brute force here, from the writer's own TF-IDF vectors) minus its headline bar and the writer's margin."""
    from transforms.stories.vocabulary import places
    from transforms.stories.writer import pairscore

    frags = _fragments(n=5)
    w, (a, b, x) = _writer_with(ClusterConfig(), frags)
    model = pairscore.load()
    for s, o in ((a, b), (a, x)):
        ms, mo = (sorted(w.stories[k].originals, key=lambda m: m.article_id) for k in (s, o))
        logits = []
        for m in ms:
            tm, em = w.lex.member_vectors(m)
            for n in mo:
                tn, en = w.lex.member_vectors(n)
                near = places.relation(m.places, n.places)  # every pair's, as the writer averages them
                x_ = [float(np.dot(m.vector.astype(np.float64), n.vector)), dot(em, en), dot(tm, tn), 0.0, near]
                logits.append(float(model.logit(np.array(x_))))
        bar = model.thresholds["headline"] + w.config.merge_headline_learned_margin
        got = w.scorer.merge_margin(w.stories[s], w.stories[o], {})
        assert abs(got - (float(np.mean(logits)) - bar)) < 1e-9
    old = dataclasses.replace(ClusterConfig(), merge_headline_learned=False)
    w.set_config(old)
    sa, sb = w.stories[a], w.stories[b]
    between = linkage_mean(w.scorer.linkage_sums(sa, {}), w.scorer.linkage_sums(sb, {}), old)
    want = between - old.unknown_time_penalty - old.merge_headline_average
    assert w.scorer.merge_margin(sa, sb, {}) == want  # the hand-weighted rule stays selectable
