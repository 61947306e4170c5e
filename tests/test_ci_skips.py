"""In CI a skipped test fails (tests/conftest.py): the emulator, edge and browser tests must really run there."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PLANTED = """
import pytest

def test_needs_a_binary():
    pytest.skip("nginx not installed")

def test_needs_shared_data(shared_data):
    pass

def test_runs():
    pass
"""


def _run(tmp_path, ci: str) -> subprocess.CompletedProcess:
    tests = tmp_path / "tests"
    tests.mkdir(exist_ok=True)
    shutil.copy2(ROOT / "tests" / "conftest.py", tests / "conftest.py")
    (tests / "test_planted.py").write_text(PLANTED)
    env = {**os.environ, "CI": ci}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-rA", str(tests)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_skip_fails_in_ci_but_missing_shared_data_may_skip(tmp_path):
    # tmp_path has no ../shared/data next to it, so the shared_data fixture skips.
    out = _run(tmp_path, "true")
    assert out.returncode == 1, out.stdout
    assert "1 failed, 1 passed, 1 skipped" in out.stdout, out.stdout
    assert "skipped in CI" in out.stdout and "nginx not installed" in out.stdout


def test_outside_ci_a_skip_stays_a_skip(tmp_path):
    out = _run(tmp_path, "")
    assert out.returncode == 0, out.stdout
    assert "1 passed, 2 skipped" in out.stdout, out.stdout
