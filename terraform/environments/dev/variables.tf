variable "project_id" {
  type        = string
  description = "The environment's Google Cloud project. Example: newsroom-dev-123456."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits, dashes)."
  }
}

variable "environment" {
  type        = string
  description = "dev or prod: sets deletion protection and labels. Example: dev."
  default     = "dev"

  validation {
    condition     = contains(["dev", "prod"], var.environment)
    error_message = "environment is dev or prod."
  }
}

variable "region" {
  type        = string
  description = "Region of Dataflow, Cloud Run, the buckets and the image repository. Example: europe-west1."
  default     = "europe-west1"

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]$", var.region))
    error_message = "region must look like europe-west1."
  }
}

variable "bigtable_zone" {
  type        = string
  description = "Zone of the Bigtable cluster, inside var.region. Example: europe-west1-b."
  default     = "europe-west1-b"

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]-[a-z]$", var.bigtable_zone))
    error_message = "bigtable_zone must look like europe-west1-b."
  }
}

variable "worker_cidr" {
  type        = string
  description = "Range of the Dataflow worker subnet. Example: 10.10.0.0/20."
  default     = "10.10.0.0/20"

  validation {
    condition     = can(cidrhost(var.worker_cidr, 0))
    error_message = "worker_cidr must be an IPv4 CIDR block."
  }
}

variable "image_tag" {
  type        = string
  description = "Tag of the built image (templates/Dockerfile) and of the Flex Template specs <job>-<tag>.json; null skips the jobs and the origin (first apply). Example: 20250101-1200."
  default     = null

  validation {
    condition     = var.image_tag == null ? true : can(regex("^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$", var.image_tag))
    error_message = "image_tag must be a valid Docker tag."
  }
}

variable "domains" {
  type        = list(string)
  description = "Domains the origin answers on (managed TLS certificate). Example: [\"news.example.com\"]."

  validation {
    condition     = length(var.domains) >= 1
    error_message = "At least one domain is needed for the managed certificate."
  }
}

variable "backfill_namespaces" {
  type        = list(string)
  description = "Analyst namespaces with their own tables (<namespace>-<table>) that the backfill account may write. Example: [\"bf-2024q1\"]."
  default     = []

  validation {
    condition     = alltrue([for ns in var.backfill_namespaces : can(regex("^[a-z0-9][a-z0-9-]{0,20}$", ns))])
    error_message = "Namespaces are up to 21 lowercase letters, digits and dashes."
  }
}

variable "snapshot_delete_after_days" {
  type        = number
  description = "Delete snapshot objects after this many days, or null to keep them. Example: 90."
  default     = null
}

variable "bigtable_min_nodes" {
  type        = number
  description = "Bigtable autoscaling floor. Example: 1."
  default     = 1
}

variable "bigtable_max_nodes" {
  type        = number
  description = "Bigtable autoscaling ceiling. Example: 3."
  default     = 3
}

variable "ingest_max_workers" {
  type        = number
  description = "Autoscaling ceiling of the ingest job. Example: 5."
  default     = 3
}

variable "ingest_machine_type" {
  type        = string
  description = "Worker machine type of the ingest job. Example: n2-standard-2."
  default     = "n2-standard-2"
}

variable "stories_max_workers" {
  type        = number
  description = "Autoscaling ceiling of the stories job. Example: 10."
  default     = 3
}

variable "stories_machine_type" {
  type        = string
  description = "Worker machine type of the stories job (a language's centroids in memory). Example: n2-highmem-4."
  default     = "n2-highmem-4"
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

variable "origin_min_instances" {
  type        = number
  description = "Warm origin instances. Example: 1."
  default     = 1
}

variable "origin_max_instances" {
  type        = number
  description = "Origin instance ceiling. Example: 10."
  default     = 10
}

variable "origin_secret_env" {
  type        = map(string)
  description = "Origin environment variable -> Secret Manager secret id (created beforehand): the For you token key, the cursor key and the publishers' ping keys (JSON). Example: { NEWSROOM_TOKEN_SECRET = \"newsroom-token-secret\", NEWSROOM_CURSOR_SECRET = \"newsroom-cursor-secret\", NEWSROOM_PING_KEYS = \"newsroom-ping-keys\" }."
  default     = {}
}
