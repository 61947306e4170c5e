"""Authority scoring on hand-built stories: each case fails on the wrong logic it names."""

from __future__ import annotations

import pytest

from transforms.authority import scoring as sc
from transforms.publishers import UNKNOWN_AUTHORITY, PublisherRegistry

REG = PublisherRegistry.from_dicts(
    [
        {"publisher_id": "wire", "name": "Wire", "hosts": ["wire.test"], "region": "", "language": "en",
         "authority": 0.9},
        {"publisher_id": "herald", "name": "Herald", "hosts": ["herald.test"], "region": "us", "language": "en",
         "authority": 0.5, "owner": "mediaco", "topic_authority": {"business": 0.8}},
        {"publisher_id": "herald-west", "name": "Herald West", "hosts": ["hw.test"], "region": "us",
         "language": "en", "authority": 0.5, "owner": "mediaco"},
        {"publisher_id": "gazette", "name": "Gazette", "hosts": ["gazette.test"], "region": "us", "language": "en",
         "authority": 0.4},
    ]
)  # fmt: skip
GROUP = sc.group_function(REG)
NO_PRIOR = sc.AuthorityParams(prior_weight=0.0)


def m(aid, pid, at, copy_of=None, corrected=False):
    return {"article_id": aid, "publisher_id": pid, "at": at, "is_copy": bool(copy_of), "copy_of": copy_of,
            "corrected": corrected}  # fmt: skip


def story(*members, section=None, sid=1):
    return {"story_id": sid, "section": section, "members": list(members)}


def ev(fact):
    return sc.story_evidence(fact, GROUP)


def test_first_report_goes_to_the_earliest_original_not_the_earliest_copy():
    # A copy published before the original is found (clock skew) is not a first report.
    e = ev(story(m("c", "gazette", 5, copy_of="a"), m("a", "wire", 10), m("b", "herald", 20)))
    assert e[("wire", "")]["first"] == 1
    assert e[("gazette", "")]["first"] == 0 and e[("herald", "")]["first"] == 0


def test_sister_outlets_first_together_count_once():
    e = ev(story(m("a", "herald", 10), m("b", "herald-west", 10), m("c", "wire", 10)))
    firsts = {pid: e[(pid, "")]["first"] for pid in ("herald", "herald-west", "wire")}
    # Same minute: the group mediaco is one voice (its earliest outlet by article id), the wire another.
    assert firsts == {"herald": 1, "herald-west": 0, "wire": 1}


def test_pickup_counts_other_groups_only():
    e = ev(
        story(
            m("a", "herald", 10),
            m("b", "herald-west", 20, copy_of="a"),  # sister outlet: not picked up by others
            m("w", "wire", 5),
            m("x", "gazette", 30, copy_of="w"),  # another group: picked up
            m("y", "herald", 40, copy_of="w"),  # another group again: still one picked-up original
        )
    )
    assert e[("herald", "")]["picked_up"] == 0
    assert e[("wire", "")]["picked_up"] == 1
    # The sister copy is neither an article nor a copy of herald-west: one voice, counted at the source.
    assert ("herald-west", "") not in e
    # A copy from another group lowers the copier's original share.
    assert e[("gazette", "")] == {"articles": 1, "originals": 0, "stories": 0, "first": 0, "picked_up": 0,
                                  "corrected": 0, "redated": 0, "self_copies": 0}  # fmt: skip
    assert e[("herald", "")]["articles"] == 2 and e[("herald", "")]["originals"] == 1


def test_sections_are_counted_apart_and_in_general():
    e = ev(story(m("a", "wire", 1), section="business"))
    assert e[("wire", "business")] == e[("wire", "")]
    assert ("wire", "sports") not in e


def test_evidence_score_formula():
    cnt = {"articles": 10, "originals": 8, "stories": 4, "first": 2, "picked_up": 4, "corrected": 1}
    want = 0.4 * 0.8 + 0.3 * 0.5 + 0.3 * 0.5 - 2.0 * 0.1
    assert sc.evidence_score(cnt) == pytest.approx(want)
    assert sc.evidence_score({"articles": 0}) == 0.0
    assert sc.evidence_score({"articles": 2, "originals": 0, "corrected": 2}) == 0.0  # clamped, not negative


def test_shrinkage_keeps_small_publishers_near_their_prior():
    perfect = {"articles": 5, "originals": 5, "stories": 5, "first": 5, "picked_up": 5, "corrected": 0}
    small = sc.authority(perfect, prior=0.1)
    assert small == pytest.approx((50 * 0.1 + 5 * 1.0) / 55)
    assert small < 0.2
    big = sc.authority({k: v * 100 for k, v in perfect.items()}, prior=0.1)
    assert big > 0.9
    assert sc.authority({"articles": 0}, prior=0.37) == pytest.approx(0.37)


def test_unknown_publishers_start_at_the_default_and_rise_on_evidence():
    facts = [story(m(f"u{i}", "newsite.test", i), m(f"c{i}", "gazette", i + 1, copy_of=f"u{i}"), sid=i)
             for i in range(200)]  # fmt: skip
    out = sc.compute_from_facts(facts, REG)
    # every story: first, original, picked up by another group -> evidence 1.0
    assert out["newsite.test"]["authority"] == pytest.approx((50 * UNKNOWN_AUTHORITY + 200) / 250, abs=1e-6)
    assert out["newsite.test"]["authority"] > 0.5  # can now count as a strong publisher for Breaking
    assert out["gazette"]["authority"] == pytest.approx(50 * 0.4 / 250, abs=1e-6)  # only copies: evidence 0
    assert out["wire"] == {
        "authority": 0.9,
        "topic_authority": {},
        "evidence": dict.fromkeys(sc.COUNT_FIELDS, 0),
        "abuse_cut": 0.0,
    }


def test_section_prior_is_the_hand_set_topic_else_the_computed_general():
    facts = [story(m(f"h{i}", "herald", i), section="business", sid=i) for i in range(50)]
    facts += [story(m(f"t{i}", "herald", i), section="technology", sid=100 + i) for i in range(50)]
    out = sc.compute_from_facts(facts, REG)["herald"]
    general = out["authority"]  # 100 articles, evidence 0.7 (original and first, never picked up), prior 0.5
    assert general == pytest.approx((50 * 0.5 + 100 * 0.7) / 150, abs=1e-6)
    assert out["topic_authority"]["business"] == pytest.approx((50 * 0.8 + 50 * 0.7) / 100, abs=1e-6)
    assert out["topic_authority"]["technology"] == pytest.approx((50 * general + 50 * 0.7) / 100, abs=1e-5)


def test_corrections_lower_authority():
    clean = [story(m(f"a{i}", "gazette", i), sid=i) for i in range(100)]
    fixed = [story(m(f"a{i}", "gazette", i, corrected=i < 20), sid=i) for i in range(100)]
    a = sc.compute_from_facts(clean, REG, NO_PRIOR)["gazette"]["authority"]
    b = sc.compute_from_facts(fixed, REG, NO_PRIOR)["gazette"]["authority"]
    assert a == pytest.approx(0.7) and b == pytest.approx(0.7 - 2.0 * 0.2)  # never picked up: 0.4 + 0.3


def test_has_correction_reads_notices_not_updates():
    assert sc.has_correction({"body": "Correction: an earlier version misnamed the minister."})
    assert sc.has_correction({"lede": "An earlier version of this article said 12."})
    assert sc.has_correction({"body": "Fe de errores: la cifra era 12."})
    assert not sc.has_correction({"title": "Minister updates budget", "body": "Updated at 10:00"})
    assert not sc.has_correction(None)


def test_story_fact_takes_publisher_section_and_corrections_from_articles():
    row = {"story_id": 7, "members": {"a": {"at": 5, "source": "x"}, "b": {"at": 9, "source": "y", "is_copy": True,
                                                                         "copy_of": "a"}}}  # fmt: skip
    arts = {
        "a": {"publisher_id": "wire", "section": "Business", "body": "Correction: 12 not 13."},
        "b": {"publisher_id": "gazette", "topics": ["sports"]},
    }
    fact = sc.story_fact(row, arts, {"business": "business", "sports": "sports"}, ["sports", "business"])
    assert fact["section"] == "sports"  # tie 1-1: the earlier section of the editions file
    assert [(x["publisher_id"], x["corrected"], x["copy_of"]) for x in fact["members"]] == [
        ("wire", True, None),
        ("gazette", False, "a"),
    ]
    fact = sc.story_fact(row, {"a": None, "b": None}, {}, [])
    assert [x["publisher_id"] for x in fact["members"]] == ["x", "y"] and fact["section"] is None
