"""The probes of ``newsroom preflight`` (pipelines/commands/preflight.py): each reads one thing through
:class:`~pipelines.commands.preflight.Cloud` (GET on the API's REST endpoint) and returns ``(ok, detail)``."""

from __future__ import annotations

import json
from urllib.parse import quote

from pipelines.commands.preflight_checks import APIS, BEAM_LABEL


def bucket_url(bucket: str) -> str:
    return f"https://storage.googleapis.com/storage/v1/b/{bucket}"


def topic_url(project: str, topic: str) -> str:
    return f"https://pubsub.googleapis.com/v1/projects/{project}/topics/{topic}"


def subscription_url(project: str, sub: str) -> str:
    return f"https://pubsub.googleapis.com/v1/projects/{project}/subscriptions/{sub}"


def repository_url(project: str, region: str) -> str:
    return f"https://artifactregistry.googleapis.com/v1/projects/{project}/locations/{region}/repositories/newsroom"


def secret_url(project: str, secret: str) -> str:
    return f"https://secretmanager.googleapis.com/v1/projects/{project}/secrets/{secret}"


def exists(cloud, url: str) -> tuple[bool, str]:
    return (True, "present") if cloud.get(url) is not None else (False, "absent")


def apis(cloud, project: str) -> tuple[bool, str]:
    url = f"https://serviceusage.googleapis.com/v1/projects/{project}/services?filter=state:ENABLED&pageSize=200"
    doc = cloud.get(url)
    if doc is None:
        return False, f"project {project} not found"
    enabled = {s["config"]["name"] for s in doc.get("services", []) if s.get("config")}
    missing = [a for a in APIS if a not in enabled]
    return (
        not missing,
        f"{len(APIS) - len(missing)} of {len(APIS)} enabled" + (f"; not: {', '.join(missing)}" if missing else ""),
    )


def account(cloud, project: str, email: str, roles) -> tuple[bool, str]:
    if cloud.get(f"https://iam.googleapis.com/v1/projects/{project}/serviceAccounts/{email}") is None:
        return False, "absent"
    policy = cloud.get(f"https://cloudresourcemanager.googleapis.com/v1/projects/{project}:getIamPolicy", method="POST")
    held = {b["role"] for b in (policy or {}).get("bindings", []) if f"serviceAccount:{email}" in b.get("members", [])}
    missing = [r for r in roles if r not in held]
    return (not missing, "present, roles granted" if not missing else f"present; missing roles: {', '.join(missing)}")


def bigtable(cloud, project: str, instance: str) -> tuple[bool, str]:
    from schemas.tables import TABLES

    base = f"https://bigtableadmin.googleapis.com/v2/projects/{project}/instances/{instance}"
    if cloud.get(base) is None:
        return False, "instance absent"
    doc = cloud.get(f"{base}/tables?view=NAME_ONLY") or {}
    have = {t["name"].rsplit("/", 1)[-1] for t in doc.get("tables", [])}
    missing = sorted(set(TABLES) - have)
    return (
        not missing,
        f"instance and {len(TABLES)} tables present" if not missing else f"tables absent: {', '.join(missing)}",
    )


MANIFESTS = "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json"


def _registry_json(cloud, repo: str, path: str) -> dict | None:
    """The Docker registry API of Artifact Registry (a bearer token of the same credentials is accepted)."""
    host, _, name = repo.partition("/")
    return cloud.get(f"https://{host}/v2/{name}/newsroom/{path}", headers={"Accept": MANIFESTS})


def image(cloud, repo: str, tag: str) -> tuple[bool, str]:
    """The worker image's manifest, and its Beam version (the config's label) against this launcher's."""
    from importlib.metadata import version as installed

    launcher = installed("apache-beam")
    manifest = _registry_json(cloud, repo, f"manifests/{quote(tag)}")
    if manifest is None:
        return False, "absent"
    digest = (manifest.get("config") or {}).get("digest")
    config = _registry_json(cloud, repo, f"blobs/{digest}") if digest else None
    labels = ((config or {}).get("config") or {}).get("Labels") or {}
    version = labels.get(BEAM_LABEL)
    if version is None:
        return False, f"present, but without the {BEAM_LABEL} label: rebuild it from templates/Dockerfile"
    if version != launcher:
        return False, f"Beam {version} in the image, {launcher} here: Dataflow refuses the mismatch"
    return True, f"present, Beam {version} (equal to this launcher's)"


def template(cloud, project: str, job: str, repo: str, tag: str) -> tuple[bool, str]:
    bucket, name = f"{project}-newsroom-templates", f"{job}-{tag}.json"
    url = f"{bucket_url(bucket)}/o/{quote(name, safe='')}?alt=media"
    spec = cloud.get(url)
    if spec is None:
        return False, "not staged"
    image_of = spec.get("image") if isinstance(spec, dict) else None
    want = f"{repo}/newsroom:{tag}-{job}"
    if image_of != want:
        return False, f"staged with image {json.dumps(image_of)}, not {want}"
    return True, f"staged, image {want}"
