"""The bounded writer's checkpoints (transforms/stories/backfill/checkpoint.py) come about every EVERY_S seconds
whatever the run's size: its steps are sized from the writer's measured rate, not only capped at STEP articles (a
run under STEP articles used to checkpoint only at its end); and the tick's embedding progress counts the whole
tick, not the step ("embedded 2048 of 4096" on a 9,937-article run)."""

from __future__ import annotations

from types import SimpleNamespace

from tests.transforms.stories.test_overlap import END, embed_with, features, outputs
from transforms.stories.backfill import checkpoint as ckmod
from transforms.stories.embed.embed import HashEmbedder
from transforms.stories.writer.cluster import StoryClusterer


class FakeWriter:
    """Decides one queued article per 0.1 s of a fake clock."""

    def __init__(self, clock, n):
        self.clock, self.times = clock, [1000 + 10 * (i // 2) for i in range(n)]  # two articles per millisecond

    def queued(self):
        return [SimpleNamespace(first_seen_at=t) for t in self.times]

    def advance(self, bound):
        made = [t for t in self.times if t <= bound]
        self.times = self.times[len(made) :]
        self.clock[0] += 0.1 * len(made)
        return [{"change": {"article_id": str(t)}} for t in made]


def test_a_run_smaller_than_a_step_checkpoints_about_every_every_s_seconds(tmp_path, monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(ckmod, "_clock", lambda: clock[0])
    w = FakeWriter(clock, 1000)  # 100 s of deciding, a quarter of STEP
    ck = ckmod.WriterCheckpoint(str(tmp_path), "en", every_s=30.0)
    saved_at = []

    def after(made):
        if ck.save(w, made):
            saved_at.append(clock[0])

    got = [o for made in ckmod.advance_in_steps(w, END, w.advance, ckmod.STEP, after, ck.due_in) for o in made]
    assert len(got) == 1000 and not w.times
    gaps = [b - a for a, b in zip(saved_at, saved_at[1:])]
    assert saved_at[0] < 10 and len(gaps) >= 2, saved_at  # the first after a short step, then by the clock
    assert all(30 <= g <= 31 for g in gaps), gaps


def test_the_embedding_progress_of_a_stepped_tick_counts_the_whole_tick(tmp_path, monkeypatch, capsys):
    from transforms.stories.beam.writer import ClusterStoriesFn

    monkeypatch.setattr(ckmod, "STEP", 10)
    monkeypatch.setattr(ckmod, "EVERY_S", 0.0)
    model = HashEmbedder(32)
    fn = ClusterStoriesFn(None, bounded=str(tmp_path), embed=("hash", 4))
    fn.setup()
    monkeypatch.setattr(fn, "_encoder", lambda language: (model.encode, model.name))
    incs = []
    fn.embedded = SimpleNamespace(inc=incs.append)  # Beam's counter: every article embedded counted once
    fn._checkpoints["en"] = (ckmod.WriterCheckpoint(str(tmp_path), "en"), [], set())
    w = StoryClusterer("en")
    for f in features(36):
        w.add(f)
    got = list(fn._advance_checkpointed("en", w, END, None))
    embedded = [x for x in capsys.readouterr().err.splitlines() if "articles embedded (en)" in x]
    assert embedded and all(" of 36 " in x for x in embedded), embedded
    assert "embedded (en): 36 of 36 (100%" in embedded[-1]
    assert sum(incs) == 36, incs  # the first batch of each step was counted as 0

    done = features(36)
    embed_with(model)(done)
    assert got == outputs(StoryClusterer("en").run(done, until=END))  # the steps decide what one advance decides
