# Service accounts and least-privilege IAM for Newsroom: one account per Dataflow job (ingest, stories,
# backfill, covisit, authority, userclusters), one for the origin and one for the scheduler that launches the
# daily batch jobs (authority, userclusters).
# Every grant is written below as data, resource by resource (a topic, a subscription, a table, a bucket, another
# account), never a primitive role (owner/editor/viewer) and project-level only for what Dataflow workers and
# Cloud Run need to run and report (worker, logs, metrics) and for the scheduler to create Dataflow jobs.
# tests/deploy/test_terraform.py parses `grants` and fails if an account gains a role that is not listed there or
# a primitive role anywhere.
#
# Why each grant:
#   ingest    reads fetch requests (pushes, pings, burst priority), polls feeds (feeds table: registry and
#             schedule state), publishes raw items and its dead letters; a publisher's 404/410 on a re-fetch
#             writes a tombstone (takedowns) and its audit entry (audit).
#   stories   reads raw items, writes articles/stories/pointers, creates snapshot objects (objectCreator cannot
#             overwrite or delete: snapshot immutability enforced by IAM as well as by naming), reads them back
#             for validation, reads the editorial controls (controls table; operators write them with their own
#             credentials) and the tombstones (takedowns, omitted from the next snapshots), publishes story
#             changes, burst fetch requests, Breaking records and dead letters, and purges the pages newly showing
#             a Breaking story at the CDN (custom role cdn_invalidator: compute.urlMaps.invalidateCache only; no
#             predefined role grants it without also granting edits of the load balancer).
#   backfill  reads the production article table, the tombstones (takedowns: skipped) and snapshots (read-only),
#             writes only its own namespace tables (<namespace>-<table>) and the backfill bucket.
#   covisit   reads read events (covisit-read-events), writes the covisit table, publishes its dead letters, reads
#             the aliases pointer and map (pointers table, snapshots bucket: counts follow merges); reads
#             the readers' cluster memberships and writes the clusters' click counts (userclusters).
#   userclusters the daily user-cluster job: reads the reader profiles' reads (profiles, read-only) and replaces
#             the readers' cluster memberships (userclusters).
#   authority the batch authority job: reads the story and article tables (read-only), creates its document
#             objects (authority/v{n}.json: objectCreator, write-once like the pages) and reads them back, and
#             moves the `authority` pointer (pointers: bigtable.user, the compare-and-set; table-level IAM cannot
#             narrow it to one row).
#   scheduler not a job: Cloud Scheduler's identity launching the authority and userclusters jobs daily
#             (modules/schedule): creates Dataflow jobs, reads the template specs, acts as those two accounts only.
#   origin    reads pointers, snapshots (pages in memory) and tombstones (takedowns, filtered at once), records
#             WebSub subscription states in feeds (the hub's verification GET activates or denies them), keeps
#             reader profiles, reads co-visitation neighbours (covisit, read-only), reads user clusters and deletes a
#             reader's memberships with the profile (userclusters), publishes read events,
#             fetch requests (WebSub deliveries, pings) and the rejected pushes (dead-letter-push), reads its secrets
#             (token and cursor keys) from Secret Manager.
# Custom roles (`custom`, by key of local.custom_roles) are project-level: Compute has no IAM on a single URL map.
# Operators running `newsroom rollback` / `control` / takedowns with Cloud CDN purges need the same permission.
# Pub/Sub reads from Dataflow need roles/pubsub.viewer on the subscription besides subscriber (the runner reads
# the subscription's metadata).

locals {
  dataflow_project_roles = ["roles/dataflow.worker", "roles/logging.logWriter", "roles/monitoring.metricWriter"]

  custom_roles = {
    cdn_invalidator = {
      title       = "Newsroom CDN invalidator"
      description = "Invalidate Cloud CDN cached pages of the origin's URL map (Breaking, takedown, rollback purges)."
      permissions = ["compute.urlMaps.invalidateCache"]
    }
  }

  # What an account that does not run a Dataflow job is for (its description).
  purposes = {
    origin    = "Runs the Newsroom origin Cloud Run service"
    scheduler = "Launches the daily Newsroom authority and userclusters jobs from Cloud Scheduler"
  }

  grants = {
    ingest = {
      project          = local.dataflow_project_roles
      topics           = { "items-raw" = ["roles/pubsub.publisher"], "dead-letter" = ["roles/pubsub.publisher"], "dead-letter-ingest" = ["roles/pubsub.publisher"] }
      subscriptions    = { "ingest-fetch-requests" = ["roles/pubsub.subscriber", "roles/pubsub.viewer"] }
      tables           = { feeds = ["roles/bigtable.user"], takedowns = ["roles/bigtable.user"], audit = ["roles/bigtable.user"] }
      namespaced       = []
      buckets          = { staging = ["roles/storage.objectAdmin"], templates = ["roles/storage.objectViewer"] }
      registry         = ["roles/artifactregistry.reader"]
      secrets          = []
      custom           = []
      service_accounts = {}
    }
    stories = {
      project = local.dataflow_project_roles
      topics = {
        "articles"             = ["roles/pubsub.publisher"]
        "story-changes"        = ["roles/pubsub.publisher"]
        "fetch-requests"       = ["roles/pubsub.publisher"]
        "dead-letter"          = ["roles/pubsub.publisher"]
        "dead-letter-articles" = ["roles/pubsub.publisher"]
        "dead-letter-stories"  = ["roles/pubsub.publisher"]
        "dead-letter-editions" = ["roles/pubsub.publisher"]
        "breaking"             = ["roles/pubsub.publisher"]
      }
      subscriptions = { "stories-items-raw" = ["roles/pubsub.subscriber", "roles/pubsub.viewer"] }
      tables        = { articles = ["roles/bigtable.user"], stories = ["roles/bigtable.user"], pointers = ["roles/bigtable.user"], controls = ["roles/bigtable.reader"], takedowns = ["roles/bigtable.reader"], follows = ["roles/bigtable.reader"] }
      namespaced    = []
      buckets = {
        snapshots = ["roles/storage.objectCreator", "roles/storage.objectViewer"]
        staging   = ["roles/storage.objectAdmin"]
        templates = ["roles/storage.objectViewer"]
      }
      registry         = ["roles/artifactregistry.reader"]
      secrets          = []
      custom           = ["cdn_invalidator"]
      service_accounts = {}
    }
    backfill = {
      project       = local.dataflow_project_roles
      topics        = {}
      subscriptions = {}
      tables        = { articles = ["roles/bigtable.reader"], takedowns = ["roles/bigtable.reader"] }
      namespaced    = ["roles/bigtable.user"]
      buckets = {
        backfill  = ["roles/storage.objectAdmin"]
        snapshots = ["roles/storage.objectViewer"]
        staging   = ["roles/storage.objectAdmin"]
        templates = ["roles/storage.objectViewer"]
      }
      registry         = ["roles/artifactregistry.reader"]
      secrets          = []
      custom           = []
      service_accounts = {}
    }
    covisit = {
      project          = local.dataflow_project_roles
      topics           = { "dead-letter-covisit" = ["roles/pubsub.publisher"] }
      subscriptions    = { "covisit-read-events" = ["roles/pubsub.subscriber", "roles/pubsub.viewer"] }
      tables           = { covisit = ["roles/bigtable.user"], userclusters = ["roles/bigtable.user"], pointers = ["roles/bigtable.reader"] }
      namespaced       = []
      buckets          = { staging = ["roles/storage.objectAdmin"], templates = ["roles/storage.objectViewer"], snapshots = ["roles/storage.objectViewer"] }
      registry         = ["roles/artifactregistry.reader"]
      secrets          = []
      custom           = []
      service_accounts = {}
    }
    authority = {
      project       = local.dataflow_project_roles
      topics        = {}
      subscriptions = {}
      tables        = { articles = ["roles/bigtable.reader"], stories = ["roles/bigtable.reader"], pointers = ["roles/bigtable.user"] }
      namespaced    = []
      buckets = {
        snapshots = ["roles/storage.objectCreator", "roles/storage.objectViewer"]
        staging   = ["roles/storage.objectAdmin"]
        templates = ["roles/storage.objectViewer"]
      }
      registry         = ["roles/artifactregistry.reader"]
      secrets          = []
      custom           = []
      service_accounts = {}
    }
    userclusters = {
      project          = local.dataflow_project_roles
      topics           = {}
      subscriptions    = {}
      tables           = { profiles = ["roles/bigtable.reader"], userclusters = ["roles/bigtable.user"] }
      namespaced       = []
      buckets          = { staging = ["roles/storage.objectAdmin"], templates = ["roles/storage.objectViewer"] }
      registry         = ["roles/artifactregistry.reader"]
      secrets          = []
      custom           = []
      service_accounts = {}
    }
    # Not a job: Cloud Scheduler's identity for the daily authority launch (terraform/modules/schedule). It may
    # create Dataflow jobs (dataflow.developer: project-level, Dataflow has no per-job IAM), read the Flex Template
    # specs (the launch request reads gs://<templates>/authority-<tag>.json as the caller) and act as the authority
    # account only (serviceAccountUser on that one account, so the job it launches runs with the authority grants
    # above and nothing else).
    scheduler = {
      project          = ["roles/dataflow.developer"]
      topics           = {}
      subscriptions    = {}
      tables           = {}
      namespaced       = []
      buckets          = { templates = ["roles/storage.objectViewer"] }
      registry         = []
      secrets          = []
      custom           = []
      service_accounts = { authority = ["roles/iam.serviceAccountUser"], userclusters = ["roles/iam.serviceAccountUser"] }
    }
    origin = {
      project          = ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
      topics           = { "read-events" = ["roles/pubsub.publisher"], "fetch-requests" = ["roles/pubsub.publisher"], "dead-letter-push" = ["roles/pubsub.publisher"] }
      subscriptions    = {}
      tables           = { pointers = ["roles/bigtable.reader"], feeds = ["roles/bigtable.user"], profiles = ["roles/bigtable.user"], follows = ["roles/bigtable.user"], covisit = ["roles/bigtable.reader"], userclusters = ["roles/bigtable.user"], takedowns = ["roles/bigtable.reader"] }
      namespaced       = []
      buckets          = { snapshots = ["roles/storage.objectViewer"] }
      registry         = ["roles/artifactregistry.reader"]
      secrets          = ["roles/secretmanager.secretAccessor"]
      custom           = []
      service_accounts = {}
    }
  }

  project_bindings = merge([
    for sa, g in local.grants : { for role in g.project : "${sa}/${role}" => { sa = sa, role = role } }
  ]...)

  topic_bindings = merge(flatten([
    for sa, g in local.grants : [
      for topic, roles in g.topics : { for role in roles : "${sa}/${topic}/${role}" => { sa = sa, topic = topic, role = role } }
    ]
  ])...)

  subscription_bindings = merge(flatten([
    for sa, g in local.grants : [
      for sub, roles in g.subscriptions : { for role in roles : "${sa}/${sub}/${role}" => { sa = sa, subscription = sub, role = role } }
    ]
  ])...)

  table_bindings = merge(flatten([
    for sa, g in local.grants : concat(
      [for table, roles in g.tables : { for role in roles : "${sa}/${table}/${role}" => { sa = sa, table = table, role = role } }],
      [
        for ns in var.namespaces : merge([
          for table in var.table_names : { for role in g.namespaced : "${sa}/${ns}-${table}/${role}" => { sa = sa, table = "${ns}-${table}", role = role } }
        ]...)
      ],
    )
  ])...)

  bucket_bindings = merge(flatten([
    for sa, g in local.grants : [
      for bucket, roles in g.buckets : { for role in roles : "${sa}/${bucket}/${role}" => { sa = sa, bucket = bucket, role = role } }
    ]
  ])...)

  secret_bindings = merge(flatten([
    for sa, g in local.grants : [
      for secret in var.secrets : { for role in g.secrets : "${sa}/${secret}/${role}" => { sa = sa, secret = secret, role = role } }
    ]
  ])...)

  custom_bindings = merge([
    for sa, g in local.grants : {
      for name in g.custom : "${sa}/${name}" => { sa = sa, role = google_project_iam_custom_role.custom[name].name }
    }
  ]...)

  # Roles on another account of this module (the scheduler acting as the authority job's account).
  service_account_bindings = merge(flatten([
    for sa, g in local.grants : [
      for target, roles in g.service_accounts : { for role in roles : "${sa}/${target}/${role}" => { sa = sa, target = target, role = role } }
    ]
  ])...)

  registry_bindings = merge([
    for sa, g in local.grants : { for role in g.registry : "${sa}/${role}" => { sa = sa, role = role } }
  ]...)
}

resource "google_service_account" "sa" {
  for_each = local.grants

  project      = var.project_id
  account_id   = "${var.account_prefix}-${each.key}"
  display_name = "Newsroom ${each.key}"
  description  = "${lookup(local.purposes, each.key, "Runs the Newsroom ${each.key} Dataflow job")}; least-privilege grants in terraform/modules/iam."
}

resource "google_project_iam_member" "project" {
  for_each = local.project_bindings

  project = var.project_id
  role    = each.value.role
  member  = google_service_account.sa[each.value.sa].member
}

resource "google_project_iam_custom_role" "custom" {
  for_each = local.custom_roles

  project     = var.project_id
  role_id     = "${replace(var.account_prefix, "-", "_")}_${each.key}"
  title       = each.value.title
  description = each.value.description
  permissions = each.value.permissions
}

resource "google_project_iam_member" "custom" {
  for_each = local.custom_bindings

  project = var.project_id
  role    = each.value.role
  member  = google_service_account.sa[each.value.sa].member
}

resource "google_pubsub_topic_iam_member" "topic" {
  for_each = local.topic_bindings

  project = var.project_id
  topic   = var.topics[each.value.topic]
  role    = each.value.role
  member  = google_service_account.sa[each.value.sa].member
}

resource "google_pubsub_subscription_iam_member" "subscription" {
  for_each = local.subscription_bindings

  project      = var.project_id
  subscription = var.subscriptions[each.value.subscription]
  role         = each.value.role
  member       = google_service_account.sa[each.value.sa].member
}

resource "google_bigtable_table_iam_member" "table" {
  for_each = local.table_bindings

  project  = var.project_id
  instance = var.bigtable_instance
  table    = each.value.table
  role     = each.value.role
  member   = google_service_account.sa[each.value.sa].member
}

resource "google_storage_bucket_iam_member" "bucket" {
  for_each = local.bucket_bindings

  bucket = var.buckets[each.value.bucket]
  role   = each.value.role
  member = google_service_account.sa[each.value.sa].member
}

resource "google_artifact_registry_repository_iam_member" "registry" {
  for_each = local.registry_bindings

  project    = var.project_id
  location   = var.registry_location
  repository = var.registry_repository
  role       = each.value.role
  member     = google_service_account.sa[each.value.sa].member
}

resource "google_secret_manager_secret_iam_member" "secret" {
  for_each = local.secret_bindings

  project   = var.project_id
  secret_id = each.value.secret
  role      = each.value.role
  member    = google_service_account.sa[each.value.sa].member
}

resource "google_service_account_iam_member" "service_account" {
  for_each = local.service_account_bindings

  service_account_id = google_service_account.sa[each.value.target].name
  role               = each.value.role
  member             = google_service_account.sa[each.value.sa].member
}
