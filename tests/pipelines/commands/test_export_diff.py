"""`newsroom export assignments` (the story store's decisions in the backfill's format), `newsroom diff` (two runs'
stories compared) and `newsroom evaluate` taking a run's assignments as gold."""

from __future__ import annotations

import json

from pipelines.cli import main as newsroom
from stores import StoreConfig, open_store


def read(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def member(at, title):
    return {"at": at, "title": title, "source": "s"}


DAY = 86_400_000
T0 = 1_780_000_000_000  # 2026-05-28


def live_store(data_dir):
    """A story store as the stories job leaves it: a merge (story 2 into 1, one member row left under the alias),
    a link across languages (1 en - 3 es), a story outside a later date range (4)."""
    st = open_store("stories", StoreConfig(data_dir=str(data_dir)))
    st.put_story(1, {"language": "en", "title": "Quake hits Chile"})
    st.add_members(1, {"a1": member(T0, "Quake hits Chile"), "a2": member(T0 + 1000, "Chile quake toll")})
    st.put_story(2, {"language": "en", "title": "Chile earthquake"})
    st.add_members(2, {"a3": member(T0 + 2000, "Chile earthquake")})
    st.set_alias(2, 1)
    st.put_story(3, {"language": "es", "title": "Terremoto en Chile"})
    st.add_members(3, {"e1": member(T0 + 3000, "Terremoto en Chile")})
    st.add_link(1, 3, {"score": 0.9})
    st.add_link(3, 1, {"score": 0.9})
    st.put_story(4, {"language": "en", "title": "Old news"})
    st.add_members(4, {"o1": member(T0 - 10 * DAY, "Old news")})
    st.put_story(5, {"title": "no language"})
    st.add_members(5, {"x1": member(T0, "orphan")})


def test_export_resolves_aliases_links_and_bounds(tmp_path, capsys):
    live_store(tmp_path / "live")
    out = tmp_path / "export"
    args = ["export", "assignments", f"--data_dir={tmp_path / 'live'}", f"--out={out}"]
    assert newsroom([*args, "--from=2026-05-20"]) == 0
    rows = {r["article_id"]: r for r in read(out / "assignments.jsonl")}
    assert {a: (r["story_id"], r["language"], r["group_id"]) for a, r in rows.items()} == {
        "a1": (1, "en", 1),
        "a2": (1, "en", 1),
        "a3": (1, "en", 1),  # left under the merged story 2: resolved to its survivor
        "e1": (3, "es", 1),  # linked with story 1: one group
    }
    dead = read(out / "dead_letters.jsonl")
    assert [(d["article_id"], "no language" in d["reason"]) for d in dead] == [("x1", True)]
    stories = {s["story_id"]: s for s in read(out / "stories.jsonl")}
    assert stories[1]["titles"]["a3"] == "Chile earthquake" and stories[1]["size"] == 3
    assert newsroom([*args]) == 0
    assert "o1" in {r["article_id"] for r in read(out / "assignments.jsonl")}


def test_export_refuses_bad_input_in_one_line(tmp_path, capsys):
    live_store(tmp_path / "live")
    assert newsroom(["export", "assignments", f"--data_dir={tmp_path / 'nope'}", f"--out={tmp_path / 'o'}"]) == 2
    assert newsroom(["export", "assignments", f"--data_dir={tmp_path / 'live'}", "--out=o", "--from=yesterday"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "no story store" in err[0] and "--from yesterday: not an ISO 8601" in err[1]


def runs(tmp_path):
    """Run A and run B over the same articles: A's story 1 split in B, A's stories 2 and 3 merged in B, one
    article of A's story 4 moved to B's story 14; A's story 5 unchanged."""
    a = [(1, "p1"), (1, "p2"), (1, "p3"), (1, "p4"), (2, "m1"), (2, "m2"), (3, "m3"), (3, "m4")]
    a += [(4, "v1"), (4, "v2"), (4, "v3"), (5, "u1"), (5, "u2"), (6, "w1")]
    b = {"p1": 11, "p2": 11, "p3": 12, "p4": 12, "m1": 13, "m2": 13, "m3": 13, "m4": 13}
    b |= {"v1": 14, "v2": 14, "v3": 16, "u1": 15, "u2": 15, "w1": 16}
    write(tmp_path / "a" / "assignments.jsonl", [{"article_id": x, "story_id": s, "language": "en"} for s, x in a])
    write(
        tmp_path / "b" / "assignments.jsonl",
        [{"article_id": x, "story_id": s, "language": "en"} for x, s in b.items()]
        + [{"article_id": "z", "story_id": 9}],
    )
    decisions = [{"kind": "decision", "article_id": x, "title": f"<b>{x}</b> headline", "seq": 1} for _, x in a]
    write(tmp_path / "a" / "explanations.jsonl", decisions)
    return tmp_path / "a", tmp_path / "b"


def test_diff_counts_splits_merges_moves_with_headlines_and_explain(tmp_path, capsys):
    a, b = runs(tmp_path)
    page = tmp_path / "diff.html"
    assert newsroom(["diff", str(a), str(b), f"--html={page}"]) == 0
    out = capsys.readouterr().out
    assert "1 only in B" in out
    en = next(x for x in out.splitlines() if x.startswith("en "))
    assert en.split() == ["en", "6", "6", "1", "1", "1", "1", "1"]  # A, B, unchanged, split, merged, moved, joined
    assert f"why: newsroom explain --output {a} --story 1" in out  # A is a backfill (explanations)
    assert "'<b>p3</b> headline'" in out
    text = page.read_text()
    assert "&lt;b&gt;p3&lt;/b&gt; headline" in text and "<b>p3" not in text
    assert newsroom(["diff", str(a), str(b), "--json", "--no-html"]) == 0
    d = json.loads(capsys.readouterr().out)
    kinds = sorted((c["kind"], c["side"], c["story_id"]) for c in d["languages"]["en"]["changes"])
    assert kinds == [("joined", "b", 16), ("merged", "b", 13), ("moved", "a", 4), ("split", "a", 1)]


def test_diff_lists_a_story_that_another_joined_whole(tmp_path, capsys):
    """As `newsroom run` then `backfill --from_store` showed: a live singleton that the backfill put into a story
    (no split, merge or move: nothing else explains the one story fewer)."""
    a = [(1, "s1"), (1, "s2"), (1, "s3"), (2, "x1"), (3, "y1"), (4, "q1")]
    b = {"s1": 11, "s2": 11, "s3": 11, "x1": 11, "y1": 13, "q1": 13}
    write(tmp_path / "a" / "assignments.jsonl", [{"article_id": x, "story_id": s, "language": "en"} for s, x in a])
    write(
        tmp_path / "b" / "assignments.jsonl", [{"article_id": x, "story_id": s, "language": "en"} for x, s in b.items()]
    )
    assert newsroom(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json", "--no-html"]) == 0
    d = json.loads(capsys.readouterr().out)["languages"]["en"]
    assert d["counts"] == {"articles": 6, "stories_a": 4, "stories_b": 2, "joined": 2}
    assert sorted((c["kind"], c["story_id"], [len(p["articles"]) for p in c["parts"]]) for c in d["changes"]) == [
        ("joined", 11, [3, 1]),
        ("joined", 13, [1, 1]),
    ]
    assert all(c["timing"] == [] for c in d["changes"])  # no decision times known: nothing said about them


def test_diff_says_which_articles_the_runs_decided_at_another_time(tmp_path, capsys):
    """The live writer decided x1 four minutes after its first-seen time (it arrived late): the export's
    decided_at against the backfill's explanations say so beside the change."""
    a = [(1, "s1"), (1, "s2"), (2, "x1")]
    write(tmp_path / "a" / "assignments.jsonl", [{"article_id": x, "story_id": s, "language": "en"} for s, x in a])
    write(tmp_path / "b" / "assignments.jsonl", [{"article_id": x, "story_id": 11, "language": "en"} for _, x in a])
    at = {x: 1_000_000 + i for i, (_, x) in enumerate(a)}
    late = dict(at, x1=at["x1"] + 240_000)
    stories = [{"story_id": s, "titles": {}, "decided_at": {x: late[x] for t, x in a if t == s}} for s in (1, 2)]
    write(tmp_path / "a" / "stories.jsonl", stories)
    write(tmp_path / "b" / "explanations.jsonl", [{"kind": "decision", "article_id": x, "at": at[x]} for _, x in a])
    assert newsroom(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json", "--no-html"]) == 0
    (change,) = json.loads(capsys.readouterr().out)["languages"]["en"]["changes"]
    assert change["kind"] == "joined" and change["timing"] == [
        {"article_id": "x1", "at_a": late["x1"], "at_b": at["x1"]}
    ]
    assert newsroom(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--no-html"]) == 0
    out = capsys.readouterr().out
    assert "decided at another time: x1 A 1970-01-01 00:20:40.002 UTC, B 1970-01-01 00:16:40.002 UTC" in out


def test_diff_refuses_a_missing_run_in_one_line(tmp_path, capsys):
    a, _ = runs(tmp_path)
    (tmp_path / "empty").mkdir()
    assert newsroom(["diff", str(a), str(tmp_path / "nope"), "--no-html"]) == 2
    assert newsroom(["diff", str(a), str(tmp_path / "empty"), "--no-html"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "no such folder" in err[0] and "no assignments.jsonl" in err[1]


def test_evaluate_takes_a_runs_assignments_as_gold(tmp_path, capsys):
    a, b = runs(tmp_path)
    args = ["evaluate", f"--gold={a / 'assignments.jsonl'}", "--no-html", "--json"]
    assert newsroom([*args, f"--pred={a / 'assignments.jsonl'}"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["b3_f1"] == 1.0
    assert newsroom([*args, f"--pred={b / 'assignments.jsonl'}"]) == 0
    r = json.loads(capsys.readouterr().out)["overall"]
    assert r["gold_stories_split"] == 2 and r["pred_stories_mixing"] == 2 and r["b3_f1"] < 1.0


def test_diff_names_the_articles_only_one_run_placed(tmp_path, capsys):
    """An export over --from/--to keeps an article by the time the live writer took it (a late one: after its
    first-seen time), a backfill by its first-seen time: at a bound one run holds articles the other does not, and
    the diff names them (time, headline) with the reasons, instead of a bare count."""
    write(tmp_path / "a" / "assignments.jsonl", [{"article_id": x, "story_id": 1, "language": "en"} for x in "pq"])
    write(tmp_path / "a" / "stories.jsonl", [{"story_id": 1, "titles": {"q": "<i>Quake</i>"}, "decided_at": {"q": 5}}])
    write(tmp_path / "b" / "assignments.jsonl", [{"article_id": "p", "story_id": 7, "language": "en"}])
    page = tmp_path / "diff.html"
    assert newsroom(["diff", str(tmp_path / "a"), str(tmp_path / "b"), f"--html={page}"]) == 0
    out = capsys.readouterr().out
    assert "only in A (1):" in out and "--from/--to" in out
    assert "q A 1970-01-01 00:00:00.005 UTC '<i>Quake</i>'" in out
    assert "&lt;i&gt;Quake" in page.read_text() and "<i>Quake" not in page.read_text()
    assert newsroom(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json", "--no-html"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["only"] == {"a": [{"article_id": "q", "at": 5, "language": "en", "title": "<i>Quake</i>"}], "b": []}


def test_an_export_of_a_range_without_articles_says_when_the_store_has_them(tmp_path, capsys):
    """docs/analysts.md's example range on a `newsroom run` store of other days wrote empty files and said only
    "exported 0 articles", and the next command (evaluate --scope run) was refused: the line says why."""
    live_store(tmp_path / "live")
    args = ["export", "assignments", f"--data_dir={tmp_path / 'live'}", f"--out={tmp_path / 'o'}"]
    assert newsroom([*args, "--from=2026-12-01", "--to=2026-12-08"]) == 0
    err = capsys.readouterr().err
    assert "exported 0 articles in 0 stories" in err
    assert "none of the store's 5 articles" in err and "2026-05-18 " in err and "2026-05-28 " in err
    assert newsroom([*args, "--language=de"]) == 0
    assert "none of the store's 5 articles" in capsys.readouterr().err
