"""Commands that cannot mislead: each misuse of ``newsroom evaluate``, ``backfill`` and ``extract`` an analyst meets
(gold and predictions of different data sets, a wrong path, a folder for a file, a malformed line, an existing
output, a dry run with a gs:// input) ends in one clear line on stderr and a non-zero exit, never a traceback and
never a report that looks fine. The commands run as the user runs them: ``python -m pipelines.cli`` (the
``newsroom`` entry point) in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pipelines.test_backfill import labelled_file, read

ROOT = Path(__file__).resolve().parents[2]


def newsroom(*args, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def assert_one_line_error(res: subprocess.CompletedProcess, *needles: str) -> str:
    """Non-zero exit, no traceback, and one error line on stderr that holds every needle."""
    assert res.returncode != 0, (res.stdout[-1000:], res.stderr[-2000:])
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    errors = [x for x in res.stderr.splitlines() if "error" in x.lower()]
    assert len(errors) == 1, res.stderr[-2000:]
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def gold_and_pred(tmp_path, pred_ids):
    gold = tmp_path / "gold.jsonl"
    rows = [{"id": f"a{i}", "story_id": f"g{i % 3}", "language": "en", "title": f"headline {i}"} for i in range(10)]
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pred = tmp_path / "out" / "assignments.jsonl"
    pred.parent.mkdir(exist_ok=True)
    pred.write_text("".join(json.dumps({"article_id": a, "story_id": 1}) + "\n" for a in pred_ids))
    return gold, pred


# ------------------------------------------------------------------------------------------------ evaluate


def test_evaluate_refuses_gold_and_predictions_that_barely_overlap(tmp_path):
    gold, pred = gold_and_pred(tmp_path, ["a0", "a1", "x2", "x3", "x4"])  # another data set but two ids
    res = newsroom("evaluate", "--gold", gold, "--pred", pred, "--no-html")
    assert_one_line_error(res, "only 2 of 10 gold articles (20.0%)", "--min-overlap")
    assert "b3_P" not in res.stdout  # no report that could be read as a score
    ok = newsroom("evaluate", "--gold", gold, "--pred", pred, "--no-html", "--min-overlap", "0.2")
    assert ok.returncode == 0 and "warning: 8 gold articles have no prediction" in ok.stdout, ok.stderr[-2000:]


@pytest.mark.parametrize(
    "case, needles",
    [
        ("missing pred", ("--pred", "no such file")),
        ("pred is a folder without a run", ("--pred", "no assignments.jsonl")),
        ("missing gold", ("--gold", "no such file")),
        ("gold line not json", ("--gold", "gold.jsonl:4:", "not a JSON object")),
        ("gold line without story_id", ("--gold", "gold.jsonl:2:", "story_id")),
        ("pred line a list", ("--pred", "assignments.jsonl:1:", "not a JSON object")),
        ("html into a missing folder", ("--html", "No such file")),
    ],
)
def test_evaluate_input_errors_are_one_line_and_exit_2(tmp_path, case, needles):
    gold, pred = gold_and_pred(tmp_path, [f"a{i}" for i in range(10)])
    args = ["--gold", gold, "--pred", pred]
    if case == "missing pred":
        args[3] = tmp_path / "nope" / "assignments.jsonl"
    elif case == "pred is a folder without a run":
        args[3] = tmp_path / "empty"
        args[3].mkdir()
    elif case == "missing gold":
        args[1] = tmp_path / "gold-typo.jsonl"
    elif case == "gold line not json":
        lines = gold.read_text().splitlines()
        gold.write_text("\n".join(lines[:3] + ["{not json"] + lines[3:]) + "\n")
    elif case == "gold line without story_id":
        lines = gold.read_text().splitlines()
        gold.write_text("\n".join(lines[:1] + [json.dumps({"id": "z"})] + lines[1:]) + "\n")
    elif case == "pred line a list":
        pred.write_text("[1, 2]\n" + pred.read_text())
    elif case == "html into a missing folder":
        args += ["--html", tmp_path / "no-such-dir" / "r.html"]
    res = newsroom("evaluate", *args)
    assert res.returncode == 2
    assert_one_line_error(res, *needles)


def test_evaluate_report_shows_each_headlines_publisher_and_date(tmp_path):
    gold = tmp_path / "gold.jsonl"
    rows = [
        {
            "id": "a0",
            "story_id": "A",
            "title": "quake hits",
            "publisher": "Daily Star",
            "published_at": "2014-03-02T10:00:00Z",
        },
        {
            "id": "a1",
            "story_id": "A",
            "title": "quake aftermath",
            "publisher": "The Post",
            "published_at": "2014-03-09T08:00:00Z",
        },
        {"id": "a2", "story_id": "B", "title": "vote", "publisher": "The Post"},
    ]
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pred = tmp_path / "assignments.jsonl"
    pred.write_text(
        "".join(json.dumps({"article_id": a, "story_id": s}) + "\n" for a, s in [("a0", 1), ("a1", 2), ("a2", 2)])
    )
    res = newsroom("evaluate", "--gold", gold, "--pred", pred)
    assert res.returncode == 0, res.stderr[-2000:]
    page = (tmp_path / "evaluate.html").read_text()
    assert 'quake hits <span class="byline">(Daily Star, 2014-03-02)</span>' in page
    assert 'quake aftermath <span class="byline">(The Post, 2014-03-09)</span>' in page
    assert 'vote <span class="byline">(The Post)</span>' in page


# ------------------------------------------------------------------------------------------------ backfill


def test_backfill_refuses_an_existing_output_unless_overwrite_which_leaves_nothing_stale(tmp_path):
    inp = tmp_path / "in.jsonl"
    labelled_file(inp, bad_line=False)
    out = tmp_path / "o"
    base = ["backfill", "--input", inp, "--output", out, "--embedder", "hash", "--exact_index"]
    first = newsroom(*base)
    assert first.returncode == 0, first.stderr[-3000:]
    newsroom("evaluate", "--gold", inp, "--pred", out / "assignments.jsonl")
    assert (out / "evaluate.html").exists()
    before = (out / "assignments.jsonl").read_text()

    again = newsroom(*base)
    assert_one_line_error(again, f"--output {out}: not empty", "--overwrite")
    assert (out / "assignments.jsonl").read_text() == before and (out / "evaluate.html").exists()

    replaced = newsroom(*base, "--overwrite")
    assert replaced.returncode == 0, replaced.stderr[-3000:]
    assert not (out / "evaluate.html").exists()  # the old report does not sit beside the new run
    assert len(read(out / "assignments.jsonl")) == 13


def test_backfill_overwrite_never_empties_a_folder_it_did_not_write(tmp_path):
    inp = tmp_path / "in.jsonl"
    labelled_file(inp, bad_line=False)
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    res = newsroom("backfill", "--input", inp, "--output", home, "--embedder", "hash", "--overwrite")
    assert_one_line_error(res, "does not write", "thesis.tex")
    assert (home / "thesis.tex").read_text() == "years of work"


@pytest.mark.parametrize("case", ["input is a folder", "output is a file", "no input matches", "unreadable --from"])
def test_backfill_path_errors_are_one_line(tmp_path, case):
    """Refused before anything runs: nothing is written, so the corrected command is not then refused for the
    output a failed one left (a namespace claimed under OUTPUT/store)."""
    inp = tmp_path / "in.jsonl"
    labelled_file(inp, bad_line=False)
    out = tmp_path / "o"
    needles = {
        "input is a folder": ("is a folder",),
        "output is a file": ("is a file",),
        "no input matches": ("no file matches",),
        "unreadable --from": ("--from", "'yesterday'", "ISO 8601"),
    }
    extra = []
    if case == "input is a folder":
        inp = tmp_path
    elif case == "output is a file":
        out.write_text("x")
    elif case == "no input matches":
        inp = tmp_path / "typo*.jsonl"
    else:
        extra = ["--from", "yesterday"]
    res = newsroom("backfill", "--input", inp, "--output", out, "--embedder", "hash", *extra)
    assert res.returncode == 2
    assert_one_line_error(res, *needles[case])
    assert out.is_file() if case == "output is a file" else not out.exists()


@pytest.mark.parametrize("command", ["backfill", "stories", "run"])
def test_an_unknown_embedder_is_refused_when_the_command_parses_it(command):
    """A typo in --embedder used to surface in a worker's setup(), after the job had started; argparse refuses it
    before anything runs, naming the flag and the valid specs."""
    res = newsroom(command, "--embedder=minilmm")
    assert res.returncode == 2
    assert_one_line_error(res, "argument --embedder", "'minilmm'", "minilm-fp32", "st:PATH")


def test_backfill_dry_run_never_reads_its_gs_input(tmp_path, monkeypatch, capsys):
    """The README's Dataflow form: a gs:// glob is translated as given, never listed (offline, listing it is ~2.5 min
    of credential retries and a BeamIOError), and nothing is written."""
    from apache_beam.io.filesystems import FileSystems

    from pipelines import cli

    listed = []
    real_match = FileSystems.match

    def match(patterns, *a, **kw):
        listed.extend(p for p in patterns if str(p).startswith("gs://"))
        if listed:
            raise AssertionError(f"the dry run listed {listed}")
        return real_match(patterns, *a, **kw)

    monkeypatch.setattr(FileSystems, "match", staticmethod(match))
    argv = [
        "backfill",
        "--input=gs://newsroom-ci-newsroom-backfill/input/*.jsonl",
        "--output=gs://newsroom-ci-newsroom-backfill/runs/bf-ci",
        "--namespace=bf-ci",
        "--runner=DataflowRunner",
        "--dry_run=True",
        "--no_auth",
        "--project=newsroom-ci",
        "--region=europe-west1",
        "--temp_location=gs://newsroom-ci-newsroom-dataflow-staging/tmp",
        "--sdk_container_image=europe-west1-docker.pkg.dev/newsroom-ci/newsroom/newsroom:ci",
        "--backend=gcp",
        "--snapshot_bucket=newsroom-ci-newsroom-snapshots",
    ]
    assert cli.main(argv) == 0
    assert listed == []
    out = capsys.readouterr()
    assert "newsroom dry run: " in out.out and "ReadArticles" in out.out, out.err[-2000:]
    assert "1 input pattern(s), not listed (dry run)" in out.err


def test_backfill_progress_shows_the_total_and_the_time_left(tmp_path):
    inp = tmp_path / "in.jsonl"
    labelled_file(inp, bad_line=False)
    res = newsroom("backfill", "--input", inp, "--output", tmp_path / "o", "--embedder", "hash")
    assert res.returncode == 0, res.stderr[-3000:]
    # locally each language's writer embeds its own articles (pipelines/backfill.py "Embedding and the writer"):
    # the line after the embedding stage counts the articles read, the writers' lines what they embed and decide
    assert "[backfill] articles read: 13 of 13 (100%, " in res.stderr, res.stderr[-3000:]
    # the writer's phase too (one firing decides every article of a language: on a long input, minutes)
    assert "[backfill] articles decided (en): 12 of 12 (100%, " in res.stderr, res.stderr[-3000:]
    assert "[backfill] articles decided (es): 1 of 1 (100%, " in res.stderr
    from transforms.common import progress_line

    assert progress_line("pages", 30, 120, 10.0) == "pages: 30 of 120 (25%, 3/s, ~30s left)"
    assert progress_line("articles", 1000, 361000, 100.0).endswith("(0%, 10/s, ~10h00m left)")


# ------------------------------------------------------------------------------------------------ extract


@pytest.mark.parametrize(
    "case, needles",
    [
        ("out is a folder", ("--out", "is a folder")),
        ("missing manifest", ("--manifest", "no such file")),
        ("missing ground truth", ("--score", "no such file")),
        ("ground truth not json", ("--score", "not JSON")),
    ],
)
def test_extract_input_errors_are_one_line_before_any_page_is_read(tmp_path, case, needles):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "p1.html").write_text("<html><head><title>t</title></head><body><p>hello</p></body></html>")
    out = tmp_path / "x.jsonl"
    args = ["extract", "--pages", pages, "--out", out, "--workers", "1", "--budget_s", "0"]
    if case == "out is a folder":
        args[4] = tmp_path
    elif case == "missing manifest":
        args += ["--manifest", tmp_path / "manifest.json"]
    elif case == "missing ground truth":
        args += ["--score", tmp_path / "truth.json"]
    else:
        (tmp_path / "truth.json").write_text("{oops")
        args += ["--score", tmp_path / "truth.json"]
    res = newsroom(*args)
    assert res.returncode == 2
    assert_one_line_error(res, *needles)
    assert not out.exists()  # refused before the run, not after it


def test_utc_text_prints_every_command_time_one_way():
    from pipelines.command_errors import utc_text

    ms = 1_709_294_405_123  # 2024-03-01T12:00:05.123Z
    assert utc_text(ms) == "2024-03-01 12:00:05 UTC"
    assert utc_text(ms, "min") == "2024-03-01 12:00 UTC"
    assert utc_text(ms, "ms") == "2024-03-01 12:00:05.123 UTC"
    assert utc_text(str(ms), "ms") == "2024-03-01 12:00:05.123 UTC"  # a time read back from JSON text
