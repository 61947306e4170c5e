variable "project_id" {
  type        = string
  description = "Project the job runs in. Example: newsroom-prod-123456."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits, dashes)."
  }
}

variable "region" {
  type        = string
  description = "Dataflow region (same as the worker subnet). Example: europe-west1."

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]$", var.region))
    error_message = "region must look like europe-west1."
  }
}

variable "name" {
  type        = string
  description = "Dataflow job name; also the path segment of its temp/staging files. Example: newsroom-stories."

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,62}[a-z0-9])?$", var.name))
    error_message = "Dataflow job names are lowercase letters, digits and dashes, starting with a letter."
  }
}

variable "container_spec_gcs_path" {
  type        = string
  description = "Flex Template spec written by `gcloud dataflow flex-template build`. Example: gs://p-newsroom-templates/stories-20250101.json."

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

variable "streaming" {
  type        = bool
  description = "True for the streaming jobs (ingest, stories): Streaming Engine and drain on delete. Example: true."
}

variable "parameters" {
  type        = map(string)
  description = "The job's own template parameters (names from templates/<job>/metadata.json). Example: { input_subscription = \"projects/p/subscriptions/stories-items-raw\" }."
  default     = {}
}

variable "bigtable_instance" {
  type        = string
  description = "Bigtable instance id (StoreOptions --bigtable_instance). Example: newsroom."
}

variable "snapshot_bucket" {
  type        = string
  description = "Snapshot bucket name (StoreOptions --snapshot_bucket). Example: p-newsroom-snapshots."
}

variable "namespace" {
  type        = string
  description = "StoreOptions --namespace; empty for production. Example: bf-2024q1."
  default     = ""

  validation {
    condition     = can(regex("^([a-z0-9][a-z0-9-]{0,20})?$", var.namespace))
    error_message = "namespace is empty or up to 21 lowercase letters, digits and dashes."
  }
}

variable "staging_bucket" {
  type        = string
  description = "Bucket for the job's temp and staging files. Example: p-newsroom-dataflow-staging."
}

variable "service_account_email" {
  type        = string
  description = "The job's own service account (iam module). Example: newsroom-stories@p.iam.gserviceaccount.com."

  validation {
    condition     = can(regex("@[a-z0-9-]+\\.iam\\.gserviceaccount\\.com$", var.service_account_email))
    error_message = "service_account_email must be a user-managed service account."
  }
}

variable "subnetwork" {
  type        = string
  description = "Worker subnet self link (network module); workers get no public IP. Example: https://www.googleapis.com/compute/v1/projects/p/regions/europe-west1/subnetworks/newsroom-europe-west1."
}

variable "num_workers" {
  type        = number
  description = "Initial workers (autoscaling floor for streaming). Example: 1."
  default     = 1

  validation {
    condition     = var.num_workers >= 1
    error_message = "num_workers must be at least 1."
  }
}

variable "max_workers" {
  type        = number
  description = "Autoscaling ceiling; also fixes the streaming job's key-range parallelism. Example: 10."
  default     = 5

  validation {
    condition     = var.max_workers >= 1 && var.max_workers <= 1000
    error_message = "max_workers must be between 1 and 1000."
  }
}

variable "machine_type" {
  type        = string
  description = "Worker machine type (the stories job holds a language's centroids in memory). Example: n2-highmem-4."
  default     = "n2-standard-4"

  validation {
    condition     = can(regex("^[a-z0-9]+-[a-z]+-[0-9]+$", var.machine_type))
    error_message = "machine_type must look like n2-standard-4."
  }
}

variable "launcher_machine_type" {
  type        = string
  description = "Machine type of the Flex Template launcher VM (the image is large: torch and models). Example: n2-standard-2."
  default     = "n2-standard-2"
}

variable "kms_key_name" {
  type        = string
  description = "Optional Cloud KMS key for the job's state (CMEK). Example: projects/p/locations/europe-west1/keyRings/r/cryptoKeys/k."
  default     = null
}

variable "labels" {
  type        = map(string)
  description = "Labels on the job. Example: { system = \"newsroom\" }."
  default     = {}
}
