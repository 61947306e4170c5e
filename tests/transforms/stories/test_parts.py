"""Smaller parts of the stories stage: ids, text features, label stripping, times, fold, links, evaluation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipelines.commands import evaluate as ev
from pipelines.commands import evaluate_scores as scores
from tests.transforms.stories.synth import DIM, T0, TEST_CONFIG, article, make_articles, translated_events
from transforms.stories.backfill.assignments import assignment_rows, fold, link_groups
from transforms.stories.links.links import StoryLinker
from transforms.stories.vocabulary import features as F
from transforms.stories.vocabulary import ids as idmod
from transforms.stories.vocabulary import text as T
from transforms.stories.writer.cluster import StoryClusterer

# -- ids ---------------------------------------------------------------------------------------------------------


def test_id_layout_and_minting():
    a = idmod.mint(T0, "en", 0)
    assert a == (T0 << 20) | idmod.language_code("en")
    b = idmod.mint(T0, "en", a)  # same millisecond: the counter moves, the language stays
    assert b == a + (1 << 8) and idmod.id_language_code(b) == idmod.language_code("en")
    assert idmod.first_seen_ms(b) == T0
    assert idmod.mint(T0 + 1, "en", b) > b
    assert idmod.mint(T0, "es", 0) != a
    assert 200 <= idmod.language_code("xx-unknown") < 255
    assert idmod.change_id("en", 42, "ASSIGN") == idmod.change_id("en", 42, "ASSIGN")
    assert idmod.change_id("en", 42, "ASSIGN").startswith("en-000000000042-ASSIGN-")
    assert idmod.change_id("en", 42, "ASSIGN") != idmod.change_id("es", 42, "ASSIGN")


# -- text and features -----------------------------------------------------------------------------------------


def test_entities_keep_names_and_numbers_not_sentence_starters_or_weekdays():
    body = (
        "The quake struck on Tuesday. Officials in Valparaiso said 7.3 was the magnitude, "
        "and President Michelle Bachelet flew in. The damage was severe."
    )
    ents = T.entities("Chile quake kills 12", body, "en")
    assert {"valparaiso", "michelle", "bachelet", "7.3", "12"} <= ents
    assert "the" not in ents and "tuesday" not in ents and "officials" not in ents


def test_headline_only_entities_take_the_capitalised_title_words():
    ents = T.entities("Sbarro Files For Chapter 11 Again", "", "en")
    assert {"sbarro", "chapter", "11"} <= ents and "for" not in ents


def test_lede_skips_a_repeated_title_and_a_date_line():
    body = "Title here\nJanuary 25 , 2010\nAirbus has confirmed a glitch.\nMore text follows here."
    assert T.lede_of("Title here", body).startswith("Airbus has confirmed a glitch.")
    assert T.embed_text("Title here", "Lede.") == "Title here. Lede."
    assert T.embed_text("Title here?", "Lede.") == "Title here? Lede."


def test_labels_are_stripped_before_anything_reads_the_record():
    rec = {"id": "x1", "story_id": "GOLD", "topic": "T", "language": "en", "title": "A title", "text": "Body text."}
    assert "story_id" not in F.strip_labels(rec) and "topic" not in F.strip_labels(rec)
    f1 = F.from_labelled(rec, T0, True)
    f2 = F.from_labelled({**rec, "story_id": "OTHER", "topic": "X"}, T0, True)
    assert f1.to_dict() == f2.to_dict()
    assert "GOLD" not in json.dumps(f1.to_dict())


def test_missing_times_follow_file_order_one_second_apart():
    recs = [{"published_at": None}, {"published_at": "2014-03-10"}, {"published_at": ""}, {}]
    out = F.assign_times(recs)
    t10 = F.parse_time("2014-03-10")
    assert [(t, k) for _, t, k in out] == [
        (F.UNTIMED_EPOCH_MS, False),
        (t10, True),
        (t10 + 1000, False),
        (t10 + 2000, False),
    ]
    assert F.parse_time("2014-03-10T12:00:00Z") == t10 + 12 * 3_600_000
    assert F.parse_time("not a date") is None


def test_features_round_trip_exactly():
    f = article("a1", np.arange(DIM) + 0.5, T0, link_vector=np.ones(DIM))
    g = F.ArticleFeatures.from_dict(json.loads(json.dumps(f.to_dict())))
    assert g.to_dict() == f.to_dict()
    assert g.vector.dtype == np.float32 and np.array_equal(g.vector, f.vector)


# -- fold and links -------------------------------------------------------------------------------------------


def test_fold_rejects_an_article_assigned_twice():
    ch = {"language": "en", "seq": 1, "kind": "NEW_STORY", "story_id": 5, "article_id": "a", "at": T0}
    with pytest.raises(ValueError, match="assigned twice"):
        fold([ch, {**ch, "seq": 2, "kind": "ASSIGN", "story_id": 6}])


def test_linker_links_translations_mutually_and_groups_them():
    rng = np.random.default_rng(9)
    outputs = []
    writers = {}
    for lang in ("en", "es", "it"):
        arts = translated_events(lang, rng, entities=lambda e: (f"name{e}", f"{e}00"))
        writers[lang] = StoryClusterer(lang, config=TEST_CONFIG, exact_index=True)
        outputs += [o.to_dict() for o in writers[lang].run(arts, until=T0 + 5000)]
    linker = StoryLinker()
    for o in outputs:
        linker.observe(o)
    links = linker.link_changes(T0 + 5000)
    assert len(links) == 9  # 3 events x 3 language pairs
    assert [c["seq"] for c in links] == list(range(1, 10)) and all(c["language"] == "mul" for c in links)
    assert linker.link_changes(T0 + 6000) == []  # links are made once
    rows, stories = assignment_rows([o["change"] for o in outputs] + links)
    groups = {}
    for r in rows:
        groups.setdefault(r["group_id"], set()).add(r["article_id"][-1])
    assert sorted(groups.values(), key=sorted) == [{"0"}, {"1"}, {"2"}]
    assert link_groups({1: {"links": [2]}, 2: {"links": [1]}, 3: {"links": []}}) == {1: 1, 2: 1, 3: 3}


def test_a_link_component_never_holds_two_stories_of_one_language():
    """Two English stories (two events the English writer kept apart) never become one group through Spanish and
    Italian links: the weaker link that would close the chain is not made."""
    en_a, en_b = idmod.mint(T0, "en", 0), idmod.mint(T0 + 1, "en", 0)
    es, it = idmod.mint(T0, "es", 0), idmod.mint(T0, "it", 0)
    linker = StoryLinker()
    linker.linked = {(min(en_a, es), max(en_a, es))}
    proposed = [(min(es, it), max(es, it), 1.2), (min(it, en_b), max(it, en_b), 1.1)]
    assert linker._one_story_per_language(proposed) == [proposed[0]]
    # best first: the stronger link to en_b wins over the weaker chain through es
    proposed = [(min(es, it), max(es, it), 1.0), (min(it, en_b), max(it, en_b), 1.1)]
    assert linker._one_story_per_language(proposed) == [proposed[1]]
    linker.linked = set()
    assert linker._one_story_per_language(proposed) == sorted(proposed)  # es-it-en_b: one story per language


def test_linker_snapshot_rebuilds_the_live_view_without_gone_stories():
    rng = np.random.default_rng(5)
    outputs = []
    for lang in ("en", "es"):
        arts = translated_events(lang, rng)
        outputs += [
            o.to_dict() for o in StoryClusterer(lang, config=TEST_CONFIG, exact_index=True).run(arts, until=T0 + 5000)
        ]
    full = StoryLinker()
    for o in outputs:
        full.observe(o)
    gone = next(o["change"]["story_id"] for o in outputs if o["change"]["article_id"] == "en2")
    full.observe({"change": {"kind": "EXPIRE", "story_id": gone, "language": "en", "other_story_id": None}})
    rebuilt = StoryLinker()
    for o in full.snapshot():
        rebuilt.observe(o)
    assert set(rebuilt.stories) == set(full.stories) and gone not in rebuilt.stories
    for sid, st in full.stories.items():
        assert np.array_equal(rebuilt.stories[sid].vector(), st.vector())
        assert rebuilt.stories[sid].entities() == st.entities()
    assert rebuilt.propose() == full.propose() and len(full.propose()) == 2  # en2 expired: its pair is gone


# -- evaluation -----------------------------------------------------------------------------------------------


def test_scores_on_a_known_example():
    gold = {"a": "X", "b": "X", "c": "X", "d": "Y"}
    pred = {"a": 1, "b": 1, "c": 2, "d": 2}
    s = scores.score(gold, pred)
    # pairs: gold {ab, ac, bc}; predicted {ab, cd}; correct {ab}
    assert s["pair_precision"] == pytest.approx(1 / 2) and s["pair_recall"] == pytest.approx(1 / 3)
    # B-cubed precision: a 1, b 1, c 1/2, d 1/2 -> 3/4; recall: a 2/3, b 2/3, c 1/3, d 1 -> 2/3
    assert s["b3_precision"] == pytest.approx(0.75) and s["b3_recall"] == pytest.approx(2 / 3)
    assert s["gold_stories_split"] == 1 and s["pred_stories_mixing"] == 1
    perfect = scores.score(gold, {"a": 1, "b": 1, "c": 1, "d": 2})
    assert perfect["b3_f1"] == 1.0 and perfect["pair_f1"] == 1.0


def test_evaluate_command_uses_links_and_reports_per_language(tmp_path, capsys):
    gold = tmp_path / "gold.jsonl"
    pred = tmp_path / "assignments.jsonl"
    gold.write_text(
        "\n".join(
            json.dumps({"id": i, "story_id": s, "language": lg})
            for i, s, lg in (("e1", "S", "en"), ("s1", "S", "es"), ("e2", "U", "en"), ("s2", "U", "es"))
        )
    )
    pred.write_text(
        "\n".join(
            json.dumps({"article_id": a, "story_id": sid, "group_id": g})
            for a, sid, g in (("e1", 1, 1), ("s1", 2, 1), ("e2", 3, 3), ("s2", 4, 4))
        )
    )
    r = ev.report(str(gold), str(pred))
    assert r["overall"]["pair_precision"] == 1.0 and r["overall"]["pair_recall"] == 0.5
    assert ev.report(str(gold), str(pred), links=False)["overall"]["pair_recall"] == 0.0
    assert set(r["languages"]) == {"en", "es"}
    import argparse

    parser = argparse.ArgumentParser()
    ev.add_arguments(parser)
    assert ev.main(parser.parse_args(["--gold", str(gold), "--pred", str(pred)])) == 0
    assert "overall" in capsys.readouterr().out


def test_evaluate_module_has_no_heavy_imports():
    import subprocess
    import sys

    code = (
        "import sys, pipelines.commands.evaluate; "
        "bad = [m for m in ('apache_beam', 'torch', 'sentence_transformers', 'scann') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert res.returncode == 0, res.stdout + res.stderr


def test_make_articles_is_deterministic():
    a, _ = make_articles(seed=3)
    b, _ = make_articles(seed=3)
    assert [x.to_dict() for x in a] == [x.to_dict() for x in b]


def _linked(en_kw: dict, es_kw: dict) -> list:
    """Links between one English and one Spanish story whose multilingual vectors are identical (mutual best)."""
    outputs = []
    for lang, kw in (("en", en_kw), ("es", es_kw)):
        a = article(
            f"{lang}0",
            np.ones(DIM),
            kw.get("at", T0),
            language=lang,
            link_vector=np.ones(DIM),
            time_known=kw.get("time_known", True),
            **kw["art"],
        )
        outputs += [
            o.to_dict()
            for o in StoryClusterer(lang, config=TEST_CONFIG, exact_index=True).run([a], until=a.first_seen_at + 5000)
        ]
    linker = StoryLinker()
    for o in outputs:
        linker.observe(o)
    rebuilt = StoryLinker()  # the streaming linker's state between ticks: its snapshot
    for o in linker.snapshot():
        rebuilt.observe(o)
    assert rebuilt.propose() == linker.propose()
    return linker.propose()


def test_a_link_needs_a_shared_entity_and_times_that_overlap():
    """Mutual best is only the best of what is live: without one shared name or number, or more than a week apart, two
    stories are not one event however close their vectors. Unknown times are neutral."""
    same = {"art": {"entities": ("ryanair", "737")}}
    assert len(_linked(same, same)) == 1
    assert _linked(same, {"art": {"entities": ("airbus", "qatar")}}) == []
    assert _linked(same, {**same, "at": T0 + 9 * 24 * 3_600_000}) == []
    assert len(_linked(same, {**same, "at": T0 + 9 * 24 * 3_600_000, "time_known": False})) == 1


def test_the_backfill_links_its_slim_outputs_as_the_full_ones():
    """The backfill folds slimmed writer outputs (transforms/stories/backfill/backfill_files.py): they keep what the linker
    reads, member times included, so a backfill links what the in-process run links."""
    from transforms.stories.backfill.backfill_files import slim_output
    from transforms.stories.backfill.local import link_outputs

    outputs = []
    for lang, at in (("en", T0), ("es", T0 + 9 * 24 * 3_600_000)):
        a = article(f"{lang}0", np.ones(DIM), at, language=lang, entities=("ryanair",), link_vector=np.ones(DIM))
        outputs += [o.to_dict() for o in StoryClusterer(lang, config=TEST_CONFIG, exact_index=True).run([a], at + 1)]
    assert link_outputs(outputs) == []
    assert link_outputs([slim_output(o) for o in outputs]) == []


def test_fold_keeps_an_existing_story_that_a_split_moves_articles_into():
    """A SPLIT may name a live story as the receiver (the re-clustering repair): its summary is not reset."""
    from transforms.stories.backfill.assignments import fold as fold_changes

    def ch(seq, kind, sid, **kw):
        return {"language": "en", "seq": seq, "kind": kind, "story_id": sid, "at": 1000 * seq, **kw}

    changes = [
        ch(1, "NEW_STORY", 10, article_id="a"),
        ch(2, "ASSIGN", 10, article_id="b"),
        ch(3, "NEW_STORY", 20, article_id="c"),
        ch(4, "SPLIT", 10, other_story_id=20, article_ids=["b"]),
    ]
    assign, stories, _ = fold_changes(changes)
    assert assign == {"a": 10, "b": 20, "c": 20}
    assert stories[20]["first_at"] == 3000 and "split_from" not in stories[20]
    assert stories[20]["articles"] == ["b", "c"]
