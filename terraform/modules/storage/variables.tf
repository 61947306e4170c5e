variable "project_id" {
  type        = string
  description = "Project that owns the buckets. Example: newsroom-prod-123456."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits, dashes)."
  }
}

variable "bucket_prefix" {
  type        = string
  description = "Globally unique prefix of the bucket names (<prefix>-snapshots, ...). Example: newsroom-prod-123456-newsroom."

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{2,44}$", var.bucket_prefix))
    error_message = "bucket_prefix is 3-45 lowercase letters, digits and dashes (bucket names are at most 63 characters)."
  }
}

variable "location" {
  type        = string
  description = "Bucket location, the Dataflow region or a multi-region containing it. Example: EUROPE-WEST1."

  validation {
    condition     = can(regex("^[A-Za-z0-9-]+$", var.location))
    error_message = "location is a region or multi-region name such as EUROPE-WEST1 or EU."
  }
}

variable "staging_delete_after_days" {
  type        = number
  description = "Days after which Dataflow staging/temp files are deleted. Example: 7."
  default     = 7

  validation {
    condition     = var.staging_delete_after_days >= 1
    error_message = "staging_delete_after_days must be at least 1."
  }
}

variable "backfill_delete_after_days" {
  type        = number
  description = "Days after which backfill outputs are deleted. Example: 30."
  default     = 30

  validation {
    condition     = var.backfill_delete_after_days >= 1
    error_message = "backfill_delete_after_days must be at least 1."
  }
}

variable "snapshot_nearline_after_days" {
  type        = number
  description = "Days after which snapshot objects move to NEARLINE. Example: 30."
  default     = 30

  validation {
    condition     = var.snapshot_nearline_after_days >= 30
    error_message = "NEARLINE has a 30-day minimum storage duration: use 30 or more."
  }
}

variable "snapshot_delete_after_days" {
  type        = number
  description = "Days after which snapshot objects are deleted, or null to keep them (a quiet page's live version may be old). Example: 365."
  default     = null

  validation {
    condition     = var.snapshot_delete_after_days == null ? true : var.snapshot_delete_after_days >= 90
    error_message = "snapshot_delete_after_days must be null or at least 90 (rollback needs history)."
  }
}

variable "force_destroy" {
  type        = bool
  description = "Allow terraform destroy to delete non-empty staging and backfill buckets (never snapshots or templates). Example: true in dev."
  default     = false
}

variable "kms_key_name" {
  type        = string
  description = "Optional Cloud KMS key for default object encryption (CMEK); null uses Google-managed keys. Example: projects/p/locations/europe-west1/keyRings/r/cryptoKeys/k."
  default     = null
}

variable "labels" {
  type        = map(string)
  description = "Labels on every bucket. Example: { system = \"newsroom\" }."
  default     = {}
}

variable "registry_location" {
  type        = string
  description = "Artifact Registry location for the image repository, the Dataflow region. Example: europe-west1."

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]$", var.registry_location))
    error_message = "registry_location must be a region such as europe-west1."
  }
}

variable "registry_repository" {
  type        = string
  description = "Artifact Registry repository id for the Newsroom image. Example: newsroom."
  default     = "newsroom"

  validation {
    condition     = can(regex("^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$", var.registry_repository))
    error_message = "registry_repository is lowercase letters, digits and dashes."
  }
}
