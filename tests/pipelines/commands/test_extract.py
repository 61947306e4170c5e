"""``newsroom extract``: one JSON line per saved page, manifest of fetched URLs, --score, light import."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

from pipelines import cli
from pipelines.commands import extract


def _folder(tmp_path, kit):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "quake.html").write_bytes(
        kit.make_html("Earthquake shakes coast", kit.WIRE_REPORT, canonical="https://dailyherald.test/world/quake")
    )
    (pages / "night.html.gz").write_bytes(gzip.compress(kit.make_html("A night outdoors", kit.INDEPENDENT_A)))
    (pages / "broken.htm").write_bytes(b"%PDF-1.4 not a page")
    (pages / "notes.txt").write_text("ignored")
    return pages


def test_extract_writes_one_line_per_page(tmp_path, kit, capsys):
    pages = _folder(tmp_path, kit)
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("night https://pacifictimes.test/world/night-outdoors?utm_source=x\n")
    out = tmp_path / "out" / "pages.jsonl"
    rc = cli.main(["extract", "--pages", str(pages), "--out", str(out), "--manifest", str(manifest), "--workers", "1"])
    assert rc == 0
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert sorted(rows) == ["broken", "night", "quake"]
    assert rows["broken"]["rejected"] == "not_html"
    q = rows["quake"]
    assert q["canonical_url"] == "https://dailyherald.test/world/quake"
    assert q["title"] == "Earthquake shakes coast" and q["language"] == "en"
    assert q["published_at"] == "2025-12-31T22:30:00Z"
    assert q["body"].startswith("A magnitude 6.1 earthquake")
    assert all(set(e) == {"id", "name", "kind"} for e in q["entities"])
    n = rows["night"]
    assert n["canonical_url"] == "https://pacifictimes.test/world/night-outdoors"  # from the manifest, cleaned
    assert n["canonical_source"] == "fetched_url_cleaned"
    err = capsys.readouterr().err
    assert "extract: 3/3 pages" in err and "1 rejected" in err


def test_score_prints_the_two_acceptance_figures(tmp_path, kit, capsys):
    pages = _folder(tmp_path, kit)
    truth = tmp_path / "truth.json"
    truth.write_text(
        json.dumps(
            {
                "quake": {"articleBody": "\n".join(kit.WIRE_REPORT), "url": "http://www.dailyherald.test/world/quake/"},
                "night": {"articleBody": "\n".join(kit.INDEPENDENT_B), "url": "https://elsewhere.test/x"},
            }
        )
    )
    out = tmp_path / "pages.jsonl"
    assert cli.main(["extract", "--pages", str(pages), "--out", str(out), "--score", str(truth), "--workers", "2"]) == 0
    printed = capsys.readouterr().out
    f1 = float(printed.split("mean token F1 (body vs articleBody): ")[1].split()[0])
    acc = printed.split("canonical_url == ground-truth url: ")[1].split()[0]
    assert 0.5 < f1 < 0.7  # one page right (~1.0), one scored against another text (~0.2)
    assert acc == "50.0%"


def test_score_function():
    recs = [{"id": "a", "body": "one two three", "canonical_url": "https://x.test/a"}, {"id": "b", "body": ""}]
    s = extract.score(
        recs, {"a": {"articleBody": "one two four", "url": "x.test/a/"}, "b": {"articleBody": "z", "url": "u"}}
    )
    assert s["pages"] == 2 and abs(s["mean_f1"] - (2 / 3) / 2) < 1e-9 and s["url_accuracy"] == 0.5


def test_manifest_formats(tmp_path):
    j = tmp_path / "m.json"
    j.write_text(json.dumps({"a": "https://x.test/a", "b": {"url": "https://x.test/b", "articleBody": "..."}}))
    assert extract.read_manifest(str(j)) == {"a": "https://x.test/a", "b": "https://x.test/b"}
    jl = tmp_path / "m.jsonl"
    jl.write_text('{"id": "a", "url": "https://x.test/a"}\n{"id": "b", "fetched_url": "https://x.test/b"}\n')
    assert extract.read_manifest(str(jl)) == {"a": "https://x.test/a", "b": "https://x.test/b"}
    assert extract.page_id(tmp_path / "abc.html.gz") == "abc" and extract.page_id(tmp_path / "x.htm") == "x"


def test_importing_the_subcommand_stays_light():
    code = (
        "import sys, argparse; import pipelines.commands.extract as e; e.add_arguments(argparse.ArgumentParser()); "
        "heavy = [m for m in ('apache_beam', 'trafilatura', 'lxml', 'extruct', 'datasketch', 'torch') "
        "if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out
