"""``newsroom preflight --project P --region R [--env prod] [--tag TAG]``: is this project ready for a deploy?

One line per check, in deploy order, each with its status and, when it is not ``ok``, the command that fixes it:

    ok    apis: 14 enabled
    FAIL  bucket P-newsroom-templates: absent  -> terraform -chdir=terraform/environments/prod apply
    --    image ...:TAG: not checked (no credentials)  -> gcloud auth application-default login

What is checked (the names are Terraform's, terraform/modules/stack; tests/deploy/test_terraform.py keeps these
lists equal to it): the APIs the stack enables; the service accounts of the jobs, the scheduler and the origin,
and their project roles; the four buckets; the topics (schemas/tables.py TOPICS and the dead-letter topics) and
the jobs' subscriptions; the Bigtable instance and its tables (schemas/tables.py TABLES); the Artifact Registry
repository; with ``--tag``: the worker image, its Beam version (label ``org.newsroom.beam-version``, set by
templates/Dockerfile) equal to this launcher's, and each job's Flex Template spec staged in the templates bucket
and naming that tag's launcher image; the origin's secrets (``--secrets``). Then the six jobs' dry runs
(``--runner=DataflowRunner --dry_run=True``: each graph translates for Dataflow), unless ``--skip_dry_runs``.

Cloud checks call the Google APIs with the application default credentials (google-auth's AuthorizedSession on
each API's REST endpoint: one client for all of them, and every call a read). Without credentials or network each
cloud check prints ``--`` and says what it could not check; the dry runs need neither. Exit status: 0 when
nothing failed, 1 when a check failed, 3 when everything that could be checked passed but some could not be.
"""

from __future__ import annotations

import json
import subprocess
import sys

from pipelines.commands.control import shown
from pipelines.commands.preflight_checks import (
    ACCOUNTS,
    APIS,
    BUCKETS,
    DEAD_LETTER_STAGES,
    JOBS,
    SECRETS,
    SUBSCRIPTIONS,
    Result,
    Unchecked,
)


def add_arguments(parser) -> None:
    parser.add_argument("--project", required=True, help="The Google Cloud project id.")
    parser.add_argument("--region", required=True, help="The region of the jobs, the repository and the buckets.")
    parser.add_argument(
        "--env", default="prod", choices=("dev", "prod"), help="terraform/environments/ENV. Default: prod."
    )
    parser.add_argument("--tag", default=None, help="The image tag to deploy: checks the image and the templates.")
    parser.add_argument("--bigtable_instance", default="newsroom", help="Default: newsroom (Terraform's).")
    parser.add_argument(
        "--secrets",
        default=",".join(SECRETS),
        help=f"The origin's secret ids, comma-separated. Default: {','.join(SECRETS)}.",
    )
    parser.add_argument("--skip_dry_runs", action="store_true", help="Skip the six jobs' Dataflow dry runs.")
    parser.add_argument("--offline", action="store_true", help="Contact nothing: only the dry runs run.")


class Cloud:
    """GET on Google REST APIs with the application default credentials; Unchecked when that is impossible."""

    def __init__(self, offline: bool = False, session=None):
        self.session, self.why = session, None
        if offline:
            self.why = "offline (--offline)"
        elif session is None:
            try:
                import google.auth
                from google.auth.transport.requests import AuthorizedSession

                credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
                self.session = AuthorizedSession(credentials)
            except Exception as exc:  # noqa: BLE001 - DefaultCredentialsError, or google-auth absent
                self.why = f"no credentials ({type(exc).__name__}); gcloud auth application-default login"

    def get(self, url: str, method: str = "GET", headers: dict | None = None) -> dict | None:
        """The JSON of ``url``; None for 404. Unchecked without credentials, network or permission."""
        if self.why:
            raise Unchecked(self.why)
        try:
            resp = self.session.request(method, url, headers=headers or {}, timeout=20)
        except Exception as exc:  # noqa: BLE001 - requests' ConnectionError, a transport's own errors
            self.why = f"network unreachable ({type(exc).__name__})"
            raise Unchecked(self.why) from None
        if resp.status_code == 404:
            return None
        if resp.status_code in (401, 403):
            raise Unchecked(f"permission denied ({resp.status_code}) on {url.split('?')[0]}")
        if resp.status_code >= 400:
            raise Unchecked(f"HTTP {resp.status_code} from {url.split('?')[0]}")
        return resp.json() if resp.content else {}


def _check(name: str, fix: str, probe) -> Result:
    """``probe()`` -> (ok, detail); Unchecked -> status ``--``."""
    try:
        ok, detail = probe()
    except Unchecked as exc:
        return Result("--", name, f"not checked: {exc}", fix)
    return Result("ok" if ok else "FAIL", name, detail, fix)


def cloud_checks(args, cloud: Cloud) -> list[Result]:
    from pipelines.commands import preflight_probes as probes

    p, r = args.project, args.region
    apply = f"terraform -chdir=terraform/environments/{args.env} apply"
    out = [
        _check("apis", f"gcloud services enable {' '.join(APIS)} --project={p}", lambda: probes.apis(cloud, p)),
    ]
    for account, roles in ACCOUNTS.items():
        email = f"newsroom-{account}@{p}.iam.gserviceaccount.com"
        out.append(_check(f"service account {email}", apply, lambda e=email, ro=roles: probes.account(cloud, p, e, ro)))
    for suffix in BUCKETS:
        bucket = f"{p}-newsroom-{suffix}"
        out.append(_check(f"bucket gs://{bucket}", apply, lambda b=bucket: probes.exists(cloud, probes.bucket_url(b))))
    for topic in topics():
        out.append(_check(f"topic {topic}", apply, lambda t=topic: probes.exists(cloud, probes.topic_url(p, t))))
    for sub in SUBSCRIPTIONS:
        out.append(
            _check(f"subscription {sub}", apply, lambda s=sub: probes.exists(cloud, probes.subscription_url(p, s)))
        )
    out.append(
        _check(f"bigtable {args.bigtable_instance}", apply, lambda: probes.bigtable(cloud, p, args.bigtable_instance))
    )
    repo = f"{r}-docker.pkg.dev/{p}/newsroom"
    out.append(_check(f"artifact registry {repo}", apply, lambda: probes.exists(cloud, probes.repository_url(p, r))))
    if args.tag:
        build = f"gcloud builds submit . --config templates/cloudbuild.yaml --substitutions=_REPOSITORY={repo},_TAG={args.tag}"
        out.append(_check(f"image {repo}/newsroom:{args.tag}", build, lambda: probes.image(cloud, repo, args.tag)))
        for job in JOBS:
            spec = f"gs://{p}-newsroom-templates/{job}-{args.tag}.json"
            stage = (
                f"gcloud dataflow flex-template build {spec} --image={repo}/newsroom:{args.tag}-{job} "
                f"--sdk-language=PYTHON --metadata-file=templates/{job}/metadata.json --project={p}"
            )
            out.append(_check(f"template {spec}", stage, lambda j=job: probes.template(cloud, p, j, repo, args.tag)))
    else:
        out.append(Result("--", "image and templates", "not checked: give --tag TAG (the tag you will deploy)", ""))
    for secret in [s for s in args.secrets.split(",") if s.strip()]:
        create = f"printf '%s' \"$(openssl rand -hex 32)\" | gcloud secrets create {secret} --data-file=- --project={p}"
        out.append(_check(f"secret {secret}", create, lambda s=secret: probes.exists(cloud, probes.secret_url(p, s))))
    return out


def topics() -> list[str]:
    from schemas.tables import TOPICS

    return sorted(set(TOPICS) | {f"dead-letter-{s}" for s in DEAD_LETTER_STAGES})


def dry_run_argv(job: str, project: str, region: str, backfill_input: str) -> list[str]:
    """The job's production dry run (docs/operations.md, README "Preflight"). ``backfill_input``: local files (listing
    a gs:// glob is a GCS call, which a dry run offline cannot make; the graph is the same)."""
    cloud = [
        "--runner=DataflowRunner",
        "--dry_run=True",
        "--no_auth",
        f"--project={project}",
        f"--region={region}",
        f"--temp_location=gs://{project}-newsroom-dataflow-staging/tmp",
        f"--sdk_container_image={region}-docker.pkg.dev/{project}/newsroom/newsroom:preflight",
        "--backend=gcp",
        "--bigtable_instance=newsroom",
        f"--snapshot_bucket={project}-newsroom-snapshots",
    ]
    own = {
        "ingest": ["--feeds=table"],
        "stories": [
            "--input_subscription=stories-items-raw",
            "--dead_letter_topic=dead-letter-stories",
            "--fetch_topic=fetch-requests",
        ],
        "backfill": [
            f"--input={backfill_input}",
            f"--output=gs://{project}-newsroom-backfill/runs/preflight",
            "--namespace=preflight",
            "--from=2024-01-01",
            "--to=2024-02-01",
            "--snapshots",
        ],
        "covisit": ["--input_subscription=covisit-read-events", "--dead_letter_topic=dead-letter-covisit"],
        "authority": ["--window_days=90", "--prior_weight=50"],
        "userclusters": ["--hashes_per_cluster=3", "--clusters_per_reader=10", "--min_members=5"],
    }[job]
    return [job, *cloud, *own]


def dry_runs(args, run=subprocess.run) -> list[Result]:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="newsroom-preflight-") as tmp:
        row = {"id": "a1", "language": "en", "title": "Storm", "text": "Rain.", "published_at": "2024-01-01T08:00:00Z"}
        Path(tmp, "2024-01-01.jsonl").write_text(json.dumps({**row, "publisher": "herald", "url": "https://h.test/1"}))
        return [
            _dry_run(job, dry_run_argv(job, args.project, args.region, f"{tmp}/2024-01-*.jsonl"), run) for job in JOBS
        ]


def _dry_run(job: str, argv: list[str], run) -> Result:
    fix = f"newsroom {' '.join(argv)}  (read its error)"
    done = run([sys.executable, "-m", "pipelines.cli", *argv], capture_output=True, text=True, timeout=900)
    summary = [ln for ln in done.stdout.splitlines() if ln.startswith("newsroom dry run: ")]
    if done.returncode == 0 and summary:
        steps = len(json.loads(summary[-1].split(": ", 1)[1]).get("steps", []))
        return Result("ok", f"dry run {job}", f"translates for Dataflow ({steps} top-level steps)")
    last = (done.stderr.strip().splitlines() or [f"status {done.returncode}, no summary line"])[-1]
    return Result("FAIL", f"dry run {job}", last[:300], fix)


def main(args) -> int:
    print(f"preflight of project {shown(args.project)} in {shown(args.region)} (terraform/environments/{args.env})")
    results = cloud_checks(args, Cloud(offline=args.offline))
    for r in results:
        print(r.line(), flush=True)
    if not args.skip_dry_runs:
        for r in dry_runs(args):
            results.append(r)
            print(r.line(), flush=True)
    failed = sum(r.status == "FAIL" for r in results)
    unchecked = sum(r.status == "--" for r in results)
    ok = sum(r.status == "ok" for r in results)
    print(f"preflight: {ok} ok, {failed} failed, {unchecked} not checked")
    return 1 if failed else (3 if unchecked else 0)
