"""The local backfill overlaps embedding with the writer (transforms/stories/writer/overlap.py); its files are byte-identical
to the sequential graph's (embedding stage first, then the writer), which Dataflow runs. The minilm case is slow
(the model); the hash case and tests/transforms/stories/test_overlap.py cover the same rule fast, and the embedder's
batch independence (tests/transforms/stories/test_embed.py) is what makes it hold for real vectors."""

from __future__ import annotations

import json

import pytest

from tests.pipelines.test_backfill import EVENTS


def one_language_file(path, n=36):
    rows = []
    for i in range(n):
        title, text = EVENTS[i % len(EVENTS)]
        rows.append(
            {
                "id": f"o{i:03d}",
                "story_id": f"g{i % len(EVENTS)}",
                "language": "en",
                "title": f"{title} {['report', 'update', 'live', 'video'][i % 4]}",
                "text": "",
                "published_at": f"2026-01-01T{i // 6:02d}:{(i % 6) * 5:02d}:00Z" if i % 9 else None,
                "publisher": f"Pub {i % 5}",
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def backfill(inp, out, overlap, *extra):
    from pipelines.backfill import run

    assert run([f"--input={inp}", f"--output={out}", *extra], overlap=overlap) == 0
    return json.loads((out / "manifest.json").read_text())


@pytest.mark.parametrize("embedder", ["hash", pytest.param("minilm", marks=pytest.mark.slow)])
def test_the_overlapped_backfill_writes_what_the_sequential_one_writes(tmp_path, capsys, embedder):
    inp = tmp_path / "in.jsonl"
    one_language_file(inp)
    extra = (f"--embedder={embedder}", "--batch_size=5")  # several batches: the writer advances between them
    seq = backfill(inp, tmp_path / "seq", False, *extra)
    capsys.readouterr()
    default = backfill(inp, tmp_path / "ovl", None, *extra)  # the local runner's default
    err = capsys.readouterr().err
    assert "[backfill] articles read: 36 of 36 (100%, " in err and "articles embedded (en): 36 of 36 (100%, " in err
    assert (seq["embedding"], default["embedding"]) == ("stage", "overlapped")
    for name in ("assignments.jsonl", "stories.jsonl"):
        assert (tmp_path / "seq" / name).read_bytes() == (tmp_path / "ovl" / name).read_bytes(), name
    assert seq["counts"] == default["counts"] and default["counts"]["articles"] == 36
    assert len({json.loads(x)["story_id"] for x in (tmp_path / "ovl" / "assignments.jsonl").open()}) > 1
