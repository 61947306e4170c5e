"""A resumed backfill does not decide again what its checkpoint holds: the writer checkpoints as it decides
(transforms/stories/backfill/checkpoint.py), a run interrupted after some checkpoints leaves them in OUTPUT/checkpoint,
and `--resume` continues from the last one: its writer decides only the articles the checkpoint had not decided
(counted here), and its files are byte-identical to an uninterrupted run's."""

from __future__ import annotations

import pytest

from tests.pipelines.test_backfill import labelled_file

FILES = ("assignments.jsonl", "stories.jsonl", "explanations.jsonl", "storylines.jsonl", "storyline_changes.jsonl")


class Interrupted(Exception):
    pass


def test_a_resumed_run_decides_only_what_its_checkpoint_had_not_and_writes_the_same_bytes(tmp_path, monkeypatch):
    from pipelines.backfill import run
    from transforms.stories.backfill import checkpoint as ckmod
    from transforms.stories.writer.cluster import StoryClusterer

    inp = tmp_path / "in.jsonl"
    labelled_file(inp, bad_line=False)  # 12 English articles, one Spanish
    monkeypatch.setattr(ckmod, "STEP", 3)
    monkeypatch.setattr(ckmod, "EVERY_S", 0.0)
    decided: list[str] = []
    real_decide = StoryClusterer._decide

    def counting(self, f):
        decided.append(f.article_id)
        return real_decide(self, f)

    monkeypatch.setattr(StoryClusterer, "_decide", counting)
    argv = [f"--input={inp}", "--embedder=hash"]
    assert run([*argv, f"--output={tmp_path / 'whole'}"]) == 0
    whole = sorted(decided)
    assert len(whole) == 13

    real_save, saves = ckmod.WriterCheckpoint.save, []

    def save_then_stop(self, writer, outputs, force=False):
        saved = real_save(self, writer, outputs, force)
        if self.language == "en" and saved:
            saves.append(len(outputs))
            if len(saves) == 2:  # two steps of the English writer checkpointed: stop as a crash would
                raise Interrupted("stopped after two checkpoints")
        return saved

    monkeypatch.setattr(ckmod.WriterCheckpoint, "save", save_then_stop)
    out = tmp_path / "resumed"
    decided.clear()
    with pytest.raises(Exception, match="stopped after two checkpoints"):
        run([*argv, f"--output={out}"])
    first = list(decided)
    monkeypatch.setattr(ckmod.WriterCheckpoint, "save", real_save)
    held = {
        lang: ckmod.decided_ids(ckmod.WriterCheckpoint(str(out / "checkpoint"), lang).load()[1])
        for lang in "en es".split()
    }
    assert len(held["en"]) == 6 and set(held["en"]) <= set(first)

    decided.clear()
    assert run([*argv, f"--output={out}", "--resume"]) == 0
    again = sorted(decided)
    assert not set(again) & held["en"] and not set(again) & held["es"]  # nothing checkpointed is decided again
    assert sorted(again + sorted(held["en"] | held["es"])) == whole  # and everything else is, once
    for name in FILES:
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
