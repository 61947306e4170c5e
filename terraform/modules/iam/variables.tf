variable "project_id" {
  type        = string
  description = "Project that owns the service accounts. Example: newsroom-prod-123456."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits, dashes)."
  }
}

variable "account_prefix" {
  type        = string
  description = "Prefix of the service account ids (<prefix>-ingest, -stories, -backfill, -covisit, -authority, -origin). Example: newsroom."
  default     = "newsroom"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{2,20}$", var.account_prefix))
    error_message = "account_prefix is 3-21 lowercase letters, digits and dashes (account ids are at most 30 characters)."
  }
}

variable "topics" {
  type        = map(string)
  description = "Topic key -> topic name as created, from the pubsub module (topic_names). Example: { \"items-raw\" = \"items-raw\" }."
}

variable "subscriptions" {
  type        = map(string)
  description = "Subscription key -> subscription name as created, from the pubsub module. Example: { \"stories-items-raw\" = \"stories-items-raw\" }."
}

variable "buckets" {
  type        = map(string)
  description = "Bucket key (snapshots, staging, templates, backfill) -> bucket name, from the storage module."

  validation {
    condition     = alltrue([for k in ["snapshots", "staging", "templates", "backfill"] : contains(keys(var.buckets), k)])
    error_message = "buckets must name the snapshots, staging, templates and backfill buckets."
  }
}

variable "bigtable_instance" {
  type        = string
  description = "Bigtable instance id, from the bigtable module. Example: newsroom."
}

variable "table_names" {
  type        = list(string)
  description = "Production table names (schemas/tables.py TABLES keys); namespaced copies are <namespace>-<table>. Example: [\"articles\", \"stories\"]."
}

variable "namespaces" {
  type        = list(string)
  description = "Analyst namespaces whose tables the backfill account may write. Example: [\"bf-2024q1\"]."
  default     = []

  validation {
    condition     = alltrue([for ns in var.namespaces : can(regex("^[a-z0-9][a-z0-9-]{0,20}$", ns))])
    error_message = "Namespaces are up to 21 lowercase letters, digits and dashes."
  }
}

variable "registry_location" {
  type        = string
  description = "Artifact Registry location of the image repository. Example: europe-west1."
}

variable "registry_repository" {
  type        = string
  description = "Artifact Registry repository id holding the Newsroom image. Example: newsroom."
}

variable "secrets" {
  type        = list(string)
  description = "Secret Manager secret ids the origin reads (token and cursor keys). Example: [\"newsroom-token-key\"]."
  default     = []
}
