"""``newsroom preflight``: one line per check with the command that fixes it, offline every cloud check says it
could not check, a fake project's answers become ok and FAIL lines, and the names it checks are Terraform's."""

from __future__ import annotations

import argparse
import re

import pytest
from deploy_helpers import REPO_ROOT

from pipelines.commands import preflight as pf
from pipelines.commands import preflight_checks as names


def args(**kw):
    base = dict(project="p1", region="europe-west1", env="prod", tag="t1", bigtable_instance="newsroom")
    base.update(secrets="newsroom-token-secret,newsroom-cursor-secret", skip_dry_runs=True, offline=False)
    return argparse.Namespace(**{**base, **kw})


def test_offline_every_check_is_printed_as_not_checked_with_its_fix(capsys):
    from pipelines.cli import main as newsroom

    status = newsroom(
        ["preflight", "--project", "p1", "--region", "europe-west1", "--tag", "t1", "--offline", "--skip_dry_runs"]
    )
    out = capsys.readouterr().out.splitlines()
    assert status == 3  # nothing failed, nothing could be checked
    checks = [ln for ln in out if ln.startswith("--")]
    assert len(checks) == len(pf.cloud_checks(args(), pf.Cloud(offline=True)))
    assert all("not checked: offline" in ln and " -> " in ln for ln in checks), checks
    for name in (
        "apis",
        "service account newsroom-stories@p1",
        "bucket gs://p1-newsroom-templates",
        "topic items-raw",
        "subscription stories-items-raw",
        "bigtable newsroom",
        "artifact registry",
        "image ",
        "template gs://",
        "secret newsroom-token-secret",
    ):
        assert any(ln[6:].startswith(name) for ln in checks), name
    assert out[-1] == f"preflight: 0 ok, 0 failed, {len(checks)} not checked"


class FakeResponse:
    def __init__(self, status, doc=None):
        self.status_code, self._doc = status, doc
        self.content = b"{}" if doc is not None else b""

    def json(self):
        return self._doc


class FakeProject:
    """A project as the Google APIs would answer: everything Terraform makes, minus what a test removes."""

    def __init__(self, beam="2.77.0"):
        from schemas.tables import TABLES

        self.beam = beam
        self.absent: set[str] = set()
        self.roles = {f"newsroom-{a}@p1.iam.gserviceaccount.com": list(r) for a, r in names.ACCOUNTS.items()}
        self.tables = list(TABLES)

    def request(self, method, url, headers=None, timeout=None):
        if any(a in url for a in self.absent):
            return FakeResponse(404)
        if "serviceusage" in url:
            return FakeResponse(200, {"services": [{"config": {"name": a}} for a in names.APIS]})
        if url.endswith(":getIamPolicy"):
            bindings = [{"role": r, "members": [f"serviceAccount:{e}"]} for e, rs in self.roles.items() for r in rs]
            return FakeResponse(200, {"bindings": bindings})
        if url.endswith("/tables?view=NAME_ONLY"):
            return FakeResponse(
                200, {"tables": [{"name": f"projects/p1/instances/newsroom/tables/{t}"} for t in self.tables]}
            )
        if "/manifests/" in url:
            return FakeResponse(200, {"config": {"digest": "sha256:abc"}})
        if "/blobs/" in url:
            return FakeResponse(200, {"config": {"Labels": {names.BEAM_LABEL: self.beam}}})
        if "-templates/o/" in url:
            job = re.search(r"/o/([a-z]+)-t1\.json", url).group(1)
            return FakeResponse(200, {"image": f"europe-west1-docker.pkg.dev/p1/newsroom/newsroom:t1-{job}"})
        return FakeResponse(200, {"name": url})


def test_a_ready_project_passes_and_each_gap_fails_with_its_fix():
    from importlib.metadata import version

    project = FakeProject(beam=version("apache-beam"))
    results = pf.cloud_checks(args(), pf.Cloud(session=project))
    assert {r.status for r in results} == {"ok"}, [r.line() for r in results if r.status != "ok"]

    project.absent = {"p1-newsroom-templates/o/stories-t1.json", "/b/p1-newsroom-snapshots", "secrets/newsroom-cursor"}
    project.roles["newsroom-stories@p1.iam.gserviceaccount.com"].remove("roles/dataflow.worker")
    project.tables.remove("feeds")
    project.beam = "2.60.0"
    failed = {r.name: r for r in pf.cloud_checks(args(), pf.Cloud(session=project)) if r.status == "FAIL"}
    assert failed["bucket gs://p1-newsroom-snapshots"].fix == "terraform -chdir=terraform/environments/prod apply"
    assert (
        "missing roles: roles/dataflow.worker"
        in failed["service account newsroom-stories@p1.iam.gserviceaccount.com"].detail
    )
    assert failed["bigtable newsroom"].detail == "tables absent: feeds"
    image = failed["image europe-west1-docker.pkg.dev/p1/newsroom/newsroom:t1"]
    assert "Beam 2.60.0 in the image" in image.detail and image.fix.startswith("gcloud builds submit")
    template = failed["template gs://p1-newsroom-templates/stories-t1.json"]
    assert template.detail == "not staged" and template.fix.startswith("gcloud dataflow flex-template build")
    assert failed["secret newsroom-cursor-secret"].fix.startswith("printf")
    assert len(failed) == 6


def test_a_permission_error_is_not_checked_not_ok():
    class Denied(FakeProject):
        def request(self, method, url, headers=None, timeout=None):
            return FakeResponse(403)

    results = pf.cloud_checks(args(), pf.Cloud(session=Denied()))
    assert {r.status for r in results} == {"--"} and "permission denied (403)" in results[0].detail


def hcl_list(text: str, name: str) -> list[str]:
    body = re.search(rf"{name}\s*=\s*\[(.*?)\]", text, re.S).group(1)
    return re.findall(r'"([^"]+)"', body)


def test_the_names_it_checks_are_terraforms():
    stack = (REPO_ROOT / "terraform/modules/stack/main.tf").read_text()
    assert tuple(hcl_list(stack, "services")) == names.APIS
    subs = re.search(r"subscriptions = \{(.*?)\n  \}", stack, re.S).group(1)
    assert sorted(re.findall(r'"([a-z-]+)"\s*=\s*\{', subs)) == sorted(names.SUBSCRIPTIONS)
    iam = (REPO_ROOT / "terraform/modules/iam/main.tf").read_text()
    assert tuple(hcl_list(iam, "dataflow_project_roles")) == names.DATAFLOW_ROLES
    for account, roles in names.ACCOUNTS.items():
        block = re.search(rf"\n    {account} = \{{(.*?)\n    \}}", iam, re.S).group(1)
        project = re.search(r"project\s*=\s*(\[.*?\]|local\.dataflow_project_roles)", block).group(1)
        expected = (
            names.DATAFLOW_ROLES
            if project == "local.dataflow_project_roles"
            else tuple(re.findall(r'"([^"]+)"', project))
        )
        assert roles == expected, account
    storage = (REPO_ROOT / "terraform/modules/storage/main.tf").read_text()
    assert sorted(re.findall(r'suffix = "([a-z-]+)"', storage)) == sorted(names.BUCKETS)
    pubsub = (REPO_ROOT / "terraform/modules/pubsub/variables.tf").read_text()
    stages = re.search(r'variable "dead_letter_stages" \{.*?default\s*=\s*\[(.*?)\]', pubsub, re.S).group(1)
    assert tuple(re.findall(r'"([a-z-]+)"', stages)) == names.DEAD_LETTER_STAGES
    docker = (REPO_ROOT / "templates/Dockerfile").read_text()
    assert f'LABEL {names.BEAM_LABEL}="${{BEAM_VERSION}}"' in docker


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_offline_preflight_runs_the_six_dry_runs(capsys):
    from pipelines.cli import main as newsroom

    assert newsroom(["preflight", "--project", "newsroom-test-123", "--region", "europe-west1", "--offline"]) == 3
    out = capsys.readouterr().out.splitlines()
    dry = [ln for ln in out if " dry run " in ln]
    assert [ln.split()[3].rstrip(":") for ln in dry] == list(names.JOBS)
    assert all(ln.startswith("ok ") and "translates for Dataflow" in ln for ln in dry), dry
