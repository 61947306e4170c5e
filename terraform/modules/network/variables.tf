variable "project_id" {
  type        = string
  description = "Project that owns the network. Example: newsroom-prod-123456."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits, dashes)."
  }
}

variable "name" {
  type        = string
  description = "Name of the VPC (and prefix of its subnet, router and NAT). Example: newsroom."
  default     = "newsroom"

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$", var.name))
    error_message = "name must be a valid resource name (lowercase, digits, dashes, <= 42 characters)."
  }
}

variable "region" {
  type        = string
  description = "Region of the worker subnet, the Dataflow region. Example: europe-west1."

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]$", var.region))
    error_message = "region must look like europe-west1."
  }
}

variable "cidr" {
  type        = string
  description = "Primary range of the worker subnet. Example: 10.10.0.0/20."
  default     = "10.10.0.0/20"

  validation {
    condition     = can(cidrhost(var.cidr, 0))
    error_message = "cidr must be an IPv4 CIDR block such as 10.10.0.0/20."
  }
}
