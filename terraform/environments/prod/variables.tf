# The operator's values (terraform.tfvars), passed to terraform/modules/stack, which validates them. Identical in
# every environment on purpose (tests/deploy/test_terraform.py checks it): what differs is in main.tf.

variable "project_id" {
  type        = string
  description = "The environment's Google Cloud project. Example: newsroom-dev-123456."
}

variable "region" {
  type        = string
  description = "Region of Dataflow, Cloud Run, the buckets and the image repository. Example: europe-west1."
  default     = "europe-west1"
}

variable "bigtable_zone" {
  type        = string
  description = "Zone of the Bigtable cluster, inside var.region. Example: europe-west1-b."
  default     = "europe-west1-b"
}

variable "domains" {
  type        = list(string)
  description = "Domains the origin answers on (managed TLS certificate). Example: [\"news.example.com\"]."
}

variable "image_tag" {
  type        = string
  description = "Tag of the built image (templates/Dockerfile) and of the Flex Template specs <job>-<tag>.json; null skips the jobs and the origin (first apply). Example: 20250101-1200."
  default     = null
}

variable "backfill_namespaces" {
  type        = list(string)
  description = "Analyst namespaces with their own tables (<namespace>-<table>) that the backfill account may write. Example: [\"bf-2024q1\"]."
  default     = []
}

variable "ingest_parameters" {
  type        = map(string)
  description = "Extra template parameters of the ingest job (templates/ingest/metadata.json). Example: { feeds = \"gs://b/feeds.json\" }."
  default     = {}
}

variable "stories_parameters" {
  type        = map(string)
  description = "Extra template parameters of the stories job (templates/stories/metadata.json). Example: {}."
  default     = {}
}

variable "origin_secret_env" {
  type        = map(string)
  description = "Origin environment variable -> Secret Manager secret id (created beforehand, README \"Operations\" 1c): the For you token key and the cursor key (both required: the origin refuses to start without them), and optionally the publishers' ping keys (JSON). Example: { NEWSROOM_TOKEN_SECRET = \"newsroom-token-secret\", NEWSROOM_CURSOR_SECRET = \"newsroom-cursor-secret\", NEWSROOM_PING_KEYS = \"newsroom-ping-keys\" }."
}

variable "notification_channels" {
  type        = list(string)
  description = "Cloud Monitoring notification channels every alert policy notifies (created beforehand, e.g. `gcloud beta monitoring channels create`); [] records incidents without notifying. Example: [\"projects/newsroom-prod-123456/notificationChannels/1234567890\"]."
  default     = []
}

variable "authority_schedule" {
  type        = string
  description = "When Cloud Scheduler launches the daily authority job, unix-cron in authority_time_zone. Example: 0 3 * * *."
  default     = "0 3 * * *"
}

variable "authority_time_zone" {
  type        = string
  description = "Time zone of authority_schedule. Example: Etc/UTC."
  default     = "Etc/UTC"
}

variable "authority_schedule_enabled" {
  type        = bool
  description = "False pauses the daily authority launch (the scheduler job stays, nothing runs). Example: true."
  default     = true
}
