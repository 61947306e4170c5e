"""Offline checks of terraform/: formatting (`terraform fmt -check`), module shape, and the properties the design
relies on, read from the parsed HCL (python-hcl2):

- Cloud CDN: the cache key holds no cookie and no header and only the query strings the shared endpoints read
  (parsed from serving/); serve-while-stale, negative caching and request coalescing are on; For you and the
  reader's other personal paths go to a backend without CDN.
- IAM: no primitive role (owner, editor, viewer) anywhere; every service account holds exactly the grants listed in
  EXPECTED_GRANTS below; IAM resources are additive members fed only from the iam module's `grants`.
- Pub/Sub and Bigtable mirror schemas/tables.py (TOPICS with their Avro schemas, TABLES with their GC rules,
  MAX_AGE_DAYS with the max_age rules).
- The streaming jobs' parameters: template parameters only; every topic and subscription Terraform hands a job
  exists and is one the job's account may use; a subscription a job reads is named as the job's option default, so
  a template launched by hand (README) reads what Terraform created.
- Edge: the URL map removes Cookie and Authorization on every shared route (and WebSub/ping) before the cache and
  the origin, keeps Authorization on For you and the reader's routes (``route()`` evaluates the map like Google);
  the nginx stand-in (devtools/edge_nginx.conf) removes the same headers and caches the same routes.
- One stack: terraform/modules/stack holds the system; environments/dev and prod only call it with their sizes.
  The origin gets NEWSROOM_TOKEN_SECRET and NEWSROOM_CURSOR_SECRET from Secret Manager (validation evaluated by
  terraform itself on the variables alone, offline); stories-items-raw delivers in order (ordering key per URL).
- Schedule: Cloud Scheduler POSTs the authority job's Flex Template launch (its template of the deployed tag, its
  own account, the worker subnet without public IPs) to the Dataflow API daily, with the OAuth token of the
  scheduler account, which may create jobs and act as the authority account only.
- Monitoring: every alert of the README's alert table exists, watches its metric with its threshold variable,
  notifies the channels and carries a runbook; the log-based metrics read only the documented log events; the
  dashboard charts every alerted metric.

Each check is a function that raises AssertionError; the mutation tests apply it to edited copies of the real .tf
files (a removed cookie exclusion, roles/owner granted ...) to show that it fails when the property is broken.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import subprocess
from pathlib import Path

import hcl2
import pytest
from deploy_helpers import REPO_ROOT

TERRAFORM = REPO_ROOT / "terraform"
MODULES = TERRAFORM / "modules"
ENVIRONMENTS = ("dev", "prod")
PRIMITIVE_ROLES = {"roles/owner", "roles/editor", "roles/viewer"}

# The reviewed least-privilege grants (terraform/modules/iam/main.tf explains each). A change to the module's
# `grants` must be made here too, on purpose.
DATAFLOW = ["roles/dataflow.worker", "roles/logging.logWriter", "roles/monitoring.metricWriter"]
PUBLISH = ["roles/pubsub.publisher"]
READ_SUBSCRIPTION = ["roles/pubsub.subscriber", "roles/pubsub.viewer"]
EXPECTED_GRANTS = {
    "ingest": {
        "project": DATAFLOW,
        "topics": {"items-raw": PUBLISH, "dead-letter": PUBLISH, "dead-letter-ingest": PUBLISH},
        "subscriptions": {"ingest-fetch-requests": READ_SUBSCRIPTION},
        "tables": {
            "feeds": ["roles/bigtable.user"],
            "takedowns": ["roles/bigtable.user"],  # a publisher's 404/410 on a re-fetch tombstones the article
            "audit": ["roles/bigtable.user"],  # ... and records it in the audit trail
        },
        "namespaced": [],
        "buckets": {"staging": ["roles/storage.objectAdmin"], "templates": ["roles/storage.objectViewer"]},
        "registry": ["roles/artifactregistry.reader"],
        "secrets": [],
        "custom": [],
        "service_accounts": {},
    },
    "stories": {
        "project": DATAFLOW,
        "topics": {
            "articles": PUBLISH,
            "story-changes": PUBLISH,
            "fetch-requests": PUBLISH,
            "dead-letter": PUBLISH,
            "dead-letter-articles": PUBLISH,
            "dead-letter-stories": PUBLISH,
            "dead-letter-editions": PUBLISH,
            "breaking": PUBLISH,  # Breaking records, once per story and edition
        },
        "subscriptions": {"stories-items-raw": READ_SUBSCRIPTION},
        "tables": {
            **{t: ["roles/bigtable.user"] for t in ("articles", "stories", "pointers")},
            "controls": ["roles/bigtable.reader"],  # editorial controls, read every cycle; set by operators
            "takedowns": ["roles/bigtable.reader"],  # tombstones, omitted from the next snapshots
            "follows": ["roles/bigtable.reader"],  # follower counts per topic id (topic pages); no reader id
        },
        "namespaced": [],
        "buckets": {
            "snapshots": ["roles/storage.objectCreator", "roles/storage.objectViewer"],
            "staging": ["roles/storage.objectAdmin"],
            "templates": ["roles/storage.objectViewer"],
        },
        "registry": ["roles/artifactregistry.reader"],
        "secrets": [],
        "custom": ["cdn_invalidator"],  # CDN purges of Breaking pages (compute.urlMaps.invalidateCache)
        "service_accounts": {},
    },
    "backfill": {
        "project": DATAFLOW,
        "topics": {},
        "subscriptions": {},
        "tables": {"articles": ["roles/bigtable.reader"], "takedowns": ["roles/bigtable.reader"]},
        "namespaced": ["roles/bigtable.user"],
        "buckets": {
            "backfill": ["roles/storage.objectAdmin"],
            "snapshots": ["roles/storage.objectViewer"],
            "staging": ["roles/storage.objectAdmin"],
            "templates": ["roles/storage.objectViewer"],
        },
        "registry": ["roles/artifactregistry.reader"],
        "secrets": [],
        "custom": [],
        "service_accounts": {},
    },
    "covisit": {
        "project": DATAFLOW,
        "topics": {"dead-letter-covisit": PUBLISH},
        "subscriptions": {"covisit-read-events": READ_SUBSCRIPTION},
        # the neighbours; the readers' cluster memberships read and the clusters' click counts written; the
        # published aliases map read (pointer + object) so counts follow merges (transforms/covisit/survivors.py)
        "tables": {
            "covisit": ["roles/bigtable.user"],
            "userclusters": ["roles/bigtable.user"],
            "pointers": ["roles/bigtable.reader"],
        },
        "namespaced": [],
        "buckets": {
            "staging": ["roles/storage.objectAdmin"],
            "templates": ["roles/storage.objectViewer"],
            "snapshots": ["roles/storage.objectViewer"],
        },
        "registry": ["roles/artifactregistry.reader"],
        "secrets": [],
        "custom": [],
        "service_accounts": {},
    },
    "authority": {  # the batch authority job: reads stories and articles, publishes authority/v{n}.json
        "project": DATAFLOW,
        "topics": {},
        "subscriptions": {},
        "tables": {
            "articles": ["roles/bigtable.reader"],
            "stories": ["roles/bigtable.reader"],
            "pointers": ["roles/bigtable.user"],  # the `authority` pointer's compare-and-set
        },
        "namespaced": [],
        "buckets": {
            "snapshots": ["roles/storage.objectCreator", "roles/storage.objectViewer"],
            "staging": ["roles/storage.objectAdmin"],
            "templates": ["roles/storage.objectViewer"],
        },
        "registry": ["roles/artifactregistry.reader"],
        "secrets": [],
        "custom": [],
        "service_accounts": {},
    },
    "userclusters": {  # the daily user-cluster job: reads the profiles' reads, replaces the memberships
        "project": DATAFLOW,
        "topics": {},
        "subscriptions": {},
        "tables": {"profiles": ["roles/bigtable.reader"], "userclusters": ["roles/bigtable.user"]},
        "namespaced": [],
        "buckets": {"staging": ["roles/storage.objectAdmin"], "templates": ["roles/storage.objectViewer"]},
        "registry": ["roles/artifactregistry.reader"],
        "secrets": [],
        "custom": [],
        "service_accounts": {},
    },
    "scheduler": {  # not a job: Cloud Scheduler's identity launching the daily jobs (terraform/modules/schedule)
        "project": ["roles/dataflow.developer"],  # create Dataflow jobs (no per-job IAM in Dataflow)
        "topics": {},
        "subscriptions": {},
        "tables": {},
        "namespaced": [],
        "buckets": {"templates": ["roles/storage.objectViewer"]},  # the launch reads the template spec as the caller
        "registry": [],
        "secrets": [],
        "custom": [],
        # act as the two daily jobs' accounts only
        "service_accounts": {
            "authority": ["roles/iam.serviceAccountUser"],
            "userclusters": ["roles/iam.serviceAccountUser"],
        },
    },
    "origin": {
        "project": ["roles/logging.logWriter", "roles/monitoring.metricWriter"],
        "topics": {"read-events": PUBLISH, "fetch-requests": PUBLISH, "dead-letter-push": PUBLISH},
        "subscriptions": {},
        "tables": {
            "pointers": ["roles/bigtable.reader"],
            "feeds": ["roles/bigtable.user"],
            "profiles": ["roles/bigtable.user"],
            "follows": ["roles/bigtable.user"],
            "covisit": ["roles/bigtable.reader"],
            "userclusters": ["roles/bigtable.user"],  # reads clusters; deletes a reader's with the profile
            "takedowns": ["roles/bigtable.reader"],  # tombstoned articles and stories leave loaded pages at once
        },
        "namespaced": [],
        "buckets": {"snapshots": ["roles/storage.objectViewer"]},
        "registry": ["roles/artifactregistry.reader"],
        "secrets": ["roles/secretmanager.secretAccessor"],
        "custom": [],
        "service_accounts": {},
    },
}


# --- parsing ------------------------------------------------------------------------------------------------


def _unquote(value):
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"')
    return value


def normalise(node):
    """python-hcl2 keeps string quotes, block markers and comments (__is_block__, __comments__): strip them."""
    if isinstance(node, dict):
        return {_unquote(k): normalise(v) for k, v in node.items() if not k.startswith("__")}
    if isinstance(node, list):
        return [normalise(v) for v in node]
    return _unquote(node)


@functools.lru_cache(maxsize=256)
def _parse(text: str):
    return normalise(hcl2.loads(text))


def parse(text: str):
    """Parsed, normalised HCL; a file is parsed once per session (the mutation tests reload unchanged files)."""
    return copy.deepcopy(_parse(text))


def _each(value, key: str, entry: dict):
    """``value`` with ``each.key`` / ``each.value.F`` of one for_each entry substituted (see Module)."""
    if isinstance(value, dict):
        return {k: _each(v, key, entry) for k, v in value.items()}
    if isinstance(value, list):
        return [_each(v, key, entry) for v in value]
    if not isinstance(value, str):
        return value
    whole = re.fullmatch(r"\$\{each\.value\.(\w+)\}", value)
    if whole:
        return entry[whole.group(1)]

    def inner(field: str) -> str:  # a field inside an expression: its expression, or its quoted literal
        v = entry[field]
        m = re.fullmatch(r"\$\{(.*)\}", v) if isinstance(v, str) else None
        return m.group(1) if m else json.dumps(v)

    value = re.sub(r"\$\{each\.value\.(\w+)\}", lambda m: str(entry[m.group(1)]), value)
    value = value.replace("${each.key}", key)
    value = re.sub(r"\beach\.value\.(\w+)", lambda m: inner(m.group(1)), value)
    return value.replace("each.key", json.dumps(key))


class Module:
    """The .tf files of one folder, merged: resources by (type, name), locals, variables, module calls."""

    def __init__(self, files: dict[str, str]):
        self.files = files
        self.docs = {name: parse(text) for name, text in files.items()}
        self.resources: dict[tuple[str, str], dict] = {}
        self.locals: dict = {}
        self.variables: dict[str, dict] = {}
        self.modules: dict[str, dict] = {}
        for doc in self.docs.values():
            for block in doc.get("resource", []):
                for rtype, named in block.items():
                    for name, body in named.items():
                        self.resources[(rtype, name)] = body
            for block in doc.get("locals", []):
                self.locals.update(block)
            for block in doc.get("variable", []):
                self.variables.update(block)
            for block in doc.get("module", []):
                self.modules.update(block)

    def instances(self) -> Module:
        """This module with its for_each resources written out (see :meth:`_expand_for_each`): what the monitoring
        checks read; the other checks read a for_each as written."""
        out = copy.copy(self)
        out.resources = dict(self.resources)
        out._expand_for_each()
        return out

    def _expand_for_each(self) -> None:
        """A resource with ``for_each = local.X`` (X a map in locals) becomes one instance per key, named
        ``name["key"]`` as Terraform addresses it, with ``each.key`` and ``each.value.F`` replaced by the key and
        the entry's field (a ``${var.v}`` field reads ``${var.v}``), so the checks read each instance as if it were
        written out."""
        for (rtype, name), body in list(self.resources.items()):
            m = re.fullmatch(r"\$\{local\.(\w+)\}", str(body.get("for_each", "")))
            if not m or not isinstance(self.locals.get(m.group(1)), dict):
                continue
            del self.resources[(rtype, name)]
            for key, entry in self.locals[m.group(1)].items():
                instance = {k: v for k, v in body.items() if k != "for_each"}
                self.resources[(rtype, f'{name}["{key}"]')] = _each(instance, key, entry)

    @classmethod
    def load(cls, folder: Path, edits: dict[str, tuple[str, str]] | None = None) -> Module:
        """Load a folder's .tf files; ``edits`` maps a file name to (old, new) text replaced before parsing."""
        files = {p.name: p.read_text() for p in sorted(folder.glob("*.tf"))}
        for name, (old, new) in (edits or {}).items():
            assert old in files[name], f"mutation target not found in {folder.name}/{name}: {old!r}"
            files[name] = files[name].replace(old, new)
        return cls(files)

    def of_type(self, rtype: str) -> dict[str, dict]:
        return {name: body for (t, name), body in self.resources.items() if t == rtype}

    def resolve(self, value):
        """Follow a bare ${local.x} / ${var.x} reference to its value (a variable's default)."""
        for _ in range(5):
            if not isinstance(value, str):
                return value
            m = re.fullmatch(r"\$\{(local|var)\.(\w+)\}", value)
            if not m:
                return value
            if m.group(1) == "local":
                value = self.locals[m.group(2)]
            else:
                value = self.variables[m.group(2)].get("default")
        return value


def walk(node, path=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{path}[{i}]")
    else:
        yield path, node


def all_folders() -> list[Path]:
    return sorted([p for p in MODULES.iterdir() if p.is_dir()] + [TERRAFORM / "environments" / e for e in ENVIRONMENTS])


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return {p.name if p.parent == MODULES else f"env-{p.name}": Module.load(p) for p in all_folders()}


def shared_query_strings() -> set[str]:
    """Query parameters read by the shared (cacheable) endpoints of serving/: the blueprints that reject personal
    headers. These, and only these, belong in the CDN cache key."""
    names: set[str] = set()
    shared = [
        p
        for p in sorted((REPO_ROOT / "serving").rglob("*.py"))
        if re.search(r"before_request\(http\.reject_personal_headers\)|= http\.shared_blueprint\(", p.read_text())
    ]
    assert shared, "no shared blueprint found in serving/ (http.shared_blueprint or reject_personal_headers)"
    for path in shared:
        names.update(re.findall(r"args\.get\(\s*[\"'](\w+)[\"']", path.read_text()))
        names.update(re.findall(r"args\[\s*[\"'](\w+)[\"']\s*\]", path.read_text()))
    return names


# --- checks (each raises AssertionError naming what is wrong) -----------------------------------------------


def check_cdn(origin: Module, api_query_strings: set[str]) -> None:
    backends = origin.of_type("google_compute_backend_service")
    cdn = {name: b for name, b in backends.items() if b.get("enable_cdn") is True}
    assert cdn, "no backend service has Cloud CDN enabled"
    for name, backend in cdn.items():
        policy = backend["cdn_policy"][0]
        assert policy.get("cache_mode") == "USE_ORIGIN_HEADERS", (
            f"{name}: cache_mode must honour the origin's Cache-Control"
        )
        key = policy["cache_key_policy"][0]
        assert "include_named_cookies" in key, f"{name}: the cache key must state that it includes no cookie"
        cookies = origin.resolve(key["include_named_cookies"])
        assert cookies == [], f"{name}: cookies {cookies} in the cache key"
        assert "include_http_headers" in key, f"{name}: the cache key must state that it includes no header"
        headers = origin.resolve(key["include_http_headers"])
        assert not any(h.lower() == "cookie" for h in headers), f"{name}: the Cookie header is in the cache key"
        assert headers == [], f"{name}: headers {headers} in the cache key"
        assert key.get("include_query_string") is True, f"{name}: include_query_string must be true to whitelist"
        assert "query_string_blacklist" not in key, f"{name}: use a whitelist, not a blacklist"
        whitelist = origin.resolve(key.get("query_string_whitelist"))
        assert isinstance(whitelist, list) and set(whitelist) == api_query_strings, (
            f"{name}: cache key query strings {whitelist} != those the shared endpoints read {sorted(api_query_strings)}"
        )
        stale = origin.resolve(policy.get("serve_while_stale"))
        assert isinstance(stale, int) and stale > 0, f"{name}: serve_while_stale must be set"
        assert policy.get("request_coalescing") is True, f"{name}: request_coalescing must be true"
        assert policy.get("negative_caching") is True, f"{name}: negative_caching must be true"
        static = policy.get("negative_caching_policy", [])
        dynamic = [d["negative_caching_policy"] for d in policy.get("dynamic", []) if "negative_caching_policy" in d]
        ttls = [origin.resolve(d["for_each"]) for d in dynamic]
        assert static or any(ttls), f"{name}: negative caching needs at least one status with a TTL"

    url_maps = [m for m in origin.of_type("google_compute_url_map").values() if "path_matcher" in m]
    assert url_maps, "no URL map routes the API"
    for url_map in url_maps:
        matcher = url_map["path_matcher"][0]
        default = re.search(r"google_compute_backend_service\.(\w+)\.", matcher["default_service"])
        assert default and default.group(1) in cdn, "shared pages (the default route) must go through the CDN backend"
        for path in ("/v1/editions/us-en/sections/top", "/v1/stories/123"):
            assert route(origin, path)[0] in cdn, f"{path} (a shared page) must go through the CDN backend"
        for path in ("/v1/feed/for-you", "/v1/me/profile"):
            target = route(origin, path)[0]
            assert backends[target].get("enable_cdn") is not True, (
                f"{path} must bypass the cache (a backend without CDN)"
            )


# --- the edge: routes and the request headers removed on each ----------------------------------------------

# The two forms a URL map rule's paths may take in terraform/modules/origin (a dynamic match_rules block over a
# list of paths): "/a/*" is a prefix, anything else an exact path. The route evaluator below only trusts these.
MATCH_CONTENT = {
    "full_path_match": '${endswith(match_rules.value, "/*") ? null : match_rules.value}',
    "prefix_match": '${endswith(match_rules.value, "/*") ? trimsuffix(match_rules.value, "*") : null}',
}
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}


def _paths(module: Module, expr) -> list[str]:
    m = re.fullmatch(r"\$\{concat\((.*)\)\}", str(expr))
    if m:
        return [p for part in m.group(1).split(",") for p in module.resolve("${" + part.strip() + "}")]
    value = module.resolve(expr)
    if isinstance(value, str) and value.startswith("${concat("):
        return _paths(module, value)
    assert isinstance(value, list), f"cannot resolve the paths {expr!r}"
    return value


def _match_rules(module: Module, rule: dict) -> list[tuple[str, str]]:
    """(kind, value) pairs of a route rule's match rules: kind is full_path_match or prefix_match."""
    out = [(k, v) for mr in rule.get("match_rules", []) for k, v in mr.items() if k in MATCH_CONTENT]
    for dyn in rule.get("dynamic", []):
        if "match_rules" not in dyn:
            continue
        body = dyn["match_rules"]
        assert body["content"][0] == MATCH_CONTENT, f"unknown match_rules form {body['content'][0]}"
        for p in _paths(module, body["for_each"]):
            out.append(("prefix_match", p[:-1]) if p.endswith("/*") else ("full_path_match", p))
    return out


def _removed(module: Module, *blocks: dict) -> set[str]:
    names: set[str] = set()
    for block in blocks:
        for action in block.get("header_action", []):
            names |= {h.lower() for h in module.resolve(action.get("request_headers_to_remove", []))}
    return names


def route(origin: Module, path: str) -> tuple[str, set[str]]:
    """Where the URL map of terraform/modules/origin sends a request for ``path``, and which request headers it
    removes before the backend (the cache, then the origin): Google's rules, first matching route rule by priority,
    header actions of the rule, the path matcher and the map combined."""
    url_map = origin.of_type("google_compute_url_map")["api"]
    matcher = url_map["path_matcher"][0]
    assert not (matcher.get("route_rules") and matcher.get("path_rule")), (
        "a path matcher takes route rules or path rules"
    )
    service, removed = matcher["default_service"], _removed(origin, matcher, url_map)
    rules = sorted(matcher.get("route_rules", []), key=lambda r: int(r["priority"]))
    for rule in rules:
        hit = any(path == v if k == "full_path_match" else path.startswith(v) for k, v in _match_rules(origin, rule))
        if hit:
            service, removed = rule["service"], removed | _removed(origin, rule)
            break
    else:
        for rule in matcher.get("path_rule", []):  # no header action at this level
            if any(path == p or (p.endswith("/*") and path.startswith(p[:-1])) for p in _paths(origin, rule["paths"])):
                service = rule["service"]
                break
    backend = re.search(r"google_compute_backend_service\.(\w+)\.", service).group(1)
    return backend, removed - HOP_BY_HOP


def served_paths() -> dict[str, list[str]]:
    """Concrete request paths of every route of serving/, by kind: shared (blueprints that reject Cookie and
    Authorization, plus health and the OpenAPI document), personal (For you, reader controls, events), push."""
    kinds: dict[str, list[str]] = {"shared": [], "personal": [], "push": []}
    for source in sorted((REPO_ROOT / "serving").rglob("*.py")):
        text = source.read_text()
        routes = re.findall(r'@bp\.(?:get|post|put|delete|patch)\("([^"]+)"', text)
        if not routes:
            continue
        personal = ("foryou.py", "foryou_cards.py", "opml.py")
        kind = "personal" if source.name in personal else "push" if source.name == "push.py" else "shared"
        kinds[kind] += [re.sub(r"<[^>]+>", "x1", r) for r in routes]
    assert all(kinds.values()), kinds
    # edges of the personal prefixes: /v1/feed itself is personal, /v1/feedback is not
    kinds["personal"] += ["/v1/feed", "/v1/me", "/v1/events"]
    kinds["shared"] += ["/v1/feedback", "/v1/meta", "/v1/eventsx"]
    return kinds


PERSONAL_HEADERS = {"cookie", "authorization"}


def check_edge_headers(origin: Module) -> None:
    """Shared routes lose Cookie and Authorization before the cache and the origin (which answers 400 to either);
    For you and the reader's other personal routes keep Authorization."""
    for kind, paths in served_paths().items():
        for path in paths:
            backend, removed = route(origin, path)
            if kind == "personal":
                assert "authorization" not in removed, (
                    f"{path}: the URL map removes Authorization from a personal route"
                )
                assert backend == "direct", f"{path}: a personal route must not go through the CDN backend"
            else:
                missing = PERSONAL_HEADERS - removed
                assert not missing, f"{path} ({kind}): the URL map does not remove {sorted(missing)} before the origin"


def test_url_map_removes_cookie_and_authorization_on_shared_routes(modules):
    check_edge_headers(modules["origin"])


EDGE_MUTATIONS = {
    "Cookie not removed": (
        'shared_strip_headers = ["Cookie", "Authorization"]',
        'shared_strip_headers = ["Authorization"]',
    ),
    "Authorization not removed": (
        'shared_strip_headers = ["Cookie", "Authorization"]',
        'shared_strip_headers = ["Cookie"]',
    ),
    "no header action on shared pages": (
        '      match_rules {\n        prefix_match = "/"\n      }\n\n      header_action {\n        request_headers_to_remove = local.shared_strip_headers\n      }\n',
        '      match_rules {\n        prefix_match = "/"\n      }\n',
    ),
    "personal routes lose Authorization": (
        '          prefix_match    = endswith(match_rules.value, "/*") ? trimsuffix(match_rules.value, "*") : null\n        }\n      }\n    }\n',
        '          prefix_match    = endswith(match_rules.value, "/*") ? trimsuffix(match_rules.value, "*") : null\n        }\n      }\n\n      header_action {\n        request_headers_to_remove = local.shared_strip_headers\n      }\n    }\n',
    ),
    "personal prefix malformed (For you falls to the shared route)": (
        '"/v1/feed", "/v1/feed/*"',
        '"/v1/feed", "/v1/feed*"',
    ),
}


@pytest.mark.parametrize("mutation", list(EDGE_MUTATIONS))
def test_edge_header_check_fails_when_a_header_is_not_removed(mutation):
    old, new = EDGE_MUTATIONS[mutation]
    broken = Module.load(MODULES / "origin", edits={"main.tf": (old, new)})
    with pytest.raises(AssertionError):
        check_edge_headers(broken)


# --- the nginx stand-in (devtools/edge_nginx.conf) is configured like the URL map ---------------------------


def nginx_locations(text: str) -> list[dict]:
    """The locations of the stand-in's server block: modifier, pattern, whether it caches, and the request headers
    it removes (proxy_set_header NAME ""), with nginx's inheritance: a location that sets no proxy_set_header
    inherits the server's."""
    text = re.sub(r"#[^\n]*", "", text)
    server = text[text.index("server {") :]
    # only the reader-facing server: the one after it is the stand-in's CDN policy hop, which readers never reach
    server = server[: server.find("server {", 1)] if server.find("server {", 1) > 0 else server
    head = server[: server.index("location")]
    inherited = {m.lower() for m in re.findall(r'proxy_set_header\s+(\S+)\s+""\s*;', head)}
    out = []
    for m in re.finditer(r"location\s+(?:(=|~\*|~|\^~)\s+)?(\S+)\s*\{([^}]*)\}", server):
        modifier, pattern, body = m.group(1) or "", m.group(2), m.group(3)
        sets = re.findall(r"proxy_set_header\s+(\S+)\s+(\S+)\s*;", body)
        removed = {k.lower() for k, v in sets if v == '""'} if sets else set(inherited)
        cached = bool(re.search(r"proxy_cache\s+(?!off)\w+\s*;", body))
        proxied = "proxy_pass" in body
        out.append(
            {
                "modifier": modifier,
                "pattern": pattern,
                "removed": removed - HOP_BY_HOP,
                "cached": cached,
                "proxied": proxied,
            }
        )
    assert out, "no location in devtools/edge_nginx.conf"
    return out


def nginx_route(locations: list[dict], path: str) -> dict:
    """nginx's choice: an exact match, else the longest prefix if it is ^~, else the first matching regex, else the
    longest prefix."""
    for loc in locations:
        if loc["modifier"] == "=" and loc["pattern"] == path:
            return loc
    prefixes = [loc for loc in locations if loc["modifier"] in ("", "^~") and path.startswith(loc["pattern"])]
    longest = max(prefixes, key=lambda loc: len(loc["pattern"]), default=None)
    if longest and longest["modifier"] == "^~":
        return longest
    for loc in locations:
        if loc["modifier"] in ("~", "~*") and re.search(loc["pattern"], path, re.I if loc["modifier"] == "~*" else 0):
            return loc
    assert longest, f"no nginx location serves {path}"
    return longest


def check_stand_in_matches_terraform(origin: Module, nginx_conf: str) -> None:
    """For every route of serving/: the stand-in removes exactly the request headers the URL map removes, and
    caches exactly where the URL map sends the request to the CDN backend. A test that passes against the stand-in
    (tests/serving/test_edge.py) then says something about production."""
    locations = nginx_locations(nginx_conf)
    cdn = {n for n, b in origin.of_type("google_compute_backend_service").items() if b.get("enable_cdn") is True}
    for kind, paths in served_paths().items():
        for path in paths:
            backend, removed = route(origin, path)
            loc = nginx_route(locations, path)
            assert loc["proxied"], f"{path}: the stand-in does not pass it to the origin"
            assert loc["removed"] == removed, (
                f"{path} ({kind}): the stand-in removes {sorted(loc['removed'])}, the Terraform URL map {sorted(removed)}"
            )
            assert loc["cached"] == (backend in cdn), (
                f"{path} ({kind}): cached by the stand-in {loc['cached']}, by Cloud CDN {backend in cdn}"
            )


def test_nginx_stand_in_strips_the_same_headers_on_the_same_routes_as_terraform(modules):
    check_stand_in_matches_terraform(modules["origin"], (REPO_ROOT / "devtools" / "edge_nginx.conf").read_text())


NGINX_MUTATIONS = {
    "Cookie kept on shared pages": ('            proxy_set_header Cookie "";\n', ""),
    "Authorization stripped from For you": (
        "            proxy_cache off;\n            proxy_no_cache 1;",
        '            proxy_set_header Authorization "";\n            proxy_cache off;\n            proxy_no_cache 1;',
    ),
    "For you cached": (
        "            proxy_cache off;\n            proxy_no_cache 1;",
        "            proxy_cache edge;\n            proxy_no_cache 1;",
    ),
}


@pytest.mark.parametrize("mutation", list(NGINX_MUTATIONS))
def test_stand_in_check_fails_when_nginx_and_terraform_differ(modules, mutation):
    old, new = NGINX_MUTATIONS[mutation]
    text = (REPO_ROOT / "devtools" / "edge_nginx.conf").read_text()
    assert old in text, f"mutation target not found: {old!r}"
    with pytest.raises(AssertionError):
        check_stand_in_matches_terraform(modules["origin"], text.replace(old, new, 1))
    # and a Terraform that stops stripping Cookie no longer matches the (unchanged) stand-in
    broken = Module.load(
        MODULES / "origin",
        edits={
            "main.tf": (
                'shared_strip_headers = ["Cookie", "Authorization"]',
                'shared_strip_headers = ["Authorization"]',
            )
        },
    )
    with pytest.raises(AssertionError, match="stand-in removes"):
        check_stand_in_matches_terraform(broken, text)


def check_no_primitive_roles(modules: dict[str, Module]) -> None:
    for mname, module in modules.items():
        for fname, doc in module.docs.items():
            for path, value in walk(doc):
                if isinstance(value, str) and any(
                    re.search(rf"(?<![\w.]){re.escape(r)}(?![\w.])", value) for r in PRIMITIVE_ROLES
                ):
                    raise AssertionError(f"primitive role in {mname}/{fname} at {path}: {value!r}")


def check_grants(iam: Module, expected: dict) -> None:
    grants = iam.resolve(iam.locals["grants"])
    actual = {sa: {kind: iam.resolve(v) for kind, v in g.items()} for sa, g in grants.items()}
    assert set(actual) == set(expected), f"service accounts {sorted(actual)} != {sorted(expected)}"
    for sa in expected:
        for kind in set(actual[sa]) | set(expected[sa]):
            got, want = actual[sa].get(kind), expected[sa].get(kind)
            if isinstance(want, dict) and isinstance(got, dict):
                got = {k: sorted(iam.resolve(v)) for k, v in got.items()}
                want = {k: sorted(v) for k, v in want.items()}
            elif isinstance(want, list) and isinstance(got, list):
                got, want = sorted(got), sorted(want)
            assert got == want, f"{sa}: {kind} grants {got} differ from the reviewed list {want}"


def check_iam_resources(modules: dict[str, Module]) -> None:
    """IAM is additive (members only) and a service account's roles come only from the iam module's grants."""
    for mname, module in modules.items():
        for (rtype, name), body in module.resources.items():
            if not re.search(r"_iam_(member|binding|policy|audit_config)$", rtype):
                continue
            assert rtype.endswith("_iam_member"), f"{mname}: {rtype}.{name} is authoritative; use *_iam_member"
            member = str(body.get("member", ""))
            if "google_service_account.sa" in member:
                assert mname == "iam", f"{mname}: {rtype}.{name} grants a job's service account outside the iam module"
                assert body.get("role") == "${each.value.role}", f"iam: {rtype}.{name} has a role outside `grants`"
                assert re.fullmatch(r"\$\{local\.\w+_bindings\}", str(body.get("for_each"))), (
                    f"iam: {rtype}.{name} must iterate over bindings derived from `grants`"
                )
            else:
                assert mname != "iam", f"iam: {rtype}.{name} grants something other than the module's service accounts"
                assert "module.iam" not in member and "iam.gserviceaccount.com" not in member.replace(
                    "gcp-sa-pubsub.iam", ""
                ), f"{mname}: {rtype}.{name} grants a job's service account a role outside the iam module"
    stack = modules["stack"]
    sa = str(stack.modules["streaming_job"]["service_account_email"])
    assert sa == "${module.iam.emails[each.key]}", f"stack: each streaming job must run as its own account, not {sa}"
    assert set(stack.locals["streaming_jobs"]) <= set(modules["iam"].locals["grants"]), "a job without its account"
    sa = str(stack.modules["origin"]["service_account_email"])
    assert sa == '${module.iam.emails["origin"]}', f"stack: the origin must run as its own account, not {sa}"


# --- tests --------------------------------------------------------------------------------------------------


def test_terraform_fmt_check(terraform_bin):
    result = subprocess.run(
        [terraform_bin, "fmt", "-check", "-recursive", "-diff", str(TERRAFORM)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (
        f"terraform fmt -check failed (run `terraform fmt -recursive terraform`):\n{result.stdout}{result.stderr}"
    )


def test_terraform_fmt_check_catches_misformatting(terraform_bin, tmp_path):
    (tmp_path / "bad.tf").write_text('variable "x" {\ntype=string\n}\n')
    result = subprocess.run(
        [terraform_bin, "fmt", "-check", "-recursive", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0


def test_every_module_has_the_four_files_and_pinned_providers():
    for folder in sorted(p for p in MODULES.iterdir() if p.is_dir()):
        for name in ("main.tf", "variables.tf", "outputs.tf", "versions.tf"):
            assert (folder / name).exists(), f"terraform/modules/{folder.name}/{name} is missing"
    for folder in all_folders():
        doc = normalise(hcl2.loads((folder / "versions.tf").read_text()))
        providers = doc["terraform"][0]["required_providers"][0]
        assert providers, f"{folder}: no required_providers"
        for name, spec in providers.items():
            version = (spec[0] if isinstance(spec, list) else spec)["version"]
            assert "~>" in version or "<" in version, (
                f"{folder.name}: provider {name} version {version!r} has no upper bound"
            )


def test_every_variable_is_typed_and_described(modules):
    for mname, module in modules.items():
        for name, var in module.variables.items():
            assert "type" in var, f"{mname}: variable {name} has no type"
            assert str(var.get("description", "")).strip(), f"{mname}: variable {name} has no description"


def test_cdn_cache_key_stale_negative_coalescing_and_for_you_bypass(modules):
    assert shared_query_strings() == {"cursor", "edition", "limit"}
    check_cdn(modules["origin"], shared_query_strings())


ORIGIN_MUTATIONS = {
    "cookie exclusion removed": ("include_named_cookies = []\n", "\n"),
    "a cookie in the key": ("include_named_cookies = []", 'include_named_cookies = ["session"]'),
    "the Cookie header in the key": ("include_http_headers  = []", 'include_http_headers  = ["Cookie"]'),
    "a tracking query string in the key": (
        'cache_query_strings = ["cursor", "edition", "limit"]',
        'cache_query_strings = ["cursor", "edition", "limit", "utm_source"]',
    ),
    "query strings not whitelisted": ("query_string_whitelist = local.cache_query_strings\n", "\n"),
    "For you through the CDN": (
        "priority = 10\n      service  = google_compute_backend_service.direct.id",
        "priority = 10\n      service  = google_compute_backend_service.cdn.id",
    ),
    "serve-while-stale removed": ("serve_while_stale = var.serve_while_stale_sec\n", "\n"),
    "request coalescing off": ("request_coalescing = true", "request_coalescing = false"),
    "negative caching off": ("negative_caching = true", "negative_caching = false"),
}


@pytest.mark.parametrize("mutation", list(ORIGIN_MUTATIONS))
def test_cdn_check_fails_when_the_origin_module_is_broken(mutation):
    old, new = ORIGIN_MUTATIONS[mutation]
    broken = Module.load(MODULES / "origin", edits={"main.tf": (old, new)})
    with pytest.raises(AssertionError):
        check_cdn(broken, shared_query_strings())


def test_no_primitive_roles_and_exact_least_privilege_grants(modules):
    check_no_primitive_roles(modules)
    check_grants(modules["iam"], EXPECTED_GRANTS)
    check_iam_resources(modules)


IAM_MUTATIONS = {
    "roles/owner for the ingest job": (
        'project          = local.dataflow_project_roles\n      topics           = { "items-raw"',
        'project          = concat(local.dataflow_project_roles, ["roles/owner"])\n      topics           = { "items-raw"',
    ),
    "roles/editor for every job": (
        'dataflow_project_roles = ["roles/dataflow.worker"',
        'dataflow_project_roles = ["roles/editor", "roles/dataflow.worker"',
    ),
    "an extra role for stories": (
        'tables        = { articles = ["roles/bigtable.user"]',
        'tables        = { articles = ["roles/bigtable.admin"]',
    ),
    "a hard-coded grant": (
        'resource "google_project_iam_member" "project" {',
        'resource "google_project_iam_member" "extra" {\n  project = var.project_id\n  role    = "roles/pubsub.admin"\n  member  = google_service_account.sa["stories"].member\n}\n\nresource "google_project_iam_member" "project" {',
    ),
}


@pytest.mark.parametrize("mutation", list(IAM_MUTATIONS))
def test_iam_checks_fail_when_a_job_gains_a_role(modules, mutation):
    old, new = IAM_MUTATIONS[mutation]
    broken = dict(modules)
    broken["iam"] = Module.load(MODULES / "iam", edits={"main.tf": (old, new)})
    with pytest.raises(AssertionError):
        check_no_primitive_roles(broken)
        check_grants(broken["iam"], EXPECTED_GRANTS)
        check_iam_resources(broken)


def test_iam_check_fails_on_roles_owner_in_a_parsed_copy(modules):
    """The same property on the parsed data: roles/owner added to the ingest account's grants."""
    iam = copy.copy(modules["iam"])
    iam.locals = copy.deepcopy(iam.locals)
    iam.locals["grants"]["ingest"]["project"] = DATAFLOW + ["roles/owner"]
    with pytest.raises(AssertionError, match="ingest"):
        check_grants(iam, EXPECTED_GRANTS)
    docs = copy.deepcopy(iam.docs)
    docs["main.tf"]["locals"][0]["grants"]["ingest"]["project"] = DATAFLOW + ["roles/owner"]
    iam.docs = docs
    with pytest.raises(AssertionError, match="roles/owner"):
        check_no_primitive_roles({"iam": iam})


def test_the_stories_job_may_invalidate_the_cdn_and_is_told_the_url_map(modules):
    """Breaking purges (stores/cdn.py CloudCdnPurger): urlMaps.invalidateCache needs
    compute.urlMaps.invalidateCache; the stories account holds a custom role with exactly that permission, bound at
    the project (Compute has no per-URL-map IAM), and the job gets the origin's URL map and the breaking topic."""
    iam = modules["iam"]
    roles = iam.locals["custom_roles"]
    assert roles["cdn_invalidator"]["permissions"] == ["compute.urlMaps.invalidateCache"]
    assert iam.locals["grants"]["stories"]["custom"] == ["cdn_invalidator"]
    custom = iam.of_type("google_project_iam_custom_role")["custom"]
    assert custom["permissions"] == "${each.value.permissions}" and custom["for_each"] == "${local.custom_roles}"
    member = iam.of_type("google_project_iam_member")["custom"]
    assert member["for_each"] == "${local.custom_bindings}" and member["role"] == "${each.value.role}"
    params = modules["stack"].locals["stories_parameters"]
    assert "module.origin[0].url_map" in str(params["cdn_url_map"])
    assert params["breaking_topic"] == '${module.pubsub.topic_names["breaking"]}'


def test_topics_mirror_schemas_tables_and_carry_their_avro_schema(modules):
    from schemas.tables import TOPICS

    env = "stack"
    topics = modules["stack"].locals["topics"]
    assert set(topics) == set(TOPICS), f"{env}: topics {sorted(topics)} != schemas.tables.TOPICS {sorted(TOPICS)}"
    for topic, stem in topics.items():
        schema = json.loads((REPO_ROOT / "schemas" / "avro" / f"{stem}.avsc").read_text())
        assert schema["name"] == TOPICS[topic], (
            f"{env}: topic {topic} gets schema {schema['name']}, TOPICS says {TOPICS[topic]}"
        )
    pubsub = modules["pubsub"]
    for name in ("topic", "undeliverable"):
        settings = pubsub.of_type("google_pubsub_topic")[name]["schema_settings"][0]
        assert settings["encoding"] == "BINARY", "schemas.codec writes schemaless Avro binary"
        assert "google_pubsub_schema.message" in settings["schema"]
    assert pubsub.of_type("google_pubsub_schema")["message"]["type"] == "AVRO"
    subscription = pubsub.of_type("google_pubsub_subscription")["job"]
    policy = subscription["dead_letter_policy"][0]
    assert "google_pubsub_topic.undeliverable" in policy["dead_letter_topic"] and policy["max_delivery_attempts"]


def test_bigtable_gc_rules_mirror_schemas_tables(modules):
    from schemas.tables import TABLES

    env = "stack"
    tables = modules["stack"].locals["tables"]
    assert set(tables) == set(TABLES), f"{env}: tables {sorted(tables)} != schemas.tables.TABLES {sorted(TABLES)}"
    for table, families in TABLES.items():
        got = {f: rule["max_versions"] for f, rule in tables[table].items()}
        assert got == families, f"{env}: {table} GC rules {got} != TABLES {families}"
    assert "google_bigtable_gc_policy" in {t for t, _ in modules["bigtable"].resources}


def test_streaming_jobs_drain_on_engine_with_autoscaling_limits(modules):
    job = modules["dataflow"].of_type("google_dataflow_flex_template_job")["job"]
    assert job["on_delete"] == '${var.streaming ? "drain" : "cancel"}'
    assert job["enable_streaming_engine"] == "${var.streaming}"
    assert job["autoscaling_algorithm"] == "THROUGHPUT_BASED" and job["max_workers"] == "${var.max_workers}"
    assert job["ip_configuration"] == "WORKER_IP_PRIVATE"
    call = modules["stack"].modules["streaming_job"]
    assert call["streaming"] is True and call["max_workers"] == "${each.value.max_workers}"
    jobs = modules["stack"].locals["streaming_jobs"]
    assert set(jobs) == {"ingest", "stories", "covisit"}, f"streaming jobs: {sorted(jobs)}"
    for name, job in jobs.items():
        assert job["max_workers"] == f"${{var.{name}_max_workers}}", f"{name} needs an autoscaling ceiling"
        assert job["parameters"] == f"${{merge(local.{name}_parameters, var.{name}_parameters)}}", name
    for env in ENVIRONMENTS:
        call = modules[f"env-{env}"].modules["stack"]
        for name in ("ingest", "stories"):
            assert isinstance(call[f"{name}_max_workers"], int), f"{env}: {name} needs an autoscaling ceiling"


def test_cloud_armor_rate_limits_websub_and_pings(modules):
    policy = modules["origin"].of_type("google_compute_security_policy")["edge"]
    throttled = [r for r in policy["rule"] if r["action"] == "throttle"]
    expressions = " ".join(r["match"][0]["expr"][0]["expression"] for r in throttled)
    assert "websub_path_regex" in expressions and "ping_path_regex" in expressions
    for rule in throttled:
        options = rule["rate_limit_options"][0]
        assert options["exceed_action"] == "deny(429)" and options["enforce_on_key"] == "IP"
    for name in ("cdn", "direct"):
        assert (
            "google_compute_security_policy.edge"
            in modules["origin"].of_type("google_compute_backend_service")[name]["security_policy"]
        )


@pytest.mark.parametrize("job", ["ingest", "stories", "covisit"])
def test_parameters_terraform_passes_are_template_parameters(modules, job):
    """Terraform launches the streaming jobs with parameters of their templates' metadata.json, nothing else."""
    path = REPO_ROOT / "templates" / job / "metadata.json"
    assert path.exists(), f"templates/{job}/metadata.json is missing"
    declared = {p["name"] for p in json.loads(path.read_text())["parameters"]}
    store = set(modules["dataflow"].locals["store_parameters"])
    assert store <= declared, (
        f"terraform/modules/dataflow passes {sorted(store - declared)}, unknown to the {job} template"
    )
    passed = set(modules["stack"].locals[f"{job}_parameters"])
    assert passed <= declared, f"stack: {job} parameters {sorted(passed - declared)} are not in its template"


PUBSUB_REF = re.compile(r'\$\{module\.pubsub\.(topic_names|subscription_names)\["([\w-]+)"\]\}')


def check_job_pubsub_parameters(env: Module, pubsub: Module, iam: Module, job: str) -> dict[str, str]:
    """Every topic/subscription in the env's ``<job>_parameters`` exists in Terraform and the job's account may use
    it: publish to a topic (or read it through one of its subscriptions), read a subscription. Returns the
    subscriptions passed, by parameter name."""
    stages = pubsub.variables["dead_letter_stages"]["default"]
    topics = set(env.locals["topics"]) | {f"dead-letter-{s}" for s in stages}
    subscriptions = env.locals["subscriptions"]
    grants = iam.locals["grants"][job]
    readable = {subscriptions[s]["topic"] for s in grants["subscriptions"] if s in subscriptions}
    passed = {}
    for name, value in env.locals[f"{job}_parameters"].items():
        m = PUBSUB_REF.fullmatch(str(value))
        if not m:
            assert "pubsub" not in str(value), (
                f"{job}: parameter {name} = {value} is not a plain topic/subscription name"
            )
            continue
        kind, key = m.groups()
        if kind == "topic_names":
            assert key in topics, f"{job}: parameter {name} names topic {key!r}, which Terraform does not create"
            may_publish = "roles/pubsub.publisher" in grants["topics"].get(key, [])
            assert may_publish or key in readable, (
                f"{job}: its account may neither publish to nor read topic {key!r} ({name})"
            )
        else:
            assert key in subscriptions, (
                f"{job}: parameter {name} names subscription {key!r}, which Terraform does not create"
            )
            assert "roles/pubsub.subscriber" in grants["subscriptions"].get(key, []), (
                f"{job}: its account may not read subscription {key!r} ({name})"
            )
            passed[name] = key
    return passed


@pytest.mark.parametrize("job", ["ingest", "stories", "covisit"])
def test_topics_and_subscriptions_terraform_passes_exist_and_are_granted(modules, job):
    from deploy_helpers import import_job, options_of

    options = options_of(import_job(job))
    reads = {
        "ingest": ("fetch_request_subscription", "fetch-requests"),
        "stories": ("input_subscription", "items-raw"),
        "covisit": ("input_subscription", "read-events"),
    }
    passed = check_job_pubsub_parameters(modules["stack"], modules["pubsub"], modules["iam"], job)
    option, topic = reads[job]
    assert option in passed, f"Terraform does not give the {job} job its --{option}"
    assert modules["stack"].locals["subscriptions"][passed[option]]["topic"] == topic
    for name, key in passed.items():
        assert options[name].default == key, (
            f"Terraform creates subscription {key!r} for --{name}, whose default is {options[name].default!r}:"
            " a template launched without the parameter would read a subscription that does not exist"
        )


PUBSUB_MUTATIONS = {
    "a subscription Terraform does not create": (
        'subscription_names["stories-items-raw"]',
        'subscription_names["items-raw-stories"]',
    ),
    "a topic the account may not publish to": ('topic_names["dead-letter-stories"]', 'topic_names["read-events"]'),
}


@pytest.mark.parametrize("mutation", list(PUBSUB_MUTATIONS))
def test_pubsub_parameter_check_fails_when_terraform_and_the_grants_disagree(modules, mutation):
    old, new = PUBSUB_MUTATIONS[mutation]
    broken = Module.load(MODULES / "stack", edits={"main.tf": (old, new)})
    with pytest.raises(AssertionError):
        check_job_pubsub_parameters(broken, modules["pubsub"], modules["iam"], "stories")


def check_max_age(tables: dict) -> None:
    """The max_age rules are exactly schemas.tables.MAX_AGE_DAYS, in hours (Terraform's duration)."""
    from schemas.tables import MAX_AGE_DAYS

    got = {(t, f): r["max_age"] for t, fams in tables.items() for f, r in fams.items() if r.get("max_age") is not None}
    want = {(t, f): f"{days * 24}h" for t, fams in MAX_AGE_DAYS.items() for f, days in fams.items()}
    assert got == want, f"Bigtable max_age rules {got} != schemas.tables.MAX_AGE_DAYS in hours {want}"


def test_bigtable_max_age_mirrors_schemas_tables_max_age_days(modules):
    from schemas.tables import MAX_AGE_DAYS

    assert MAX_AGE_DAYS["profiles"]["e"] == 30  # the design's read-event horizon; a change is deliberate
    check_max_age(modules["stack"].locals["tables"])
    # and the check is not vacuous: another age, or the rule gone, fails it
    for edit in (
        ('max_age = "720h"', 'max_age = "168h"'),
        ('e = { max_versions = 1, max_age = "720h" }', "e = { max_versions = 1 }"),
    ):
        broken = Module.load(MODULES / "stack", edits={"main.tf": edit})
        with pytest.raises(AssertionError, match="MAX_AGE_DAYS"):
            check_max_age(broken.locals["tables"])


def test_websub_and_ping_routes_of_serving_are_rate_limited_and_never_cached(modules):
    """The paths serving/api/push.py answers are the ones the URL map sends to the non-CDN backend and Cloud Armor
    throttles (a renamed route would otherwise slip through the CDN and the rate limit)."""
    from fnmatch import fnmatch

    origin = modules["origin"]
    routes = re.findall(r'@bp\.(?:get|post)\("([^"]+)"\)', (REPO_ROOT / "serving" / "api" / "push.py").read_text())
    assert routes, "serving/api/push.py declares no route"
    for kind in ("websub", "ping"):
        paths = origin.resolve(f"${{var.{kind}_paths}}")
        regex = origin.resolve(f"${{var.{kind}_path_regex}}")
        mine = [r for r in routes if kind in r]
        assert mine, f"serving/api/push.py has no {kind} route"
        for route in mine:
            concrete = re.sub(r"<[^>]+>", "abc123", route)
            assert any(fnmatch(concrete, p) for p in paths), f"{route} is not routed around the CDN by {paths}"
            assert re.search(regex, concrete), f"{route} is not rate-limited by Cloud Armor ({regex})"


# --- one stack, two environments ----------------------------------------------------------------------------

# What may differ between the environments: the stack's sizes and protection. Everything else is the stack's.
ENV_SETTINGS = {
    "environment",
    "bigtable_min_nodes",
    "bigtable_max_nodes",
    "ingest_max_workers",
    "stories_max_workers",
    "origin_min_instances",
    "origin_max_instances",
}


def check_environment(env: Module, stack: Module, name: str) -> None:
    """An environment is a call of modules/stack with its literal settings plus the operator's variables: no
    resource, local or other module of its own, every required stack variable given, nothing unknown passed."""
    assert set(env.modules) == {"stack"}, f"{name}: modules {sorted(env.modules)}: an environment calls only the stack"
    assert not env.resources and not env.locals, f"{name}: resources/locals belong in modules/stack"
    call = env.modules["stack"]
    assert call["source"] == "../../modules/stack", f"{name}: source {call['source']!r}"
    args = {k for k in call if k not in ("source", "providers", "depends_on")}
    unknown = args - set(stack.variables)
    assert not unknown, f"{name}: passes {sorted(unknown)}, not variables of modules/stack"
    required = {v for v, body in stack.variables.items() if "default" not in body}
    assert required <= args, f"{name}: stack variables {sorted(required - args)} are not given"
    assert call["environment"] == name, f"{name}: environment = {call['environment']!r}"
    for arg in args - ENV_SETTINGS:
        assert call[arg] == f"${{var.{arg}}}", (
            f"{name}: {arg} = {call[arg]!r}: only {sorted(ENV_SETTINGS)} are set here"
        )
        assert env.variables[arg]["type"] == stack.variables[arg]["type"], (
            f"{name}: variable {arg} is typed unlike the stack's"
        )
    for arg in ENV_SETTINGS - {"environment"}:
        assert isinstance(call.get(arg), int), f"{name}: {arg} must be set to this environment's value"


def test_environments_are_calls_of_the_stack_module(modules):
    for env in ENVIRONMENTS:
        check_environment(modules[f"env-{env}"], modules["stack"], env)
    dev, prod = (modules[f"env-{e}"].modules["stack"] for e in ENVIRONMENTS)
    assert [dev[k] for k in sorted(ENV_SETTINGS)] != [prod[k] for k in sorted(ENV_SETTINGS)]
    for k in ENV_SETTINGS - {"environment"}:
        assert prod[k] >= dev[k], f"prod's {k} ({prod[k]}) is smaller than dev's ({dev[k]})"


def test_environment_interface_files_are_the_same_and_forward_every_stack_output(modules):
    """variables.tf and outputs.tf are the environments' interface, identical on purpose; main.tf differs."""
    folders = [TERRAFORM / "environments" / e for e in ENVIRONMENTS]
    for name in ("variables.tf", "outputs.tf"):
        texts = {(f / name).read_text() for f in folders}
        assert len(texts) == 1, f"environments/*/{name} differ: change them together"
    assert len({(f / "main.tf").read_text() for f in folders}) == 2
    stack_outputs = {k for b in modules["stack"].docs["outputs.tf"]["output"] for k in b}
    env_outputs = {k: v for b in modules["env-dev"].docs["outputs.tf"]["output"] for k, v in b.items()}
    assert set(env_outputs) == stack_outputs, (
        f"environment outputs {sorted(env_outputs)} != stack outputs {sorted(stack_outputs)}"
    )
    for k, v in env_outputs.items():
        assert v["value"] == f"${{module.stack.{k}}}", f"output {k} forwards {v['value']}"


ENV_MUTATIONS = {
    "a resource in an environment": (
        'module "stack" {',
        'resource "google_pubsub_topic" "extra" {\n  name = "extra"\n}\n\nmodule "stack" {',
    ),
    "a required variable not given": ("  project_id            = var.project_id\n", ""),
    "an unknown setting": ('  environment = "dev"\n', '  environment = "dev"\n  bigtable_nodes = 3\n'),
    "the wrong environment": ('  environment = "dev"\n', '  environment = "prod"\n'),
    "an operator value hard-coded": (
        "  image_tag             = var.image_tag\n",
        '  image_tag             = "latest"\n',
    ),
}


@pytest.mark.parametrize("mutation", list(ENV_MUTATIONS))
def test_environment_check_fails_on_a_broken_environment(modules, mutation):
    old, new = ENV_MUTATIONS[mutation]
    broken = Module.load(TERRAFORM / "environments" / "dev", edits={"main.tf": (old, new)})
    with pytest.raises(AssertionError):
        check_environment(broken, modules["stack"], "dev")


def terraform_validate_variables(
    terraform_bin: str, variables_tf: Path, values: dict, tmp_path: Path
) -> subprocess.CompletedProcess:
    """Evaluate the `validation` blocks of a variables.tf offline: a root module holding only those variables needs
    no provider, so `terraform init` and `terraform plan` run without network and plan checks every condition."""
    work = tmp_path / "vars"
    work.mkdir(exist_ok=True)
    (work / "variables.tf").write_text(variables_tf.read_text())
    (work / "values.auto.tfvars.json").write_text(json.dumps(values))
    env = {"TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    init = subprocess.run(
        [terraform_bin, "init", "-input=false", "-no-color"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert init.returncode == 0, init.stdout + init.stderr
    return subprocess.run(
        [terraform_bin, "plan", "-input=false", "-no-color"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


STACK_VALUES = {
    "project_id": "newsroom-dev-123456",
    "environment": "dev",
    "domains": ["dev.news.example.com"],
    "origin_secret_env": {
        "NEWSROOM_TOKEN_SECRET": "newsroom-token-secret",
        "NEWSROOM_CURSOR_SECRET": "newsroom-cursor-secret",
    },
}


def test_origin_gets_token_and_cursor_secrets_from_secret_manager(modules, terraform_bin, tmp_path):
    """The origin refuses to start without NEWSROOM_TOKEN_SECRET and NEWSROOM_CURSOR_SECRET: Terraform must pass both,
    from Secret Manager, and the origin's account may read them. Checked on the HCL and by terraform itself."""
    stack = modules["stack"]
    origin = stack.modules["origin"]
    assert origin["secret_env"] == "${var.origin_secret_env}"
    assert "default" not in stack.variables["origin_secret_env"], "the secrets must be given, not defaulted to none"
    assert stack.modules["iam"]["secrets"] == "${values(var.origin_secret_env)}", "the origin's account must read them"
    container = modules["origin"].of_type("google_cloud_run_v2_service")["origin"]["template"][0]["containers"][0]
    secret_env = [d["env"] for d in container["dynamic"] if "env" in d and "value_source" in d["env"]["content"][0]]
    assert secret_env and secret_env[0]["for_each"] == "${var.secret_env}"
    ref = secret_env[0]["content"][0]["value_source"][0]["secret_key_ref"][0]
    assert ref == {"secret": "${env.value}", "version": "latest"}

    variables = MODULES / "stack" / "variables.tf"
    ok = terraform_validate_variables(terraform_bin, variables, STACK_VALUES, tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    for broken in (
        {"NEWSROOM_TOKEN_SECRET": "newsroom-token-secret"},
        {"NEWSROOM_CURSOR_SECRET": "newsroom-cursor-secret"},
        {**STACK_VALUES["origin_secret_env"], "NEWSROOM_TOKEN_KEY": "misspelt"},
    ):
        bad = terraform_validate_variables(
            terraform_bin, variables, {**STACK_VALUES, "origin_secret_env": broken}, tmp_path
        )
        assert bad.returncode != 0 and "origin_secret_env" in bad.stdout + bad.stderr, (broken, bad.stdout + bad.stderr)


def test_origin_environment_names_the_topics_terraform_creates(modules):
    """Every NEWSROOM_* variable the stack gives the origin is a key the origin knows (serving/), and the topics it
    names are created by the pubsub module."""
    from schemas.tables import TOPICS

    env = modules["stack"].modules["origin"]["env"]
    keys = {k for k in env if k.startswith("NEWSROOM_")} | {
        "NEWSROOM_TOKEN_SECRET",
        "NEWSROOM_CURSOR_SECRET",
        "NEWSROOM_PING_KEYS",
    }
    source = "\n".join(p.read_text() for p in (REPO_ROOT / "serving").rglob("*.py"))
    for key in keys:
        assert f'"{key}"' in source, f"Terraform passes {key}, which serving/ never names"
    stages = modules["pubsub"].variables["dead_letter_stages"]["default"]
    created = set(TOPICS) | {f"dead-letter-{s}" for s in stages}
    for key in ("NEWSROOM_FETCH_TOPIC", "NEWSROOM_PUSH_DEAD_LETTER_TOPIC"):
        m = PUBSUB_REF.fullmatch(env[key])
        assert m and m.group(1) == "topic_names" and m.group(2) in created, f"{key} = {env[key]}"


# --- Pub/Sub message ordering on items-raw ------------------------------------------------------------------


def check_ordering(stack: Module, pubsub: Module) -> None:
    """items-raw is published with an ordering key per canonical URL; the stories job's subscription must deliver
    them in order, so a newer version of an article is not overtaken by an older fetch of it."""
    sub = stack.locals["subscriptions"]["stories-items-raw"]
    assert sub["topic"] == "items-raw"
    assert sub.get("enable_message_ordering") is True, "stories-items-raw must enable message ordering"
    job = pubsub.of_type("google_pubsub_subscription")["job"]
    assert job.get("enable_message_ordering") == "${each.value.enable_message_ordering}", (
        "the pubsub module drops the setting"
    )
    field = pubsub.variables["subscriptions"]["type"]
    assert "enable_message_ordering" in str(field), "the subscriptions variable has no enable_message_ordering"


def test_items_raw_subscription_delivers_in_order(modules):
    check_ordering(modules["stack"], modules["pubsub"])


@pytest.mark.parametrize(
    "folder,old,new",
    [
        ("stack", "enable_message_ordering = true", "enable_message_ordering = false"),
        ("stack", ", enable_message_ordering = true }", " }"),
        ("pubsub", "  enable_message_ordering = each.value.enable_message_ordering\n", "\n"),
    ],
)
def test_ordering_check_fails_when_ordering_is_off(modules, folder, old, new):
    broken = Module.load(MODULES / folder, edits={"main.tf": (old, new)})
    stack = broken if folder == "stack" else modules["stack"]
    pubsub = broken if folder == "pubsub" else modules["pubsub"]
    with pytest.raises(AssertionError):
        check_ordering(stack, pubsub)


# --- monitoring: alert policies, log-based metrics, dashboard ---------------------------------------------------

LOG_METRIC_PREFIX = "logging.googleapis.com/user/"
# alert policy -> (metric type it watches, the variable holding its threshold, condition kind)
EXPECTED_ALERTS = {
    "release_to_page": (LOG_METRIC_PREFIX + "newsroom/release_to_page", "release_to_page_p90_seconds", "threshold"),
    "discovery": (LOG_METRIC_PREFIX + "newsroom/discovery_latency", "discovery_p90_seconds", "threshold"),
    "dead_letter_depth": (
        "pubsub.googleapis.com/subscription/num_undelivered_messages",
        "dead_letter_depth",
        "threshold",
    ),
    "dead_letter_growth": (
        "pubsub.googleapis.com/topic/send_message_operation_count",
        "dead_letter_growth_per_10_minutes",
        "threshold",
    ),
    "rejected_snapshots": (
        LOG_METRIC_PREFIX + "newsroom/snapshots_rejected",
        "rejected_snapshots_per_15_minutes",
        "threshold",
    ),
    "stuck_pointers": (LOG_METRIC_PREFIX + "newsroom/edition_heartbeats", "stuck_pointer_minutes", "absent"),
    "origin_5xx": ("run.googleapis.com/request_count", "origin_5xx_ratio", "threshold"),
    "origin_latency": ("run.googleapis.com/request_latencies", "origin_latency_p99_ms", "threshold"),
    "origin_catalog_age": (
        "workload.googleapis.com/newsroom.origin.catalog_age",
        "origin_catalog_age_seconds",
        "threshold",
    ),
    "watermark_lag": ("dataflow.googleapis.com/job/data_watermark_age", "watermark_lag_seconds", "threshold"),
    "cdn_purge_failures": (
        LOG_METRIC_PREFIX + "newsroom/cdn_purge_failures",
        "cdn_purge_failures_per_15_minutes",
        "threshold",
    ),
    'daily_job_failed["authority"]': (
        LOG_METRIC_PREFIX + "newsroom/authority_failures",
        "authority_failures_tolerated",
        "threshold",
    ),
    'daily_job_failed["userclusters"]': (
        LOG_METRIC_PREFIX + "newsroom/userclusters_failures",
        "userclusters_failures_tolerated",
        "threshold",
    ),
}
# What the jobs must log for the log-based metrics (the code side's contract; /work/notes/infra.md repeats it):
# event -> (the job variable naming the job that logs it, its key=value fields).
LOG_CONTRACT = {
    "page_published": ("stories_job", ["edition", "section", "version", "release_to_page_s"]),
    "snapshot_rejected": ("stories_job", ["edition", "section", "version", "reason"]),
    "edition_heartbeat": ("stories_job", ["edition", "section", "version", "outcome"]),
    "item_discovered": ("ingest_job", ["tier", "via", "discovery_s"]),
    "cdn_purge_failed": ("stories_job", ["edition", "section", "story", "error"]),
}
# Log metrics over platform logs, not the jobs' own lines: metric (an instance of the for_each over
# local.daily_jobs) -> (what its filter must match,). The daily batch jobs' (authority, userclusters) failed launches (Cloud Scheduler logs each failed attempt at
# ERROR) and their runs' ERROR job messages, both by the job's name: the scheduler job's id and the Dataflow job's
# name are that name (check_schedule pins both in modules/schedule; the stack passes the scheduled names to
# monitoring, test_alert_policies_and_dashboard).
PLATFORM_LOG_METRICS = {
    'daily_job_failures["authority"]': (
        [
            'resource.type=\\"cloud_scheduler_job\\" AND resource.labels.job_id=\\"${var.authority_job}\\" AND severity>=ERROR',
            'resource.type=\\"dataflow_step\\" AND resource.labels.job_name=\\"${var.authority_job}\\"',
            'log_id(\\"dataflow.googleapis.com/job-message\\") AND severity>=ERROR',
        ],
    ),
    'daily_job_failures["userclusters"]': (
        [
            'resource.type=\\"cloud_scheduler_job\\" AND resource.labels.job_id=\\"${var.userclusters_job}\\" AND severity>=ERROR',
            'resource.type=\\"dataflow_step\\" AND resource.labels.job_name=\\"${var.userclusters_job}\\"',
            'log_id(\\"dataflow.googleapis.com/job-message\\") AND severity>=ERROR',
        ],
    ),
}
# Dataflow user counters of the stories job the dashboard charts: (namespace-free counter name as Cloud Monitoring's
# metric_name label matches it, where the job counts it).
DASHBOARD_COUNTERS = {
    "announced_.+": "transforms/editions/beam/announce.py AnnounceBreakingFn: breaking/announced_<edition>",
    "takedowns_applied": "transforms/editions/overlays/phases.py: editions/takedowns_applied",
}


def _expand(module: Module, text: str) -> str:
    """Substitute ${local.metric_prefix} and ${google_logging_metric.X.name} in a filter."""
    text = text.replace("${local.metric_prefix}", module.locals["metric_prefix"])
    metrics = module.of_type("google_logging_metric")
    # a metric that is not defined stays unexpanded (the filter then watches no metric type the check expects)
    return re.sub(
        r'\$\{google_logging_metric\.(\w+(?:\["\w+"\])?)\.name\}',
        lambda m: metrics[m.group(1)]["name"] if m.group(1) in metrics else m.group(0),
        text,
    )


def render_dashboard(module: Module, folder: Path) -> dict:
    """The dashboard JSON as Terraform renders it (templatefile), with each variable replaced by a sample value."""
    call = module.of_type("google_monitoring_dashboard")["newsroom"]["dashboard_json"]
    m = re.fullmatch(r'\$\{templatefile\("\$\{path\.module\}/([\w.]+)", \{(.*)\}\)\}', call, re.S)
    assert m, f"dashboard_json is not a templatefile() of the module: {call[:80]}"
    text = (folder / m.group(1)).read_text()
    names = set(re.findall(r"\$\{(\w+)\}", text))
    given = set(re.findall(r"(\w+)\s*=", m.group(2)))
    assert names <= given, f"the dashboard template uses {sorted(names - given)}, not given by templatefile()"
    samples = {"metric_prefix": module.locals["metric_prefix"]}
    for name, value in re.findall(r"(\w+)\s*=\s*([^\n,]+)", m.group(2)):
        ref = re.fullmatch(r'google_logging_metric\.(\w+(?:\["\w+"\])?)\.name', value.strip())
        local = re.fullmatch(r"local\.(\w+)", value.strip())
        var = re.fullmatch(r"var\.(\w+)", value.strip())
        if ref:
            samples[name] = module.of_type("google_logging_metric")[ref.group(1)]["name"]
        elif local:
            samples[name] = module.locals[local.group(1)]
        elif var:
            samples[name] = module.variables[var.group(1)].get("default", f"sample-{var.group(1)}")
    return json.loads(re.sub(r"\$\{(\w+)\}", lambda x: str(samples[x.group(1)]), text))


def check_monitoring(module: Module, folder: Path) -> None:
    module = module.instances()
    policies = module.of_type("google_monitoring_alert_policy")
    metrics = module.of_type("google_logging_metric")
    missing = set(EXPECTED_ALERTS) - set(policies)
    assert not missing, f"alert policies missing: {sorted(missing)}"
    for name, (metric, threshold_var, kind) in EXPECTED_ALERTS.items():
        policy = policies[name]
        assert policy.get("notification_channels") == "${var.notification_channels}", f"{name}: notifies nobody"
        doc = policy.get("documentation", [{}])[0].get("content", "")
        assert len(doc) >= 60, f"{name}: no runbook in documentation"
        conditions = policy.get("conditions", [])
        assert conditions, f"{name}: no condition"
        cond = conditions[0]
        default = module.variables.get(threshold_var, {}).get("default")
        assert isinstance(default, (int, float)) and default >= 0, (
            f"{name}: threshold variable {threshold_var} has no default (a number >= 0)"
        )
        if kind == "absent":
            body = cond["condition_absent"][0]
            assert f"var.{threshold_var}" in str(body.get("duration")), (
                f"{name}: the absence window is not {threshold_var}"
            )
        else:
            body = cond["condition_threshold"][0]
            assert body.get("threshold_value") == f"${{var.{threshold_var}}}", (
                f"{name}: threshold is not var.{threshold_var}"
            )
            assert body.get("comparison") == "COMPARISON_GT", f"{name}: comparison {body.get('comparison')}"
        flt = _expand(module, str(body.get("filter", "")))
        assert f'metric.type="{metric}"' in flt, f"{name}: the condition does not watch {metric}: {flt}"
        assert body.get("aggregations"), f"{name}: no aggregation"
        if metric.startswith(LOG_METRIC_PREFIX):
            assert any(m["name"] == metric[len(LOG_METRIC_PREFIX) :] for m in metrics.values()), (
                f"{name}: no log metric {metric}"
            )
    # every log-based metric reads one event of the contract, and only its fields
    events = module.locals["log_events"]
    assert set(events) == set(LOG_CONTRACT), f"log events {sorted(events)} != {sorted(LOG_CONTRACT)}"
    for event, (job_var, fields) in LOG_CONTRACT.items():
        assert events[event] == {"job": f"${{var.{job_var}}}", "fields": fields}, f"{event}: {events[event]}"
    for mname, (parts,) in PLATFORM_LOG_METRICS.items():
        assert mname in metrics, f"log metric {mname} missing"
        for part in parts:
            assert part in str(metrics[mname]["filter"]), f"log metric {mname} does not match {part}"
    for mname, m in metrics.items():
        if mname in PLATFORM_LOG_METRICS:
            continue
        used = re.findall(r"event_filter\[\"(\w+)\"\]", m["filter"])
        assert len(used) == 1, f"log metric {mname} must filter on one log event"
        fields = LOG_CONTRACT[used[0]][1]
        for extractor in [m.get("value_extractor", "")] + list(m.get("label_extractors", {}).values()):
            for field in re.findall(r"(\w+)=\(", extractor):
                assert field in fields, f"log metric {mname} reads {field}=, not a field of newsroom.{used[0]}"
    assert "jsonPayload.message=~" in str(module.locals["event_filter"]) and "dataflow_step" in str(
        module.locals["event_filter"]
    )
    # the dashboard shows what every alert watches
    dashboard = render_dashboard(module, folder)
    shown = " ".join(
        ds["timeSeriesQuery"]["timeSeriesFilter"]["filter"]
        for tile in dashboard["mosaicLayout"]["tiles"]
        for ds in tile["widget"].get("xyChart", {}).get("dataSets", [])
    )
    for name, (metric, _, _) in EXPECTED_ALERTS.items():
        assert f'metric.type="{metric}"' in shown, f"the dashboard has no chart of {metric} ({name})"
    for counter, origin in DASHBOARD_COUNTERS.items():
        chart = re.escape('metric.type="dataflow.googleapis.com/job/user_counter"') + r".*" + re.escape(counter)
        assert re.search(chart, shown), f"the dashboard has no chart of the counter {counter} ({origin})"


def test_alert_policies_and_dashboard(modules):
    check_monitoring(modules["monitoring"], MODULES / "monitoring")
    monitoring = modules["monitoring"]
    outputs = {k: v for block in monitoring.docs["outputs.tf"].get("output", []) for k, v in block.items()}
    listed = re.findall(
        r'google_monitoring_alert_policy\.(\w+(?:\["\w+"\])?)\.name', str(outputs["alert_policies"]["value"])
    )
    policies = monitoring.instances().of_type("google_monitoring_alert_policy")
    assert sorted(listed) == sorted(policies), "alert_policies output"
    stack = modules["stack"]
    call = stack.modules["monitoring"]
    assert call["notification_channels"] == "${var.notification_channels}"
    assert stack.modules["streaming_job"]["name"] == "${local.names[each.key]}"
    for job in stack.locals["streaming_jobs"]:  # every streaming job is watched (watermark lag)
        assert call[f"{job}_job"] == f"${{local.names.{job}}}", f"monitoring does not watch the {job} job"
    assert call["origin_service"] == stack.modules["origin"]["name"]
    assert call["authority_job"] == "${local.names.authority}" == stack.modules["authority_schedule"]["name"], (
        "monitoring does not watch the scheduled authority job"
    )
    assert (
        call["userclusters_job"] == "${local.names.userclusters}" == stack.modules["userclusters_schedule"]["name"]
    ), "monitoring does not watch the scheduled user-cluster job"


def _cut_block(text: str, header: str) -> str:
    start = text.index(header)
    end = text.index("\n}\n", start) + 3
    return text[:start] + text[end:]


def _cut_entry(text: str, header: str) -> str:
    """Remove one entry ``name = { ... }`` of a locals map (its closing brace at the header's indentation)."""
    start = text.index(header)
    indent = header[: len(header) - len(header.lstrip())]
    end = text.index("\n" + indent + "}\n", start) + len(indent) + 3
    return text[:start] + text[end:]


MONITORING_MUTATIONS = {
    "watermark alert removed": lambda t: _cut_block(t, 'resource "google_monitoring_alert_policy" "watermark_lag" {'),
    "stuck pointer alert removed": lambda t: _cut_block(
        t, 'resource "google_monitoring_alert_policy" "stuck_pointers" {'
    ),
    "dead-letter threshold gone": lambda t: t.replace("      threshold_value = var.dead_letter_depth\n", "", 1),
    "5xx threshold hard-coded": lambda t: t.replace(
        "threshold_value         = var.origin_5xx_ratio", "threshold_value         = 0.5", 1
    ),
    "freshness alert watches another metric": lambda t: t.replace(
        'google_logging_metric.release_to_page.name}\\""', 'google_logging_metric.pages_published.name}\\""', 1
    ),
    "nobody notified": lambda t: t.replace(
        "notification_channels = var.notification_channels\n", "notification_channels = []\n", 1
    ),
    "a log metric reads an undocumented field": lambda t: t.replace("discovery_s=([0-9]", "latency_s=([0-9]", 1),
    "authority job dropped from the daily jobs": lambda t: _cut_entry(t, "    authority = {"),
    "daily-job alerts removed": lambda t: _cut_block(
        t, 'resource "google_monitoring_alert_policy" "daily_job_failed" {'
    ),
    "daily-job metrics removed": lambda t: _cut_block(t, 'resource "google_logging_metric" "daily_job_failures" {'),
    "daily-job threshold gone": lambda t: t.replace("      threshold_value = each.value.tolerated\n", "", 1),
    "authority threshold hard-coded": lambda t: t.replace(
        "tolerated    = var.authority_failures_tolerated", "tolerated    = 3", 1
    ),
    "daily-job launch failures not counted": lambda t: t.replace('resource.type=\\"cloud_scheduler_job\\"', "", 1),
    "daily-job run failures not counted": lambda t: t.replace(
        'log_id(\\"dataflow.googleapis.com/job-message\\")', "", 1
    ),
    "user-cluster job dropped from the daily jobs": lambda t: _cut_entry(t, "    userclusters = {"),
    "user-cluster alert watches the authority metric": lambda t: t.replace(
        "google_logging_metric.daily_job_failures[each.key].name}",
        'google_logging_metric.daily_job_failures["authority"].name}',
        1,
    ),
    "user-cluster threshold is the authority one": lambda t: t.replace(
        "tolerated    = var.userclusters_failures_tolerated", "tolerated    = var.authority_failures_tolerated", 1
    ),
    "user-cluster launch failures not counted": lambda t: t.replace(
        "job          = var.userclusters_job", "job          = var.authority_job", 1
    ),
    "purge alert removed": lambda t: _cut_block(t, 'resource "google_monitoring_alert_policy" "cdn_purge_failures" {'),
    "purge metric removed": lambda t: _cut_block(t, 'resource "google_logging_metric" "cdn_purge_failures" {'),
    "purge threshold hard-coded": lambda t: t.replace(
        "threshold_value = var.cdn_purge_failures_per_15_minutes", "threshold_value = 10", 1
    ),
    "purge event renamed": lambda t: t.replace("cdn_purge_failed  = {", "cdn_purge_error   = {", 1),
}


@pytest.mark.parametrize("mutation", list(MONITORING_MUTATIONS))
def test_monitoring_check_fails_when_an_alert_is_removed_or_loses_its_threshold(mutation):
    folder = MODULES / "monitoring"
    text = (folder / "main.tf").read_text()
    broken_text = MONITORING_MUTATIONS[mutation](text)
    assert broken_text != text, f"mutation {mutation} changed nothing"
    broken = Module({**{p.name: p.read_text() for p in folder.glob("*.tf")}, "main.tf": broken_text})
    with pytest.raises(AssertionError):
        check_monitoring(broken, folder)


def test_monitoring_check_fails_when_a_threshold_default_is_removed_or_a_chart_is_missing(tmp_path):
    folder = MODULES / "monitoring"
    files = {p.name: p.read_text() for p in folder.glob("*.tf")}
    no_default = files["variables.tf"].replace("  default     = 300\n", "", 1)
    assert no_default != files["variables.tf"]
    with pytest.raises(AssertionError, match="default"):
        check_monitoring(Module({**files, "variables.tf": no_default}), folder)
    dashboard = json.loads(re.sub(r"\$\{(\w+)\}", "0", (folder / "dashboard.json.tftpl").read_text()))
    assert dashboard["mosaicLayout"]["tiles"]
    template = (folder / "dashboard.json.tftpl").read_text()
    tiles = json.loads(re.sub(r"\$\{(\w+)\}", "0", template))["mosaicLayout"]["tiles"]
    watermark = [i for i, t in enumerate(tiles) if "data_watermark_age" in json.dumps(t)]
    assert watermark
    for chart, gone in (
        ("data_watermark_age", "elapsed_time"),  # each chart removed in turn: the check names it
        ("${cdn_purge_failures_metric}", "${snapshots_rejected_metric}"),
        ("${authority_failures_metric}", "${pages_published_metric}"),
        ("${userclusters_failures_metric}", "${pages_published_metric}"),
        ("announced_.+", "pages_purged"),
        ('\\"takedowns_applied\\"', '\\"cycles\\"'),
    ):
        assert chart in template, chart
        (tmp_path / "dashboard.json.tftpl").write_text(template.replace(chart, gone))
        with pytest.raises(AssertionError, match="dashboard has no chart"):
            check_monitoring(Module(files), tmp_path)


def test_monitoring_variables_validate(terraform_bin, tmp_path):
    """The thresholds' validation blocks, evaluated by terraform itself."""
    variables = MODULES / "monitoring" / "variables.tf"
    base = {
        "project_id": "newsroom-dev-123456",
        "ingest_job": "newsroom-ingest",
        "stories_job": "newsroom-stories",
        "covisit_job": "newsroom-covisit",
        "authority_job": "newsroom-authority",
        "userclusters_job": "newsroom-userclusters",
        "origin_service": "newsroom-origin",
    }
    ok = terraform_validate_variables(
        terraform_bin,
        variables,
        {**base, "notification_channels": ["projects/newsroom-dev-123456/notificationChannels/123"]},
        tmp_path,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    for bad in (
        {"origin_5xx_ratio": 5},
        {"stuck_pointer_minutes": 1},
        {"notification_channels": ["alice@example.com"]},
        {"authority_failure_window_hours": 26},  # longer than an alert's alignment period may be
        {"userclusters_failure_window_hours": 0},
        {"cdn_purge_failures_per_15_minutes": -1},
    ):
        result = terraform_validate_variables(terraform_bin, variables, {**base, **bad}, tmp_path)
        assert result.returncode != 0 and next(iter(bad)) in result.stdout + result.stderr, (
            bad,
            result.stdout + result.stderr,
        )


# --- the daily authority launch (terraform/modules/schedule) ------------------------------------------------

LAUNCH_URL = (
    "https://dataflow.googleapis.com/v1b3/projects/${var.project_id}/locations/${var.region}/flexTemplates:launch"
)
# What README "Operations" 11 passes to `gcloud dataflow flex-template run`, besides sdk_container_image (the launch
# request's environment.sdkContainerImage).
AUTHORITY_PARAMETERS = {"snapshot_bucket", "bigtable_instance", "window_days"}
SCHEDULE_CALL = {
    "source": "../schedule",
    "count": "${local.deploy ? 1 : 0}",
    "name": "${local.names.authority}",
    "launcher_service_account_email": '${module.iam.emails["scheduler"]}',
    "service_account_email": '${module.iam.emails["authority"]}',
    "container_spec_gcs_path": "gs://${module.storage.templates_bucket}/authority-${var.image_tag}.json",
    "image": "${local.image}",
    "parameters": "${merge(local.authority_parameters, var.authority_parameters)}",
    "subnetwork": "${module.network.subnetwork}",
    "staging_bucket": "${module.storage.staging_bucket}",
    "max_workers": "${var.authority_max_workers}",
    "schedule": "${var.authority_schedule}",
    "time_zone": "${var.authority_time_zone}",
    "enabled": "${var.authority_schedule_enabled}",
}
LAUNCH_ENVIRONMENT = {
    "serviceAccountEmail": "${var.service_account_email}",
    "subnetwork": "${var.subnetwork}",
    "ipConfiguration": "WORKER_IP_PRIVATE",
    "stagingLocation": "gs://${var.staging_bucket}/staging/${var.name}",
    "tempLocation": "gs://${var.staging_bucket}/tmp/${var.name}",
    "sdkContainerImage": "${var.image}",
    "maxWorkers": "${var.max_workers}",
}


def check_schedule(stack: Module, schedule: Module, iam: Module) -> None:
    """The stack launches the authority job daily through modules/schedule, as README "Operations" 11 does by hand,
    and the scheduler's account can do that and no more."""
    assert "cloudscheduler.googleapis.com" in stack.locals["services"], "the Cloud Scheduler API is not enabled"
    call = stack.modules.get("authority_schedule")
    assert call, "the stack does not schedule the authority job (module authority_schedule)"
    for key, want in SCHEDULE_CALL.items():
        assert call.get(key) == want, f"stack: authority_schedule.{key} = {call.get(key)!r}, expected {want!r}"
    assert stack.locals["names"]["authority"] == "newsroom-authority"
    assert stack.variables["authority_schedule"].get("default") == "0 3 * * *", "the authority job runs at 03:00"
    assert stack.variables["authority_time_zone"].get("default") in ("Etc/UTC", "UTC")
    assert stack.variables["authority_schedule_enabled"].get("default") is True, "scheduled unless switched off"
    params = stack.locals["authority_parameters"]
    assert set(params) >= AUTHORITY_PARAMETERS, f"authority parameters {sorted(params)} lack README's"
    assert params["snapshot_bucket"] == "${module.storage.snapshots_bucket}"
    assert params["bigtable_instance"] == "${module.bigtable.instance_id}"

    jobs = schedule.of_type("google_cloud_scheduler_job")
    assert set(jobs) == {"launch"}, f"schedule: scheduler jobs {sorted(jobs)}"
    job = jobs["launch"]
    assert job.get("name") == "${var.name}", "the scheduler job's id is not the name monitoring filters its logs by"
    assert job.get("schedule") == "${var.schedule}" and job.get("time_zone") == "${var.time_zone}"
    assert schedule.variables["schedule"].get("default") == "0 3 * * *"
    assert job.get("paused") == "${!var.enabled}", "the enable flag does not pause the job"
    retry = job.get("retry_config", [{}])[0]
    assert retry.get("retry_count") == "${var.retry_count}", "no retry of a failed launch"
    assert schedule.variables["retry_count"].get("default", 0) >= 1
    target = job["http_target"][0]
    assert target.get("http_method") == "POST"
    assert schedule.resolve(target.get("uri")) == LAUNCH_URL, f"schedule: launches {target.get('uri')!r}"
    assert "oidc_token" not in target, "Google APIs take an OAuth access token, not an OIDC token"
    token = target.get("oauth_token", [{}])[0]
    assert token.get("service_account_email") == "${var.launcher_service_account_email}"
    assert token.get("scope") == "https://www.googleapis.com/auth/cloud-platform"
    assert target.get("body") == "${base64encode(jsonencode(local.launch_request))}"
    launch = schedule.locals["launch_request"]["launchParameter"]
    assert launch.get("jobName") == "${var.name}"
    assert launch.get("containerSpecGcsPath") == "${var.container_spec_gcs_path}"
    assert launch.get("parameters") == "${var.parameters}"
    env = launch.get("environment", {})
    for key, want in LAUNCH_ENVIRONMENT.items():
        assert env.get(key) == want, f"schedule: launch environment {key} = {env.get(key)!r}, expected {want!r}"

    grants = iam.locals["grants"]["scheduler"]
    daily = {"authority": ["roles/iam.serviceAccountUser"], "userclusters": ["roles/iam.serviceAccountUser"]}
    assert grants["service_accounts"] == daily, (
        f"scheduler acts as {grants['service_accounts']}: it may act as the daily jobs' accounts only"
    )
    binding = iam.of_type("google_service_account_iam_member").get("service_account", {})
    assert binding.get("for_each") == "${local.service_account_bindings}", "no binding on the authority account"
    assert binding.get("service_account_id") == "${google_service_account.sa[each.value.target].name}"
    assert "g.service_accounts" in str(iam.locals.get("service_account_bindings")), "bindings not from `grants`"


def test_authority_job_is_launched_daily_by_cloud_scheduler(modules):
    check_schedule(modules["stack"], modules["schedule"], modules["iam"])
    metadata = REPO_ROOT / "templates" / "authority" / "metadata.json"
    declared = {p["name"] for p in json.loads(metadata.read_text())["parameters"]}
    passed = modules["stack"].locals["authority_parameters"]
    assert set(passed) <= declared, f"stack: authority parameters {sorted(set(passed) - declared)} not in its template"
    regexes = {p["name"]: p.get("regexes", []) for p in json.loads(metadata.read_text())["parameters"]}
    for name, value in passed.items():  # literal values pass the template's regexes, as Dataflow checks at launch
        if "${" not in str(value):
            assert all(re.fullmatch(r, str(value)) for r in regexes[name]), f"authority {name}={value!r}"
    for env in ENVIRONMENTS:  # the operator can move or pause it per environment
        call = modules[f"env-{env}"].modules["stack"]
        for key in ("authority_schedule", "authority_time_zone", "authority_schedule_enabled"):
            assert call.get(key) == f"${{var.{key}}}", f"{env}: {key} is not the operator's"


def test_userclusters_job_is_launched_daily_like_authority(modules):
    """The daily user-cluster job: its own template and account, the store parameters, a schedule of its own."""
    stack = modules["stack"]
    call = stack.modules.get("userclusters_schedule")
    assert call, "the stack does not schedule the user-cluster job (module userclusters_schedule)"
    assert call.get("source") == "../schedule" and call.get("name") == "${local.names.userclusters}"
    assert call.get("service_account_email") == '${module.iam.emails["userclusters"]}'
    assert call.get("launcher_service_account_email") == '${module.iam.emails["scheduler"]}'
    assert call.get("container_spec_gcs_path", "").endswith("/userclusters-${var.image_tag}.json")
    assert stack.locals["names"]["userclusters"] == "newsroom-userclusters"
    assert stack.variables["userclusters_schedule"].get("default") == "30 4 * * *"
    params = stack.locals["userclusters_parameters"]
    assert params["bigtable_instance"] == "${module.bigtable.instance_id}"
    declared = {
        p["name"] for p in json.loads((REPO_ROOT / "templates/userclusters/metadata.json").read_text())["parameters"]
    }
    assert set(params) <= declared


SCHEDULE_MUTATIONS = {
    "scheduler removed": (
        "stack",
        "main.tf",
        lambda t: _cut_block(t, 'module "authority_schedule" {'),
    ),
    "scheduler API not enabled": (
        "stack",
        "main.tf",
        lambda t: t.replace('    "cloudscheduler.googleapis.com",\n', ""),
    ),
    "another schedule": (
        "stack",
        "variables.tf",
        lambda t: t.replace('default     = "0 3 * * *"', 'default     = "0 3 * * 0"'),
    ),
    "schedule not used": (
        "schedule",
        "main.tf",
        lambda t: t.replace("schedule         = var.schedule", 'schedule         = "0 3 1 1 *"'),
    ),
    "the job never paused": (
        "schedule",
        "main.tf",
        lambda t: t.replace("paused           = !var.enabled", "paused           = false"),
    ),
    "another launch URL": ("schedule", "main.tf", lambda t: t.replace("flexTemplates:launch", "templates:launch")),
    "launched as the scheduler": (
        "stack",
        "main.tf",
        lambda t: t.replace(
            'service_account_email          = module.iam.emails["authority"]',
            'service_account_email          = module.iam.emails["scheduler"]',
        ),
    ),
    "another template": (
        "stack",
        "main.tf",
        lambda t: t.replace("/authority-${var.image_tag}.json", "/stories-${var.image_tag}.json"),
    ),
    "public worker IPs": ("schedule", "main.tf", lambda t: t.replace('"WORKER_IP_PRIVATE"', '"WORKER_IP_PUBLIC"')),
    "no OAuth token": (
        "schedule",
        "main.tf",
        lambda t: t.replace("oauth_token {", "oidc_token {").replace(
            '      scope                 = "https://www.googleapis.com/auth/cloud-platform"\n', ""
        ),
    ),
    "no retry": (
        "schedule",
        "main.tf",
        lambda t: t.replace("retry_count          = var.retry_count", "retry_count          = 0"),
    ),
    "service-account binding removed": (
        "iam",
        "main.tf",
        lambda t: _cut_block(t, 'resource "google_service_account_iam_member" "service_account" {'),
    ),
    "acts as every account": (
        "iam",
        "main.tf",
        lambda t: t.replace(
            'service_accounts = { authority = ["roles/iam.serviceAccountUser"], userclusters = ["roles/iam.serviceAccountUser"] }',
            'service_accounts = { authority = ["roles/iam.serviceAccountUser"], userclusters = ["roles/iam.serviceAccountUser"], stories = ["roles/iam.serviceAccountUser"] }',
        ),
    ),
}


@pytest.mark.parametrize("mutation", list(SCHEDULE_MUTATIONS))
def test_schedule_check_fails_when_the_launch_is_removed_or_broken(modules, mutation):
    folder, name, edit = SCHEDULE_MUTATIONS[mutation]
    files = {p.name: p.read_text() for p in sorted((MODULES / folder).glob("*.tf"))}
    broken_text = edit(files[name])
    assert broken_text != files[name], f"mutation {mutation} changed nothing"
    broken = dict(modules)
    broken[folder] = Module({**files, name: broken_text})
    with pytest.raises(AssertionError):
        check_schedule(broken["stack"], broken["schedule"], broken["iam"])


SCHEDULER_GRANT_MUTATIONS = {
    "dataflow.admin instead of developer": (
        'project          = ["roles/dataflow.developer"]',
        'project          = ["roles/dataflow.admin"]',
    ),
    "project-level serviceAccountUser": (
        'project          = ["roles/dataflow.developer"]',
        'project          = ["roles/dataflow.developer", "roles/iam.serviceAccountUser"]',
    ),
    "editor for the scheduler": (
        'project          = ["roles/dataflow.developer"]',
        'project          = ["roles/editor"]',
    ),
    "serviceAccountTokenCreator on authority": (
        'service_accounts = { authority = ["roles/iam.serviceAccountUser"], userclusters = ["roles/iam.serviceAccountUser"] }',
        'service_accounts = { authority = ["roles/iam.serviceAccountUser", "roles/iam.serviceAccountTokenCreator"], userclusters = ["roles/iam.serviceAccountUser"] }',
    ),
    "the whole staging bucket": (
        'buckets          = { templates = ["roles/storage.objectViewer"] }',
        'buckets          = { templates = ["roles/storage.objectViewer"], staging = ["roles/storage.objectAdmin"] }',
    ),
}


@pytest.mark.parametrize("mutation", list(SCHEDULER_GRANT_MUTATIONS))
def test_grant_check_fails_when_the_scheduler_gains_a_broader_role(modules, mutation):
    old, new = SCHEDULER_GRANT_MUTATIONS[mutation]
    broken = Module.load(MODULES / "iam", edits={"main.tf": (old, new)})
    with pytest.raises(AssertionError, match="scheduler|primitive"):
        check_no_primitive_roles({"iam": broken})
        check_grants(broken, EXPECTED_GRANTS)


SCHEDULE_VALUES = {
    "project_id": "newsroom-dev-123456",
    "region": "europe-west1",
    "name": "newsroom-authority",
    "launcher_service_account_email": "newsroom-scheduler@newsroom-dev-123456.iam.gserviceaccount.com",
    "container_spec_gcs_path": "gs://newsroom-dev-123456-newsroom-templates/authority-20250101-1200.json",
    "image": "europe-west1-docker.pkg.dev/newsroom-dev-123456/newsroom/newsroom:20250101-1200",
    "service_account_email": "newsroom-authority@newsroom-dev-123456.iam.gserviceaccount.com",
    "subnetwork": "projects/newsroom-dev-123456/regions/europe-west1/subnetworks/newsroom",
    "staging_bucket": "newsroom-dev-123456-newsroom-staging",
}


def test_schedule_variables_validate(terraform_bin, tmp_path):
    """The schedule module's validation blocks, evaluated by terraform itself: the defaults and a few good values
    pass, a malformed schedule, time zone, retry count, deadline or launcher account fails naming the variable."""
    variables = MODULES / "schedule" / "variables.tf"
    for good in ({}, {"schedule": "30 2 * * 1-5", "time_zone": "Europe/Paris", "enabled": False, "retry_count": 0}):
        ok = terraform_validate_variables(terraform_bin, variables, {**SCHEDULE_VALUES, **good}, tmp_path)
        assert ok.returncode == 0, (good, ok.stdout + ok.stderr)
    for bad in (
        {"schedule": "every day at 3"},
        {"schedule": "0 3 * *"},
        {"time_zone": "not a zone"},
        {"retry_count": 9},
        {"attempt_deadline": "3h"},
        {"launcher_service_account_email": "alice@example.com"},
        {"max_workers": 0},
    ):
        result = terraform_validate_variables(terraform_bin, variables, {**SCHEDULE_VALUES, **bad}, tmp_path)
        assert result.returncode != 0 and next(iter(bad)) in result.stdout + result.stderr, (
            bad,
            result.stdout + result.stderr,
        )
