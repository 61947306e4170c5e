"""What ``newsroom preflight`` checks and how it reports (pipelines/commands/preflight.py runs the checks,
pipelines/commands/preflight_probes.py makes them): the names Terraform gives the stack, and the check records.
Below both, so the probes read the lists without importing the command that runs them."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.command_errors import shown

# terraform/modules/stack/main.tf locals.services (tests/deploy/test_terraform.py checks they agree)
APIS = (
    "artifactregistry.googleapis.com",
    "bigtable.googleapis.com",
    "bigtableadmin.googleapis.com",
    "cloudbuild.googleapis.com",
    "cloudscheduler.googleapis.com",
    "compute.googleapis.com",
    "dataflow.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
    "storage.googleapis.com",
)
DATAFLOW_ROLES = ("roles/dataflow.worker", "roles/logging.logWriter", "roles/monitoring.metricWriter")
# terraform/modules/iam/main.tf: account -> its project roles
ACCOUNTS = {
    **dict.fromkeys(("ingest", "stories", "backfill", "covisit", "authority", "userclusters"), DATAFLOW_ROLES),
    "scheduler": ("roles/dataflow.developer",),
    "origin": ("roles/logging.logWriter", "roles/monitoring.metricWriter"),
}
BUCKETS = ("snapshots", "dataflow-staging", "templates", "backfill")  # terraform/modules/storage: <project>-newsroom-*
DEAD_LETTER_STAGES = ("ingest", "articles", "stories", "editions", "push", "covisit")
SUBSCRIPTIONS = ("stories-items-raw", "ingest-fetch-requests", "covisit-read-events")
JOBS = ("ingest", "stories", "backfill", "covisit", "authority", "userclusters")
SECRETS = ("newsroom-token-secret", "newsroom-cursor-secret")
BEAM_LABEL = "org.newsroom.beam-version"


class Unchecked(Exception):
    """A check that could not be made (no credentials, no network, no permission): why."""


@dataclass
class Result:
    status: str  # ok, FAIL, --
    name: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        fix = f"  -> {self.fix}" if self.fix and self.status != "ok" else ""
        return f"{self.status:<5} {self.name}: {shown(self.detail)}{fix}"
