"""Static analysis of terraform/ and templates/Dockerfile with checkov, offline.

checkov cannot share .venv with Beam (it pins packaging<24; pytest and google-cloud-bigquery need >=24), so this
test installs it, pinned by tests/deploy/checkov-requirements.txt, into its own virtualenv .venv-tools/ the first
time it runs (75-180 s here) and reuses it afterwards. Every finding must be fixed or skipped inline in the HCL or
Dockerfile with a reason (`#checkov:skip=CKV_...:why`); the test fails on a failed check and on a skip without a
reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from deploy_helpers import REPO_ROOT

TOOLS = REPO_ROOT / ".venv-tools"
REQUIREMENTS = Path(__file__).with_name("checkov-requirements.txt")
CHECKOV = TOOLS / "bin" / "checkov"
SKIP = re.compile(r"#\s*checkov:skip=(CKV2?_[A-Z]+_\d+)(?::(.*))?")


def _pinned_version() -> str:
    return re.search(r"^checkov==(\S+)$", REQUIREMENTS.read_text(), re.M).group(1)


def _installed_version() -> str | None:
    if not CHECKOV.exists():
        return None
    code = "import importlib.metadata as m; print(m.version('checkov'))"
    result = subprocess.run([str(TOOLS / "bin" / "python"), "-c", code], capture_output=True, text=True)
    return result.stdout.strip() or None


@pytest.fixture(scope="session")
def checkov() -> Path:
    if _installed_version() != _pinned_version():
        if not (TOOLS / "bin" / "python").exists():
            venv.EnvBuilder(with_pip=False).create(TOOLS)  # installed by .venv's pip: no ensurepip (~5 s CPU)
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                str(TOOLS / "bin" / "python"),
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
                str(REQUIREMENTS),
            ],
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert result.returncode == 0, (
            f"installing checkov into {TOOLS} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    assert _installed_version() == _pinned_version()
    return CHECKOV


def run_checkov(checkov: Path, directory: Path, frameworks=("terraform", "dockerfile")) -> list[dict]:
    args = [
        str(checkov),
        "--skip-download",
        "--output",
        "json",
        "--framework",
        *frameworks,
        "--directory",
        str(directory),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BC_", "PRISMA_"))}
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env, cwd=str(REPO_ROOT))
    assert result.stdout.strip(), f"checkov printed nothing (exit {result.returncode}):\n{result.stderr[-3000:]}"
    reports = json.loads(result.stdout)
    return reports if isinstance(reports, list) else [reports]


def summarise(reports: list[dict]) -> dict[str, list[dict]]:
    out = {"passed": [], "failed": [], "skipped": []}
    for report in reports:
        results = report.get("results", {})
        for kind in out:
            out[kind] += results.get(f"{kind}_checks", [])
    return out


# The first run installs checkov (measured 75-180 s on 2 shared cores): more than pytest.ini's 300 s default allows
# on a busy machine, so these tests get their own limit.
@pytest.mark.timeout(1500)
def test_checkov_passes_on_terraform_and_the_dockerfile(checkov):
    found = summarise(
        run_checkov(checkov, REPO_ROOT / "terraform", ("terraform",))
        + run_checkov(checkov, REPO_ROOT / "templates", ("dockerfile",))
    )
    failed = [
        f"{c['check_id']} {c['resource']} ({c['file_path']}:{c['file_line_range']}) {c['check_name']}"
        for c in found["failed"]
    ]
    assert not failed, "checkov findings (fix them, or skip inline with #checkov:skip=ID:reason):\n" + "\n".join(failed)
    # not vacuous: the modules and the Dockerfile were really evaluated
    assert len(found["passed"]) >= 100, f"only {len(found['passed'])} checks evaluated"
    frameworks = {c["check_id"].split("_")[1] for c in found["passed"]}
    assert {"GCP", "DOCKER"} <= frameworks
    for c in found["skipped"]:
        reason = (c.get("check_result") or {}).get("suppress_comment", "")
        assert len(reason.strip()) >= 20, f"{c['check_id']} on {c['resource']} is skipped without a reason"


def test_every_inline_skip_gives_a_reason():
    skips = 0
    for path in list((REPO_ROOT / "terraform").rglob("*.tf")) + [REPO_ROOT / "templates" / "Dockerfile"]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = SKIP.search(line)
            if m:
                skips += 1
                assert m.group(2) and len(m.group(2).strip()) >= 20, (
                    f"{path.relative_to(REPO_ROOT)}:{n}: {m.group(1)} skipped without a reason"
                )
    assert skips >= 1  # the scan above really looked at the skips that exist


@pytest.mark.timeout(1500)
def test_checkov_catches_a_public_bucket(checkov, tmp_path):
    """The same pass fails on a bucket without public access prevention and uniform access."""
    (tmp_path / "main.tf").write_text(
        'resource "google_storage_bucket" "leaky" {\n  name     = "leaky"\n  location = "EU"\n}\n'
    )
    found = summarise(run_checkov(checkov, tmp_path, frameworks=("terraform",)))
    failed = {c["check_id"] for c in found["failed"]}
    assert {"CKV_GCP_114", "CKV_GCP_29"} <= failed, failed


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
