variable "project_id" {
  type        = string
  description = "Project of the scheduler job and of the Dataflow job it launches. Example: newsroom-prod-123456."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits, dashes)."
  }
}

variable "region" {
  type        = string
  description = "Region of the scheduler job and of the Dataflow job (same as the worker subnet). Example: europe-west1."

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]$", var.region))
    error_message = "region must look like europe-west1."
  }
}

variable "name" {
  type        = string
  description = "Name of the scheduler job and of every Dataflow job it launches (reused: a batch job name is free again once its job has finished); also the path segment of the temp/staging files. Example: newsroom-authority."

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,62}[a-z0-9])?$", var.name))
    error_message = "Dataflow job names are lowercase letters, digits and dashes, starting with a letter."
  }
}

variable "schedule" {
  type        = string
  description = "When to launch, unix-cron (minute hour day-of-month month day-of-week) in var.time_zone. Example: 0 3 * * *."
  default     = "0 3 * * *"

  validation {
    condition     = length(split(" ", var.schedule)) == 5 && can(regex("^[0-9*,/-]+ [0-9*,/-]+ [0-9*,/?LW-]+ [0-9A-Za-z*,/-]+ [0-9A-Za-z*,/?L#-]+$", var.schedule))
    error_message = "schedule must be a five-field unix-cron expression such as \"0 3 * * *\"."
  }
}

variable "time_zone" {
  type        = string
  description = "tz database time zone the schedule is read in. Example: Etc/UTC."
  default     = "Etc/UTC"

  validation {
    condition     = can(regex("^(UTC|[A-Z][A-Za-z_+-]+(/[A-Za-z0-9_+-]+){1,2})$", var.time_zone))
    error_message = "time_zone must be a tz database name such as Etc/UTC or Europe/Paris."
  }
}

variable "enabled" {
  type        = bool
  description = "False pauses the scheduler job (kept, with its history; nothing is launched) until set back to true. Example: true."
  default     = true
}

variable "launcher_service_account_email" {
  type        = string
  description = "Account whose OAuth token the scheduler sends (iam module `scheduler`: dataflow.developer, serviceAccountUser on var.service_account_email only). Example: newsroom-scheduler@p.iam.gserviceaccount.com."

  validation {
    condition     = can(regex("@[a-z0-9-]+\\.iam\\.gserviceaccount\\.com$", var.launcher_service_account_email))
    error_message = "launcher_service_account_email must be a user-managed service account."
  }
}

variable "container_spec_gcs_path" {
  type        = string
  description = "Flex Template spec written by `gcloud dataflow flex-template build`. Example: gs://p-newsroom-templates/authority-20250101.json."

  validation {
    condition     = can(regex("^gs://[a-z0-9._-]+/.+\\.json$", var.container_spec_gcs_path))
    error_message = "container_spec_gcs_path must be a gs:// path to a .json template spec."
  }
}

variable "image" {
  type        = string
  description = "Worker image (the same image the template was built from). Example: europe-west1-docker.pkg.dev/p/newsroom/newsroom:20250101."

  validation {
    condition     = can(regex("^[a-z0-9.-]+-docker\\.pkg\\.dev/[^:@]+[:@].+$", var.image))
    error_message = "image must be an Artifact Registry image reference with a tag or digest."
  }
}

variable "parameters" {
  type        = map(string)
  description = "Template parameters of every run (names from templates/<job>/metadata.json). Example: { snapshot_bucket = \"p-newsroom-snapshots\", window_days = \"90\" }."
  default     = {}
}

variable "service_account_email" {
  type        = string
  description = "The launched job's own service account (iam module). Example: newsroom-authority@p.iam.gserviceaccount.com."

  validation {
    condition     = can(regex("@[a-z0-9-]+\\.iam\\.gserviceaccount\\.com$", var.service_account_email))
    error_message = "service_account_email must be a user-managed service account."
  }
}

variable "subnetwork" {
  type        = string
  description = "Worker subnet self link (network module); workers get no public IP. Example: https://www.googleapis.com/compute/v1/projects/p/regions/europe-west1/subnetworks/newsroom-europe-west1."
}

variable "staging_bucket" {
  type        = string
  description = "Bucket for the job's temp and staging files. Example: p-newsroom-dataflow-staging."
}

variable "max_workers" {
  type        = number
  description = "Autoscaling ceiling of each run. Example: 3."
  default     = 3

  validation {
    condition     = var.max_workers >= 1 && var.max_workers <= 1000 && floor(var.max_workers) == var.max_workers
    error_message = "max_workers is a whole number between 1 and 1000 (Dataflow's limit)."
  }
}

variable "machine_type" {
  type        = string
  description = "Worker machine type. Example: n2-standard-2."
  default     = "n2-standard-2"

  validation {
    condition     = can(regex("^[a-z][a-z0-9]*-[a-z0-9-]+$", var.machine_type))
    error_message = "machine_type must be a Compute Engine machine type such as n2-standard-2."
  }
}

variable "launcher_machine_type" {
  type        = string
  description = "Machine type of the Flex Template launcher VM (the image is large: torch and models). Example: n2-standard-2."
  default     = "n2-standard-2"

  validation {
    condition     = can(regex("^[a-z][a-z0-9]*-[a-z0-9-]+$", var.launcher_machine_type))
    error_message = "launcher_machine_type must be a Compute Engine machine type such as n2-standard-2."
  }
}

variable "attempt_deadline" {
  type        = string
  description = "How long one launch request may take (the API answers once the job is created; 15s-1800s). Example: 180s."
  default     = "180s"

  validation {
    condition     = can(regex("^[0-9]+s$", var.attempt_deadline)) && tonumber(trimsuffix(var.attempt_deadline, "s")) >= 15 && tonumber(trimsuffix(var.attempt_deadline, "s")) <= 1800
    error_message = "attempt_deadline is a duration in seconds between 15s and 1800s, such as 180s."
  }
}

variable "retry_count" {
  type        = number
  description = "Retries of a failed launch (an API error, or 409 while the previous run still holds the name). Example: 3."
  default     = 3

  validation {
    condition     = var.retry_count >= 0 && var.retry_count <= 5 && floor(var.retry_count) == var.retry_count
    error_message = "retry_count is a whole number between 0 and 5 (Cloud Scheduler's limit)."
  }
}

variable "min_backoff" {
  type        = string
  description = "Wait before the first retry, doubled up to var.max_backoff. Example: 300s."
  default     = "300s"

  validation {
    condition     = can(regex("^[0-9]+s$", var.min_backoff))
    error_message = "min_backoff is a duration in seconds such as 300s."
  }
}

variable "max_backoff" {
  type        = string
  description = "Longest wait between retries. Example: 3600s."
  default     = "3600s"

  validation {
    condition     = can(regex("^[0-9]+s$", var.max_backoff))
    error_message = "max_backoff is a duration in seconds such as 3600s."
  }
}

variable "labels" {
  type        = map(string)
  description = "Labels on every launched job (plus job = var.name). Example: { system = \"newsroom\" }."
  default     = {}
}
