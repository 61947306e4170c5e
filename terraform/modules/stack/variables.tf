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
  description = "dev or prod: sets deletion protection, force_destroy of the buckets, and labels. Example: prod."

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

  validation {
    condition     = var.bigtable_min_nodes >= 1 && floor(var.bigtable_min_nodes) == var.bigtable_min_nodes
    error_message = "bigtable_min_nodes is a whole number >= 1."
  }
}

variable "bigtable_max_nodes" {
  type        = number
  description = "Bigtable autoscaling ceiling (>= bigtable_min_nodes, checked by the bigtable module). Example: 3."
  default     = 3

  validation {
    condition     = var.bigtable_max_nodes >= 1 && var.bigtable_max_nodes <= 1000 && floor(var.bigtable_max_nodes) == var.bigtable_max_nodes
    error_message = "bigtable_max_nodes is a whole number between 1 and 1000."
  }
}

variable "ingest_max_workers" {
  type        = number
  description = "Autoscaling ceiling of the ingest job. Example: 5."
  default     = 3

  validation {
    condition     = var.ingest_max_workers >= 1 && var.ingest_max_workers <= 1000 && floor(var.ingest_max_workers) == var.ingest_max_workers
    error_message = "ingest_max_workers is a whole number between 1 and 1000 (Dataflow's limit)."
  }
}

variable "ingest_machine_type" {
  type        = string
  description = "Worker machine type of the ingest job. Example: n2-standard-2."
  default     = "n2-standard-2"

  validation {
    condition     = can(regex("^[a-z][a-z0-9]*-[a-z0-9-]+$", var.ingest_machine_type))
    error_message = "ingest_machine_type must be a Compute Engine machine type such as n2-standard-2."
  }
}

variable "stories_max_workers" {
  type        = number
  description = "Autoscaling ceiling of the stories job. Example: 10."
  default     = 3

  validation {
    condition     = var.stories_max_workers >= 1 && var.stories_max_workers <= 1000 && floor(var.stories_max_workers) == var.stories_max_workers
    error_message = "stories_max_workers is a whole number between 1 and 1000 (Dataflow's limit)."
  }
}

variable "stories_machine_type" {
  type        = string
  description = "Worker machine type of the stories job (a language's centroids in memory). Example: n2-highmem-4."
  default     = "n2-highmem-4"

  validation {
    condition     = can(regex("^[a-z][a-z0-9]*-[a-z0-9-]+$", var.stories_machine_type))
    error_message = "stories_machine_type must be a Compute Engine machine type such as n2-standard-2."
  }
}

variable "covisit_max_workers" {
  type        = number
  description = "Autoscaling ceiling of the co-visitation job. Example: 3."
  default     = 2

  validation {
    condition     = var.covisit_max_workers >= 1 && var.covisit_max_workers <= 1000 && floor(var.covisit_max_workers) == var.covisit_max_workers
    error_message = "covisit_max_workers is a whole number between 1 and 1000 (Dataflow's limit)."
  }
}

variable "covisit_machine_type" {
  type        = string
  description = "Worker machine type of the co-visitation job (per-reader and per-story state). Example: n2-standard-2."
  default     = "n2-standard-2"

  validation {
    condition     = can(regex("^[a-z][a-z0-9]*-[a-z0-9-]+$", var.covisit_machine_type))
    error_message = "covisit_machine_type must be a Compute Engine machine type such as n2-standard-2."
  }
}

variable "covisit_parameters" {
  type        = map(string)
  description = "Extra template parameters of the co-visitation job (templates/covisit/metadata.json). Example: { window_hours = \"6\" }."
  default     = {}
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

variable "authority_schedule" {
  type        = string
  description = "When Cloud Scheduler launches the authority job, unix-cron in authority_time_zone (validated by the schedule module). Example: 0 3 * * *."
  default     = "0 3 * * *"
}

variable "authority_time_zone" {
  type        = string
  description = "Time zone of authority_schedule (validated by the schedule module). Example: Etc/UTC."
  default     = "Etc/UTC"
}

variable "authority_schedule_enabled" {
  type        = bool
  description = "False pauses the daily authority launch (the scheduler job stays, nothing runs). Example: true."
  default     = true
}

variable "authority_max_workers" {
  type        = number
  description = "Autoscaling ceiling of each authority run. Example: 3."
  default     = 3

  validation {
    condition     = var.authority_max_workers >= 1 && var.authority_max_workers <= 1000 && floor(var.authority_max_workers) == var.authority_max_workers
    error_message = "authority_max_workers is a whole number between 1 and 1000 (Dataflow's limit)."
  }
}

variable "authority_machine_type" {
  type        = string
  description = "Worker machine type of the authority job. Example: n2-standard-2."
  default     = "n2-standard-2"

  validation {
    condition     = can(regex("^[a-z][a-z0-9]*-[a-z0-9-]+$", var.authority_machine_type))
    error_message = "authority_machine_type must be a Compute Engine machine type such as n2-standard-2."
  }
}

variable "authority_parameters" {
  type        = map(string)
  description = "Extra or overriding template parameters of the scheduled authority job (templates/authority/metadata.json). Example: { window_days = \"30\" }."
  default     = {}
}

variable "origin_min_instances" {
  type        = number
  description = "Warm origin instances (validated by the origin module: >= 1). Example: 1."
  default     = 1
}

variable "origin_max_instances" {
  type        = number
  description = "Origin instance ceiling (validated by the origin module: 1-1000). Example: 10."
  default     = 10
}

variable "origin_secret_env" {
  type        = map(string)
  description = "Origin environment variable -> Secret Manager secret id (created beforehand, README \"Operations\" 1c): the For you token key and the cursor key (both required: the origin refuses to start without them), and optionally the publishers' ping keys (JSON). Example: { NEWSROOM_TOKEN_SECRET = \"newsroom-token-secret\", NEWSROOM_CURSOR_SECRET = \"newsroom-cursor-secret\", NEWSROOM_PING_KEYS = \"newsroom-ping-keys\" }."

  validation {
    condition     = contains(keys(var.origin_secret_env), "NEWSROOM_TOKEN_SECRET") && contains(keys(var.origin_secret_env), "NEWSROOM_CURSOR_SECRET")
    error_message = "origin_secret_env must name the secrets of NEWSROOM_TOKEN_SECRET and NEWSROOM_CURSOR_SECRET."
  }

  validation {
    condition     = alltrue([for k in keys(var.origin_secret_env) : contains(["NEWSROOM_TOKEN_SECRET", "NEWSROOM_CURSOR_SECRET", "NEWSROOM_PING_KEYS"], k)])
    error_message = "origin_secret_env keys are NEWSROOM_TOKEN_SECRET, NEWSROOM_CURSOR_SECRET and NEWSROOM_PING_KEYS (a misspelt name would silently not reach the origin)."
  }

  validation {
    condition     = alltrue([for v in values(var.origin_secret_env) : can(regex("^[A-Za-z0-9_-]{1,255}$", v))])
    error_message = "Secret ids are 1-255 letters, digits, dashes and underscores."
  }
}

variable "notification_channels" {
  type        = list(string)
  description = "Cloud Monitoring notification channels every alert policy notifies (created beforehand, e.g. `gcloud beta monitoring channels create`); [] records incidents without notifying. Example: [\"projects/newsroom-prod-123456/notificationChannels/1234567890\"]."
  default     = []

  validation {
    condition     = alltrue([for c in var.notification_channels : can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/notificationChannels/[0-9]+$", c))])
    error_message = "Notification channels are full ids: projects/<project>/notificationChannels/<number>."
  }
}

variable "userclusters_schedule" {
  type        = string
  description = "When Cloud Scheduler launches the daily user-cluster job, unix-cron in authority_time_zone (validated by the schedule module). Example: 30 4 * * *."
  default     = "30 4 * * *"
}

variable "userclusters_schedule_enabled" {
  type        = bool
  description = "False pauses the daily user-cluster launch (For you's readers_like_you fades out within two days). Example: true."
  default     = true
}

variable "userclusters_max_workers" {
  type        = number
  description = "Autoscaling ceiling of each user-cluster run. Example: 3."
  default     = 3

  validation {
    condition     = var.userclusters_max_workers >= 1 && var.userclusters_max_workers <= 1000 && floor(var.userclusters_max_workers) == var.userclusters_max_workers
    error_message = "userclusters_max_workers is a whole number between 1 and 1000 (Dataflow's limit)."
  }
}

variable "userclusters_parameters" {
  type        = map(string)
  description = "Extra or overriding template parameters of the scheduled user-cluster job (templates/userclusters/metadata.json). Example: { min_members = \"10\" }."
  default     = {}
}
