# Newsroom, one environment: every module wired together. terraform/environments/dev and prod call this module
# with their few differing values (sizes, protection, state prefix); everything else is here, once. Two applies
# (README "Operations"):
#   1. without image_tag: APIs, network, buckets, image repository, Pub/Sub, Bigtable, service accounts;
#   2. after the image and the Flex Templates are built: with image_tag (and template paths), the streaming jobs
#      (ingest, stories), the origin behind the CDN, the alert policies and dashboard that watch them, and the daily
#      Cloud Scheduler launch of the batch authority job. The backfill job is launched on demand by analysts with
#      `gcloud dataflow flex-template run`, not kept running by Terraform.

locals {
  labels = { system = "newsroom", env = var.environment }

  # Names of the streaming jobs and of the origin service (the monitoring module watches them by name), and of the
  # scheduled authority job (its scheduler job and every run it launches).
  names = { ingest = "newsroom-ingest", stories = "newsroom-stories", covisit = "newsroom-covisit", origin = "newsroom-origin", authority = "newsroom-authority", userclusters = "newsroom-userclusters" }

  # schemas/tables.py TOPICS (topic -> message type), as topic -> Avro schema file stem (schemas/avro/<stem>.avsc).
  # tests/deploy/test_terraform.py checks this map against TOPICS and the schemas' record names.
  topics = {
    "items-raw"      = "raw_item"
    "articles"       = "article"
    "story-changes"  = "story_change"
    "fetch-requests" = "fetch_request"
    "read-events"    = "read_event"
    "dead-letter"    = "dead_letter"
    "breaking"       = "breaking"
  }

  # schemas/tables.py TABLES (table -> family -> max versions) and the ages its docstring gives.
  # tests/deploy/test_terraform.py checks this map against TABLES.
  tables = {
    articles     = { m = { max_versions = 1 }, d = { max_versions = 1 }, v = { max_versions = 1 } }
    stories      = { m = { max_versions = 1 }, mem = { max_versions = 1 }, lnk = { max_versions = 1 } }
    pointers     = { p = { max_versions = 1 }, h = { max_versions = 1 } }
    feeds        = { r = { max_versions = 1 }, s = { max_versions = 1 } }
    profiles     = { p = { max_versions = 1 }, e = { max_versions = 1, max_age = "720h" } }
    covisit      = { m = { max_versions = 1 }, n = { max_versions = 1 } }
    audit        = { m = { max_versions = 1 } }
    controls     = { c = { max_versions = 1, max_age = "720h" } }
    takedowns    = { t = { max_versions = 1 } }
    follows      = { c = { max_versions = 1 } }
    userclusters = { u = { max_versions = 1, max_age = "72h" }, m = { max_versions = 1, max_age = "168h" }, n = { max_versions = 1, max_age = "168h" }, c = { max_versions = 1, max_age = "4320h" } }
  }

  # Who reads which topic: stories reads raw items, ingest reads fetch requests (pushes, pings, burst priority).
  # Named <reader>-<topic>; "stories-items-raw" is also the stories job's --input_subscription default, so a template
  # launched by hand without that parameter reads the same subscription.
  # items-raw is published with an ordering key per canonical URL: with ordering on, the versions of one article
  # reach the stories job in the order they were fetched (the article store still keeps the newest by modified
  # time and fetch time, whatever order they arrive in). Turning it on replaces the subscription: README
  # "Operations" gives the seek that replays what was published meanwhile.
  subscriptions = {
    "stories-items-raw"     = { topic = "items-raw", ack_deadline_seconds = 120, enable_message_ordering = true }
    "ingest-fetch-requests" = { topic = "fetch-requests", ack_deadline_seconds = 60 }
    "covisit-read-events"   = { topic = "read-events", ack_deadline_seconds = 60 }
  }

  services = [
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
  ]

  # The jobs' own template parameters (templates/<job>/metadata.json; tests/deploy checks the names). StoreOptions
  # parameters (backend, bigtable_instance, snapshot_bucket, namespace) come from the dataflow module.
  ingest_parameters = {
    feeds                      = "table"
    fetch_request_topic        = module.pubsub.topic_names["fetch-requests"]
    fetch_request_subscription = module.pubsub.subscription_names["ingest-fetch-requests"]
    items_topic                = module.pubsub.topic_names["items-raw"]
    dead_letter_topic          = module.pubsub.topic_names["dead-letter-ingest"]
    websub_callback_base       = "https://${var.domains[0]}"
  }

  # Names as created (the pubsub module adds no namespace here; the job adds --namespace, empty in production).
  # The job routes the dead letters of all its stages (articles, stories, editions) to one topic: its stage's.
  # Breaking records go to the breaking topic (consumers subscribe to it); the pages newly showing a Breaking story
  # are purged on the origin's URL map (Cloud CDN invalidation; the stories account holds the custom role).
  stories_parameters = {
    input_subscription = module.pubsub.subscription_names["stories-items-raw"]
    dead_letter_topic  = module.pubsub.topic_names["dead-letter-stories"]
    fetch_topic        = module.pubsub.topic_names["fetch-requests"]
    breaking_topic     = module.pubsub.topic_names["breaking"]
    cdn_url_map        = local.deploy ? module.origin[0].url_map : null
  }

  # The co-visitation job reads the read events the origin publishes and writes the covisit table.
  covisit_parameters = {
    input_subscription = module.pubsub.subscription_names["covisit-read-events"]
    dead_letter_topic  = module.pubsub.topic_names["dead-letter-covisit"]
  }

  # The daily authority job's parameters (templates/authority/metadata.json), as README "Operations" 11 launches it
  # by hand; the store parameters are given here (no dataflow module in between).
  authority_parameters = {
    bigtable_instance = module.bigtable.instance_id
    snapshot_bucket   = module.storage.snapshots_bucket
    window_days       = "90"
  }

  # The daily user-cluster job's parameters (templates/userclusters/metadata.json; p, q and the thresholds keep the
  # template's defaults, transforms/userclusters/minhash.py says why).
  userclusters_parameters = {
    bigtable_instance = module.bigtable.instance_id
    snapshot_bucket   = module.storage.snapshots_bucket
  }

  image  = var.image_tag == null ? null : "${module.storage.image_repository_url}/newsroom:${var.image_tag}"
  deploy = var.image_tag != null
}

resource "google_project_service" "api" {
  for_each = toset(local.services)

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

module "network" {
  source = "../network"

  project_id = var.project_id
  region     = var.region
  name       = "newsroom"
  cidr       = var.worker_cidr

  depends_on = [google_project_service.api]
}

module "storage" {
  source = "../storage"

  project_id                 = var.project_id
  bucket_prefix              = "${var.project_id}-newsroom"
  location                   = upper(var.region)
  registry_location          = var.region
  force_destroy              = var.environment == "dev"
  snapshot_delete_after_days = var.snapshot_delete_after_days
  labels                     = local.labels

  depends_on = [google_project_service.api]
}

module "pubsub" {
  source = "../pubsub"

  project_id    = var.project_id
  schema_dir    = "${path.module}/../../../schemas/avro"
  topics        = local.topics
  subscriptions = local.subscriptions
  labels        = local.labels

  depends_on = [google_project_service.api]
}

module "bigtable" {
  source = "../bigtable"

  project_id          = var.project_id
  instance_id         = "newsroom"
  zone                = var.bigtable_zone
  tables              = local.tables
  namespaces          = var.backfill_namespaces
  min_nodes           = var.bigtable_min_nodes
  max_nodes           = var.bigtable_max_nodes
  deletion_protection = var.environment == "prod"
  labels              = local.labels

  depends_on = [google_project_service.api]
}

module "iam" {
  source = "../iam"

  project_id          = var.project_id
  account_prefix      = "newsroom"
  topics              = module.pubsub.topic_names
  subscriptions       = module.pubsub.subscription_names
  buckets             = module.storage.bucket_names
  bigtable_instance   = module.bigtable.instance_id
  table_names         = keys(local.tables)
  namespaces          = var.backfill_namespaces
  registry_location   = var.region
  registry_repository = module.storage.registry_repository
  secrets             = values(var.origin_secret_env)
}

# The three streaming jobs (ingest, stories, co-visitation) have one shape: a Flex Template launched on Streaming
# Engine from the image of this tag, under the job's own service account, with the job's ceiling, machine and
# parameters (the defaults above merged with the environment's overrides).
locals {
  streaming_jobs = {
    ingest  = { max_workers = var.ingest_max_workers, machine_type = var.ingest_machine_type, parameters = merge(local.ingest_parameters, var.ingest_parameters) }
    stories = { max_workers = var.stories_max_workers, machine_type = var.stories_machine_type, parameters = merge(local.stories_parameters, var.stories_parameters) }
    covisit = { max_workers = var.covisit_max_workers, machine_type = var.covisit_machine_type, parameters = merge(local.covisit_parameters, var.covisit_parameters) }
  }
}

module "streaming_job" {
  source   = "../dataflow"
  for_each = local.deploy ? local.streaming_jobs : {}

  project_id              = var.project_id
  region                  = var.region
  name                    = local.names[each.key]
  streaming               = true
  container_spec_gcs_path = "gs://${module.storage.templates_bucket}/${each.key}-${var.image_tag}.json"
  image                   = local.image
  service_account_email   = module.iam.emails[each.key]
  subnetwork              = module.network.subnetwork
  staging_bucket          = module.storage.staging_bucket
  bigtable_instance       = module.bigtable.instance_id
  snapshot_bucket         = module.storage.snapshots_bucket
  num_workers             = 1
  max_workers             = each.value.max_workers
  machine_type            = each.value.machine_type
  parameters              = each.value.parameters
  labels                  = local.labels
}

# State written before the jobs were one for_each block: the running jobs keep their addresses (no drain/relaunch).
moved {
  from = module.ingest[0]
  to   = module.streaming_job["ingest"]
}

moved {
  from = module.stories[0]
  to   = module.streaming_job["stories"]
}

moved {
  from = module.covisit[0]
  to   = module.streaming_job["covisit"]
}

# The batch authority job (README "Operations" 11), launched daily by Cloud Scheduler from its Flex Template of
# this tag (templates bucket, authority-<tag>.json as built by deploy step 1f), as the authority account, by the
# scheduler account. Terraform keeps the timetable, not the runs.
module "authority_schedule" {
  source = "../schedule"
  count  = local.deploy ? 1 : 0

  project_id                     = var.project_id
  region                         = var.region
  name                           = local.names.authority
  schedule                       = var.authority_schedule
  time_zone                      = var.authority_time_zone
  enabled                        = var.authority_schedule_enabled
  launcher_service_account_email = module.iam.emails["scheduler"]
  container_spec_gcs_path        = "gs://${module.storage.templates_bucket}/authority-${var.image_tag}.json"
  image                          = local.image
  parameters                     = merge(local.authority_parameters, var.authority_parameters)
  service_account_email          = module.iam.emails["authority"]
  subnetwork                     = module.network.subnetwork
  staging_bucket                 = module.storage.staging_bucket
  max_workers                    = var.authority_max_workers
  machine_type                   = var.authority_machine_type
  labels                         = local.labels

  depends_on = [google_project_service.api]
}

# The batch user-cluster job (For you's "readers like you"), launched daily like the authority job, from its Flex
# Template of this tag (userclusters-<tag>.json), as the userclusters account. The origin ignores memberships older
# than two days, so a missed run costs nothing and a paused schedule fades the source out.
module "userclusters_schedule" {
  source = "../schedule"
  count  = local.deploy ? 1 : 0

  project_id                     = var.project_id
  region                         = var.region
  name                           = local.names.userclusters
  schedule                       = var.userclusters_schedule
  time_zone                      = var.authority_time_zone
  enabled                        = var.userclusters_schedule_enabled
  launcher_service_account_email = module.iam.emails["scheduler"]
  container_spec_gcs_path        = "gs://${module.storage.templates_bucket}/userclusters-${var.image_tag}.json"
  image                          = local.image
  parameters                     = merge(local.userclusters_parameters, var.userclusters_parameters)
  service_account_email          = module.iam.emails["userclusters"]
  subnetwork                     = module.network.subnetwork
  staging_bucket                 = module.storage.staging_bucket
  max_workers                    = var.userclusters_max_workers
  machine_type                   = var.authority_machine_type
  labels                         = local.labels

  depends_on = [google_project_service.api]
}

module "origin" {
  source = "../origin"
  count  = local.deploy ? 1 : 0

  project_id            = var.project_id
  region                = var.region
  name                  = local.names.origin
  image                 = local.image
  service_account_email = module.iam.emails["origin"]
  domains               = var.domains
  min_instances         = var.origin_min_instances
  max_instances         = var.origin_max_instances
  serve_args = [
    "--backend=gcp",
    "--project=${var.project_id}",
    "--bigtable_instance=${module.bigtable.instance_id}",
    "--snapshot_bucket=${module.storage.snapshots_bucket}",
  ]
  # The origin's settings that are not store flags, as environment variables (serving/__init__.py reads NEWSROOM_*
  # from the environment): the topics it publishes to, named as Terraform created them.
  env = {
    GOOGLE_CLOUD_PROJECT            = var.project_id
    NEWSROOM_FETCH_TOPIC            = module.pubsub.topic_names["fetch-requests"]
    NEWSROOM_PUSH_DEAD_LETTER_TOPIC = module.pubsub.topic_names["dead-letter-push"]
    # serving/http/telemetry.py: JSON log lines with severity and trace; metrics to Cloud Monitoring (metricWriter role)
    NEWSROOM_LOG_FORMAT       = "json"
    NEWSROOM_METRICS_EXPORTER = "gcp"
  }
  # NEWSROOM_TOKEN_SECRET and NEWSROOM_CURSOR_SECRET (required by the variable's validation), NEWSROOM_PING_KEYS.
  secret_env          = var.origin_secret_env
  deletion_protection = var.environment == "prod"
  labels              = local.labels

  depends_on = [google_project_service.api]
}

# Alert policies and the dashboard (README "Operations" / Alerts), with the jobs and the origin they watch.
module "monitoring" {
  source = "../monitoring"
  count  = local.deploy ? 1 : 0

  project_id            = var.project_id
  notification_channels = var.notification_channels
  ingest_job            = local.names.ingest
  stories_job           = local.names.stories
  covisit_job           = local.names.covisit
  authority_job         = local.names.authority
  userclusters_job      = local.names.userclusters
  origin_service        = local.names.origin
  labels                = local.labels

  depends_on = [google_project_service.api]
}
