"""Abuse lowers authority: repeated re-dating (a stated publication time far after first seen)
and near-duplicate flooding (copies of oneself under other URLs) cut a publisher's computed authority, whatever
its hand-set prior; a single slip costs nothing. Thresholds: transforms/authority/scoring.py."""

from __future__ import annotations

from transforms.authority import scoring as sc
from transforms.publishers import PublisherRegistry

HOUR = 3_600_000
REG = PublisherRegistry.from_dicts(
    [
        {"publisher_id": p, "name": p, "hosts": [f"{p}.test"], "region": "us", "language": "en", "authority": 0.8}
        for p in ("honest", "redater", "flooder", "other")
    ]
)


def member(aid, pid, at, copy_of=None, redated=False):
    return {"article_id": aid, "publisher_id": pid, "at": at, "is_copy": bool(copy_of), "copy_of": copy_of,
            "corrected": False, "redated": redated}  # fmt: skip


def stories(pid: str, n: int = 20, redated: int = 0, self_copies: int = 0) -> list[dict]:
    """``n`` stories, each with an original by ``pid`` and one by "other"; the first ``redated`` of pid's
    originals re-dated, the first ``self_copies`` stories also carrying a copy of pid's own article."""
    out = []
    for k in range(n):
        members = [member(f"{pid}-{k}", pid, 10, redated=k < redated), member(f"o-{k}", "other", 20)]
        if k < self_copies:
            members.append(member(f"{pid}-{k}-dup", pid, 30, copy_of=f"{pid}-{k}"))
        out.append({"story_id": k, "section": None, "members": members})
    return out


def rated(facts) -> dict:
    return sc.compute_from_facts(facts, REG)


def test_repeated_re_dating_lowers_authority():
    honest = rated(stories("honest"))["honest"]["authority"]
    redater = rated(stories("redater", redated=10))["redater"]
    assert redater["evidence"]["redated"] == 10
    assert redater["authority"] < honest * 0.5  # half its articles re-dated: W_REDATE * 0.5 = 1.5 -> the 0.9 cap
    assert redater["abuse_cut"] == sc.MAX_ABUSE_CUT


def test_a_single_re_dating_is_not_punished():
    assert (
        rated(stories("redater", redated=sc.ABUSE_MIN - 1))["redater"]["authority"]
        == (rated(stories("honest"))["honest"]["authority"])
    )


def test_copies_of_oneself_under_other_urls_lower_authority():
    honest = rated(stories("honest"))["honest"]["authority"]
    flooder = rated(stories("flooder", self_copies=5))["flooder"]
    assert flooder["evidence"]["self_copies"] == 5
    # 5 copies over 25 articles: cut 2.0 * 5 / 25 = 0.4
    assert abs(flooder["authority"] - honest * (1 - 0.4)) < 1e-6
    assert rated(stories("flooder", self_copies=2))["flooder"]["authority"] == honest  # fewer than 3: a slip


def test_a_sister_outlet_s_copy_is_syndication_not_flooding():
    reg = PublisherRegistry.from_dicts(
        [dict(p, owner="group") if p["publisher_id"] in ("flooder", "other") else p for p in (
            {"publisher_id": q, "name": q, "hosts": [f"{q}.test"], "region": "us", "language": "en",
             "authority": 0.8} for q in ("flooder", "other"))]
    )  # fmt: skip
    facts = [
        {"story_id": k, "section": None,
         "members": [member(f"f-{k}", "flooder", 10), member(f"o-{k}", "other", 20, copy_of=f"f-{k}")]}
        for k in range(10)
    ]  # fmt: skip
    assert sc.compute_from_facts(facts, reg)["other"]["evidence"]["self_copies"] == 0


def test_story_fact_marks_an_article_re_dated_from_its_stated_time():
    story = {"story_id": 1, "members": {"a": {"at": 0, "source": "x"}, "b": {"at": 0, "source": "x"}}}
    arts = {
        "a": {"publisher_id": "x", "first_seen_at": 0, "stated_published_at": sc.REDATE_MS + HOUR},
        "b": {"publisher_id": "x", "first_seen_at": 0, "stated_published_at": sc.REDATE_MS - HOUR},  # zone slip
    }
    fact = sc.story_fact(story, arts, {}, [])
    assert [mm["redated"] for mm in fact["members"]] == [True, False]
