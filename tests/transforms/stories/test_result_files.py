"""Backfill result files go through Beam's filesystems for remote paths: on Dataflow a worker's local disk (a folder
literally named "gs:") would lose them."""

import io
import json

from apache_beam.io.filesystems import FileSystems

from stores.beam_io import write_lines


class _Sink(io.BytesIO):
    def close(self):
        self.final = self.getvalue()
        super().close()


def test_remote_paths_are_written_through_beam_filesystems(monkeypatch, tmp_path):
    written = {}

    def create(path, mime_type=None):
        written[path] = _Sink()
        return written[path]

    monkeypatch.setattr(FileSystems, "create", staticmethod(create))
    monkeypatch.chdir(tmp_path)
    assert write_lines([{"article_id": "a", "story_id": 1}], "gs://bucket/run/assignments.jsonl") == 1
    assert json.loads(written["gs://bucket/run/assignments.jsonl"].final) == {"article_id": "a", "story_id": 1}
    assert not (tmp_path / "gs:").exists()


def test_local_paths_create_their_directory(tmp_path):
    path = tmp_path / "out" / "stories.jsonl"
    write_lines([{"x": 1}, {"x": 2}], str(path))
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"x": 1}, {"x": 2}]
