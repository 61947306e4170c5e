"""The trust gates of transforms/editions/cycle/trust.py, on hand-built worlds: corroboration by
independent strong voices for top stories, holds of fast low-trust stories listed for an editor (the pool's
``held`` and ``newsroom control held``), and "developing" as "the headline's key facts changed within the hour"."""

from __future__ import annotations

import dataclasses

from pipelines.cli import main as newsroom
from tests.pipelines.commands.test_rollback import store_flags
from transforms.editions.beam.publishing import PublishSnapshotFn
from transforms.editions.book.storybook import StoryBook
from transforms.editions.cycle.trust import key_facts
from transforms.publishers import PublisherRegistry, default_registry


def top_ids(out) -> list[str]:
    return [s["story_id"] for s in out.pages["top"]["stories"]]


def section_ids(out, section: str = "world") -> list[str]:
    return [s["story_id"] for s in out.pages[section]["stories"]]


# ------------------------------------------------------------------------------------------------ corroboration
def test_a_single_strong_source_does_not_lead_top_stories_however_it_scores(world, make_ranker):
    T, MIN = world.T0, world.MIN
    # story 1: one strong publisher (0.85) and two weak ones, fresh -- it outscores story 2 on coverage x freshness
    world.story(1, ["daily-herald", "springfield-gazette", "content-farm"], T - 10 * MIN)
    world.story(2, ["capital-post", "pacific-times"], T - 3 * 60 * MIN)  # two strong, independent voices, older
    r = make_ranker(world)
    out = r.cycle(T)
    scores = {s["story_id"]: s["score"] for s in out.pages["world"]["stories"]}
    assert scores["1"] > scores["2"]  # on score alone story 1 would lead
    assert top_ids(out) == ["2", "1"]  # corroborated first; the uncorroborated one only fills the page after it
    assert section_ids(out)[0] == "1"  # section pages do not gate on corroboration


def test_sister_sites_of_one_owner_count_as_one_voice(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald", "pacific-times"], T - 10 * MIN)
    world.story(2, ["capital-post", "london-chronicle"], T - 3 * 60 * MIN)
    r = make_ranker(world)
    assert top_ids(r.cycle(T))[0] == "1"  # two groups: corroborated, and the fresher
    owned = make_ranker(world)  # the same world, with daily-herald and pacific-times under one owner
    group = {"daily-herald", "pacific-times"}
    reg = PublisherRegistry(
        [dataclasses.replace(p, owner="herald-group") if p.publisher_id in group else p for p in default_registry()]
    )
    owned.book = StoryBook(owned.config, reg, owned.edition.language)
    assert top_ids(owned.cycle(T))[0] == "2"


def test_a_breaking_story_is_corroborated_by_the_breaking_rule(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["capital-post", "pacific-times"], T - 10 * MIN)
    world.story(7, ["daily-herald"], T - 5 * MIN, title="Wildfire forces evacuations across the valley tonight")
    r = make_ranker(world)
    r.breaking(7, T)  # the burst job judged it Breaking (5 strong publishers in its window)
    out = r.cycle(T)
    assert top_ids(out)[0] == "7" and "breaking" in out.pages["top"]["stories"][0]["labels"]


# --------------------------------------------------------------------------------------------------------- hold
def fast_low_trust_world(world):
    T, MIN = world.T0, world.MIN
    world.story(1, ["capital-post", "pacific-times"], T - 60 * MIN, title="Council approves the new transit budget")
    world.story(2, ["daily-herald", "london-chronicle"], T - 90 * MIN, title="Rail strike talks resume on Monday")
    for k in range(8):  # 8 originals in 20 minutes, all from unknown hosts (authority 0.1)
        world.add(9, world.article(f"viral-site-{k}", T - 20 * MIN + k * 2 * MIN, title="Miracle cure found"))
    return T


def test_a_fast_story_of_only_low_trust_sources_is_held_and_listed(world, make_ranker):
    T = fast_low_trust_world(world)
    out = make_ranker(world).cycle(T)
    assert "9" not in top_ids(out)
    assert set(top_ids(out)) == {"1", "2"}
    assert section_ids(out)[-1] == "9"  # still on its section page, after every other story
    assert out.stats["held"] == 1
    (held,) = out.pool["held"]
    assert held["story_id"] == "9" and held["reason"] == "fast_low_trust"
    assert held["originals_30m"] == 8 and held["top_authority"] < 0.3 and held["velocity"] >= 1.5


def test_a_slow_low_trust_story_is_not_held_and_one_strong_source_lifts_the_hold(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["capital-post", "pacific-times"], T - 60 * MIN)
    world.story(3, ["content-farm", "viral-a"], T - 20 * MIN)  # low trust, but 2 originals: not fast
    for k in range(8):
        world.add(9, world.article(f"viral-site-{k}", T - 20 * MIN + k * 2 * MIN))
    world.add(9, world.article("springfield-gazette", T - 5 * MIN))  # 0.35: no longer *only* low-trust
    out = make_ranker(world).cycle(T)
    assert "held" not in out.pool and out.stats["held"] == 0
    assert {"3", "9"} <= set(top_ids(out))  # uncorroborated: after story 1, but shown


def test_newsroom_control_held_lists_the_live_pool_s_held_stories(store_config, world, make_ranker, capsys):
    T = fast_low_trust_world(world)
    out = make_ranker(world).cycle(T)
    fn = PublishSnapshotFn(store_config)
    fn.setup()
    v = out.pool["version"]
    item = {"kind": "candidate_pool", "pointer": "pool/us-en", "version": v, "doc": out.pool, "min_stories": 1}
    assert list(fn.process(dict(item, path="")))[0]["outcome"] == "published"
    capsys.readouterr()
    assert newsroom(["control", "held", "--edition", "us-en", *store_flags(store_config)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and "story 9" in lines[0] and "fast_low_trust" in lines[0] and "8 originals" in lines[0]
    assert newsroom(["control", "held", "--edition", "gb-en", *store_flags(store_config)]) == 1  # no pool there


# --------------------------------------------------------------------------------------------------- developing
def test_key_facts_are_the_numbers_and_named_entities_of_a_headline():
    assert key_facts("Storm kills 5 in Florida as Governor Smith declares emergency") == (
        "e:florida",
        "e:governor",
        "e:smith",
        "n:5",
    )
    assert key_facts("Storm Kills Five In Florida As Governor Declares Emergency") == ()  # title case: no telling
    assert key_facts("Budget of 1,200 million passes") == ("n:1200",)


def test_developing_is_set_when_the_headline_s_facts_change_within_the_hour(world, make_ranker):
    T, MIN = world.T0, world.MIN
    first = world.article("daily-herald", T - 30 * MIN, title="Storm kills 5 in Florida overnight, officials say")
    world.add(1, first)
    world.add(1, world.article("capital-post", T - 29 * MIN, title="Storm kills 5 in Florida overnight, officials say"))
    world.story(2, ["pacific-times", "london-chronicle"], T - 40 * MIN)
    r = make_ranker(world)

    def labels(out):
        return {s["story_id"]: s["labels"] for s in out.pages["top"]["stories"]}["1"]

    assert "developing" not in labels(r.cycle(T))  # first facts seen: nothing changed
    upd = dict(first, version=2, title="Storm kills 7 in Florida overnight, officials say")
    world.add(1, upd)
    world.changes[-1]["at"] = T + 5 * MIN - 1000
    assert "developing" in labels(r.cycle(T + 5 * MIN))  # 5 -> 7 dead
    assert "developing" in labels(r.cycle(T + 64 * MIN))
    assert "developing" not in labels(r.cycle(T + 66 * MIN))  # an hour after the change


def test_a_velocity_surge_alone_no_longer_labels_a_story_developing(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["capital-post", "pacific-times"], T - 10 * MIN, title="Talks on the port dispute continue")
    r = make_ranker(world)
    r.breaking(1, T - MIN, kind="developing")  # the burst job's 30-minute surge pulse
    out = r.cycle(T)
    assert "developing" not in out.pages["top"]["stories"][0]["labels"]


def test_headline_rotation_between_old_reports_is_not_developing(world, make_ranker):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    world.add(1, world.article("daily-herald", T - 3 * HOUR, title="Storm kills 5 in Florida overnight, officials say"))
    world.add(1, world.article("capital-post", T - 3 * HOUR, title="Storm kills 7 across Georgia, Governor Kemp says"))
    world.story(2, ["pacific-times", "london-chronicle"], T - 40 * MIN)
    r = make_ranker(world)
    for k in range(0, 8):  # eight cycles, hours after the last report: the near-tie headline may rotate
        out = r.cycle(T + k * 30 * MIN)
        card = {s["story_id"]: s for s in out.pages["top"]["stories"]}["1"]
        assert "developing" not in card["labels"]
    from transforms.editions.cycle.trust import developing

    class Memory:
        facts = {1: (("e:florida", "n:5"), 0)}  # the story's facts as first shown

    book, rep = r.book, r.book.articles.row_of[world.changes[1]["article_id"]]
    assert developing(book, [1], [rep], Memory, T + 4 * HOUR, r.params) == [False]  # rotation to the other report
    assert set(Memory.facts[1][0]) >= {"n:5", "n:7", "e:georgia"} and Memory.facts[1][1] == 0


def test_story_labels_never_repeat_an_article_label_and_a_fact_check_is_named_once(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald", "capital-post"], T - 20 * MIN, opinion=True)  # an opinion-only story
    world.add(2, world.article("pacific-times", T - 30 * MIN, title="Claims about the new dam are checked"))
    world.add(2, world.article("london-chronicle", T - 29 * MIN, fact_check=True))
    world.add(3, world.article("mumbai-daily", T - 25 * MIN, fact_check=True, title="Fact check: the dam claims"))
    world.add(3, world.article("wirepress", T - 24 * MIN, fact_check=True, title="Fact check: dam figures wrong"))
    out = make_ranker(world).cycle(T)
    cards = {s["story_id"]: s for s in out.pages["top"]["stories"] + out.pool["stories"]}
    for s in cards.values():
        rep = s["representative"]["labels"]
        assert "opinion" not in s["labels"] and not set(s["labels"]) & set(rep), s
    assert "opinion" in cards["1"]["representative"]["labels"]
    two = cards["2"]
    assert ("fact_check" in two["labels"]) != ("fact_check" in two["representative"]["labels"])  # once, right place
    assert "fact_check" in cards["3"]["representative"]["labels"] and "fact_check" not in cards["3"]["labels"]
