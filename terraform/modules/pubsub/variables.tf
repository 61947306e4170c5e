variable "project_id" {
  type        = string
  description = "Project that owns the topics, schemas and subscriptions. Example: newsroom-prod-123456."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits, dashes)."
  }
}

variable "schema_dir" {
  type        = string
  description = "Directory holding the Avro schemas (schemas/avro in the repository). Example: ../../../schemas/avro."
}

variable "topics" {
  type        = map(string)
  description = <<-EOT
    Topic name -> Avro schema file stem under schema_dir, mirroring schemas/tables.py TOPICS
    (topic -> message type). Example: { "items-raw" = "raw_item", "dead-letter" = "dead_letter" }.
  EOT

  validation {
    condition     = alltrue([for name, stem in var.topics : can(regex("^[a-z][a-z0-9-]{2,}$", name)) && can(regex("^[a-z_]+$", stem))])
    error_message = "Topic names are lowercase with dashes (>= 3 characters); schema stems are snake_case file names."
  }

  validation {
    condition     = contains(keys(var.topics), "dead-letter")
    error_message = "The dead-letter topic of schemas/tables.py TOPICS must be declared."
  }
}

variable "dead_letter_stages" {
  type        = list(string)
  description = "Stages with their own application dead-letter topic dead-letter-<stage> (DeadLetter records). Example: [\"ingest\", \"stories\"]."
  default     = ["ingest", "articles", "stories", "editions", "push", "covisit"]

  validation {
    condition     = alltrue([for s in var.dead_letter_stages : can(regex("^[a-z][a-z0-9-]*$", s))])
    error_message = "Stage names are lowercase letters, digits and dashes."
  }
}

variable "subscriptions" {
  type = map(object({
    topic                   = string
    ack_deadline_seconds    = optional(number, 60)
    max_delivery_attempts   = optional(number, 10)
    enable_message_ordering = optional(bool, false)
  }))
  description = <<-EOT
    Subscriptions the jobs read, by name. Each gets a dead_letter_policy forwarding to "<name>-undeliverable".
    enable_message_ordering delivers messages that share an ordering key in publish order (changing it replaces
    the subscription). Example: { "stories-items-raw" = { topic = "items-raw", enable_message_ordering = true } }.
  EOT

  validation {
    condition = alltrue([
      for s in values(var.subscriptions) :
      s.ack_deadline_seconds >= 10 && s.ack_deadline_seconds <= 600 && s.max_delivery_attempts >= 5 && s.max_delivery_attempts <= 100
    ])
    error_message = "ack_deadline_seconds must be 10-600 and max_delivery_attempts 5-100 (Pub/Sub limits)."
  }
}

variable "namespace" {
  type        = string
  description = "Prefix isolating a run's topics (stores.StoreConfig.name); empty for production. Example: bf-2024q1."
  default     = ""

  validation {
    condition     = can(regex("^([a-z0-9][a-z0-9-]{0,20})?$", var.namespace))
    error_message = "namespace is empty or up to 21 lowercase letters, digits and dashes."
  }
}

variable "topic_retention" {
  type        = string
  description = "How long a topic keeps published messages for seek-based replay, in seconds with an s suffix. Example: 604800s (7 days)."
  default     = "604800s"

  validation {
    condition     = can(regex("^[0-9]+s$", var.topic_retention))
    error_message = "topic_retention is a duration in seconds such as 604800s."
  }
}

variable "subscription_retention" {
  type        = string
  description = "How long subscriptions keep messages (acked ones too). Example: 604800s (7 days, the Pub/Sub maximum)."
  default     = "604800s"

  validation {
    condition     = can(regex("^[0-9]+s$", var.subscription_retention)) && tonumber(trimsuffix(var.subscription_retention, "s")) <= 604800
    error_message = "subscription_retention is at most 604800s."
  }
}

variable "kms_key_name" {
  type        = string
  description = "Optional Cloud KMS key for the topics (CMEK); null uses Google-managed keys. Example: projects/p/locations/us/keyRings/r/cryptoKeys/k."
  default     = null
}

variable "labels" {
  type        = map(string)
  description = "Labels put on every topic and subscription. Example: { system = \"newsroom\", env = \"prod\" }."
  default     = {}
}
