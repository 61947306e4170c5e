"""Comments and docstrings say their reason, not an issue number a reader of the repository cannot open.

A parenthesis "(issue N, class M)" meant something to the session that wrote it; to the next engineer it is a
pointer into a tracker that is not in the clone. The scan covers every tracked source file (code, tests,
benchmarks, terraform, scripts); prose documents (Markdown) and data files are left out: the README and docs/ may
name the work they report on. The checker is tested on planted lines, so this test can fail.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Prose and data: they may report figures "for issue N" (the README's measurements), and CSS colours look like "#N".
SKIP = re.compile(r"\.(md|json|jsonl|csv|txt|avsc|lock|css|svg|png|gz|npz|npy|parquet)$")
# "issue N", "Issues N and M", "issue #N", or "#N" standing alone, N a number (not an HTML entity "&#39;" nor a
# colour "#1b1b1b;").
CITATION = re.compile(r"(?i)\bissues?\s+#?\d|(?<![&\w])#\d{1,4}(?![\w;])")


def citations(text: str) -> list[int]:
    """The 1-based line numbers of ``text`` that cite an issue number."""
    return [n for n, line in enumerate(text.splitlines(), 1) if CITATION.search(line)]


def tracked_sources() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / p for p in out.splitlines() if not SKIP.search(p) and (ROOT / p).is_file()]


def test_no_source_file_cites_an_issue_number():
    offenders = []
    for path in tracked_sources():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        offenders += [f"{path.relative_to(ROOT)}:{n}" for n in citations(text)]
    assert offenders == [], f"say the reason instead of citing an issue number: {offenders}"


def test_the_scan_sees_a_citation():
    issue = "issue"  # spelled apart so this file does not cite one itself
    assert citations(f'"""Class 8 of {issue} 12: ordering."""') == [1]
    assert citations(f"x = 1\n# see {issue.title()}s 4 and 5\n") == [2]
    assert citations("# fixed in " + "#" + "31") == [1]
    assert citations('body { color: #555; border: #137333; }\ns = "&#39;"\nc = "#1b1b1b"') == []
    assert citations("warnings were issued at 10:00; tissue 3") == []
