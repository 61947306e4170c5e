variable "project_id" {
  type        = string
  description = "Project that owns the Bigtable instance. Example: newsroom-prod-123456."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits, dashes)."
  }
}

variable "instance_id" {
  type        = string
  description = "Bigtable instance id, the jobs' --bigtable_instance. Example: newsroom."
  default     = "newsroom"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{5,32}$", var.instance_id))
    error_message = "instance_id is 6-33 lowercase letters, digits and dashes, starting with a letter."
  }
}

variable "zone" {
  type        = string
  description = "Zone of the instance's single cluster (close to the Dataflow region). Example: europe-west1-b."

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]-[a-z]$", var.zone))
    error_message = "zone must look like europe-west1-b."
  }
}

variable "tables" {
  type = map(map(object({
    max_versions = number
    max_age      = optional(string)
  })))
  description = <<-EOT
    Table -> column family -> GC rule, mirroring schemas/tables.py TABLES (max versions) and its docstring (ages).
    Example: { pointers = { p = { max_versions = 1 }, h = { max_versions = 1 } } }.
  EOT

  validation {
    condition = alltrue(flatten([
      for t, fams in var.tables : [
        for f, r in fams : r.max_versions >= 1 && (r.max_age == null || can(regex("^[0-9]+h$", r.max_age)))
      ]
    ]))
    error_message = "max_versions must be >= 1 and max_age, when set, a duration in hours such as 720h."
  }
}

variable "namespaces" {
  type        = list(string)
  description = "Analyst namespaces that get their own copy of every table (<namespace>-<table>). Example: [\"bf-2024q1\"]."
  default     = []

  validation {
    condition     = alltrue([for ns in var.namespaces : can(regex("^[a-z0-9][a-z0-9-]{0,20}$", ns))])
    error_message = "Namespaces are up to 21 lowercase letters, digits and dashes (stores.StoreConfig)."
  }
}

variable "min_nodes" {
  type        = number
  description = "Autoscaling floor of the cluster. Example: 1."
  default     = 1

  validation {
    condition     = var.min_nodes >= 1
    error_message = "min_nodes must be at least 1."
  }
}

variable "max_nodes" {
  type        = number
  description = "Autoscaling ceiling of the cluster. Example: 5."
  default     = 3

  validation {
    condition     = var.max_nodes >= 1 && var.max_nodes <= 100
    error_message = "max_nodes must be between 1 and 100."
  }
}

variable "cpu_target" {
  type        = number
  description = "Target CPU utilisation (percent) the autoscaler keeps. Example: 60."
  default     = 60

  validation {
    condition     = var.cpu_target >= 10 && var.cpu_target <= 80
    error_message = "cpu_target must be between 10 and 80."
  }
}

variable "deletion_protection" {
  type        = bool
  description = "Refuse to destroy the instance and production tables. Example: true (prod), false (dev)."
  default     = true
}

variable "kms_key_name" {
  type        = string
  description = "Optional Cloud KMS key for the cluster (CMEK); null uses Google-managed keys. Example: projects/p/locations/europe-west1/keyRings/r/cryptoKeys/k."
  default     = null
}

variable "labels" {
  type        = map(string)
  description = "Labels on the instance. Example: { system = \"newsroom\" }."
  default     = {}
}
