variable "project_id" {
  type        = string
  description = "Project whose jobs, topics and origin are watched, and that holds the policies. Example: newsroom-prod-123456."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits, dashes)."
  }
}

variable "notification_channels" {
  type        = list(string)
  description = "Notification channel ids every alert policy notifies; [] opens incidents without notifying anyone. Example: [\"projects/newsroom-prod-123456/notificationChannels/1234567890\"]."
  default     = []

  validation {
    condition     = alltrue([for c in var.notification_channels : can(regex("^projects/[^/]+/notificationChannels/[0-9]+$", c))])
    error_message = "Notification channels are full ids: projects/<project>/notificationChannels/<number>."
  }
}

variable "ingest_job" {
  type        = string
  description = "Dataflow job name of the ingest job (its logs carry newsroom.item_discovered). Example: newsroom-ingest."

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,62}[a-z0-9])?$", var.ingest_job))
    error_message = "A Dataflow job name: lowercase letters, digits and dashes."
  }
}

variable "stories_job" {
  type        = string
  description = "Dataflow job name of the stories job (it publishes the snapshots; its logs carry newsroom.page_published and newsroom.snapshot_rejected). Example: newsroom-stories."

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,62}[a-z0-9])?$", var.stories_job))
    error_message = "A Dataflow job name: lowercase letters, digits and dashes."
  }
}

variable "covisit_job" {
  type        = string
  description = "Dataflow job name of the co-visitation job (watched for watermark lag like the others). Example: newsroom-covisit."

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,62}[a-z0-9])?$", var.covisit_job))
    error_message = "A Dataflow job name: lowercase letters, digits and dashes."
  }
}

variable "authority_job" {
  type        = string
  description = "Name of the daily authority job: its Cloud Scheduler job and every Dataflow run it launches (modules/schedule). Example: newsroom-authority."

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,62}[a-z0-9])?$", var.authority_job))
    error_message = "A Dataflow job name: lowercase letters, digits and dashes."
  }
}

variable "userclusters_job" {
  type        = string
  description = "Name of the daily user-cluster job: its Cloud Scheduler job and every Dataflow run it launches (modules/schedule). Example: newsroom-userclusters."

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,62}[a-z0-9])?$", var.userclusters_job))
    error_message = "A Dataflow job name: lowercase letters, digits and dashes."
  }
}

variable "origin_service" {
  type        = string
  description = "Cloud Run service name of the origin. Example: newsroom-origin."

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,47}[a-z0-9])?$", var.origin_service))
    error_message = "A Cloud Run service name: lowercase letters, digits and dashes."
  }
}

variable "release_to_page_p90_seconds" {
  type        = number
  description = "Alert when, in an edition, the 90th percentile of release-to-page latency (first-seen of the newest new article to the pointer move of the page showing it) stays above this many seconds for 10 minutes. The design's target: a breaking story on top < 5 min after the first reports. Example: 300."
  default     = 300

  validation {
    condition     = var.release_to_page_p90_seconds > 0
    error_message = "release_to_page_p90_seconds must be positive."
  }
}

variable "discovery_p90_seconds" {
  type        = number
  description = "Alert when the 90th percentile of discovery latency (publisher's stated publish time to the item's publish on items-raw) of the authoritative feeds stays above this many seconds for 15 minutes. The design's target: p90 < 2 min for the busiest feeds. Example: 120."
  default     = 120

  validation {
    condition     = var.discovery_p90_seconds > 0
    error_message = "discovery_p90_seconds must be positive."
  }
}

variable "dead_letter_depth" {
  type        = number
  description = "Alert when a dead-letter archive subscription (one per stage, and one per job subscription's undeliverable topic) holds more than this many unacknowledged messages for 10 minutes. Example: 1000."
  default     = 1000

  validation {
    condition     = var.dead_letter_depth >= 1
    error_message = "dead_letter_depth must be at least 1."
  }
}

variable "dead_letter_growth_per_10_minutes" {
  type        = number
  description = "Alert when more than this many messages are published to one dead-letter topic in 10 minutes (a stage starts failing). Example: 100."
  default     = 100

  validation {
    condition     = var.dead_letter_growth_per_10_minutes >= 1
    error_message = "dead_letter_growth_per_10_minutes must be at least 1."
  }
}

variable "rejected_snapshots_per_15_minutes" {
  type        = number
  description = "Alert when an edition has more than this many snapshots rejected by validation in 15 minutes (its pages stop moving while the last good version keeps serving). Example: 2."
  default     = 2

  validation {
    condition     = var.rejected_snapshots_per_15_minutes >= 0
    error_message = "rejected_snapshots_per_15_minutes must not be negative."
  }
}

variable "stuck_pointer_minutes" {
  type        = number
  description = "Alert when an edition has published no page for this many minutes (stuck pointers: the ranker cycles every 60 s). Example: 15."
  default     = 15

  validation {
    condition     = var.stuck_pointer_minutes >= 5 && var.stuck_pointer_minutes <= 1440
    error_message = "stuck_pointer_minutes is between 5 and 1440."
  }
}

variable "origin_5xx_ratio" {
  type        = number
  description = "Alert when the share of origin responses that are 5xx stays above this ratio for 5 minutes (For you shedding answers 503 and counts). Example: 0.01."
  default     = 0.01

  validation {
    condition     = var.origin_5xx_ratio > 0 && var.origin_5xx_ratio < 1
    error_message = "origin_5xx_ratio is between 0 and 1."
  }
}

variable "origin_latency_p99_ms" {
  type        = number
  description = "Alert when the origin's 99th percentile request latency stays above this many milliseconds for 5 minutes. Example: 1000."
  default     = 1000

  validation {
    condition     = var.origin_latency_p99_ms > 0
    error_message = "origin_latency_p99_ms must be positive."
  }
}

variable "origin_catalog_age_seconds" {
  type        = number
  description = "Alert when an origin instance has not reached the stores (its catalogue age, newsroom.origin.catalog_age) for more than this many seconds, over 5 minutes. Example: 300."
  default     = 300

  validation {
    condition     = var.origin_catalog_age_seconds > 0
    error_message = "origin_catalog_age_seconds must be positive."
  }
}

variable "watermark_lag_seconds" {
  type        = number
  description = "Alert when a streaming job's data watermark is older than this many seconds for 10 minutes. Example: 300."
  default     = 300

  validation {
    condition     = var.watermark_lag_seconds >= 60
    error_message = "watermark_lag_seconds must be at least 60."
  }
}

variable "cdn_purge_failures_per_15_minutes" {
  type        = number
  description = "Alert when the stories job logs more than this many refused Breaking purges (newsroom.cdn_purge_failed) in an edition in 15 minutes. A refused purge is retried with its bundle, so one transient error stays below; a lasting one repeats. Example: 3."
  default     = 3

  validation {
    condition     = var.cdn_purge_failures_per_15_minutes >= 0
    error_message = "cdn_purge_failures_per_15_minutes must not be negative."
  }
}

variable "authority_failures_tolerated" {
  type        = number
  description = "Alert when the daily authority job has more than this many failed launch attempts (Cloud Scheduler, each retry counts) and run errors (ERROR job messages) within authority_failure_window_hours. 0: any failure alerts. Example: 0."
  default     = 0

  validation {
    condition     = var.authority_failures_tolerated >= 0
    error_message = "authority_failures_tolerated must not be negative."
  }
}

variable "authority_failure_window_hours" {
  type        = number
  description = "How many hours back the authority alert counts failures (and so how long it stays open after one): a daily job, so a day plus slack; at most 25 (Cloud Monitoring's longest alignment period in an alert). Example: 25."
  default     = 25

  validation {
    condition     = var.authority_failure_window_hours >= 1 && var.authority_failure_window_hours <= 25 && floor(var.authority_failure_window_hours) == var.authority_failure_window_hours
    error_message = "authority_failure_window_hours is a whole number between 1 and 25."
  }
}

variable "userclusters_failures_tolerated" {
  type        = number
  description = "Alert when the daily user-cluster job has more than this many failed launch attempts (Cloud Scheduler, each retry counts) and run errors (ERROR job messages) within userclusters_failure_window_hours. 0: any failure alerts. Example: 0."
  default     = 0

  validation {
    condition     = var.userclusters_failures_tolerated >= 0
    error_message = "userclusters_failures_tolerated must not be negative."
  }
}

variable "userclusters_failure_window_hours" {
  type        = number
  description = "How many hours back the user-cluster alert counts failures (and so how long it stays open after one): a daily job, so a day plus slack; at most 25 (Cloud Monitoring's longest alignment period in an alert). Example: 25."
  default     = 25

  validation {
    condition     = var.userclusters_failure_window_hours >= 1 && var.userclusters_failure_window_hours <= 25 && floor(var.userclusters_failure_window_hours) == var.userclusters_failure_window_hours
    error_message = "userclusters_failure_window_hours is a whole number between 1 and 25."
  }
}

variable "labels" {
  type        = map(string)
  description = "User labels put on every alert policy. Example: { system = \"newsroom\", env = \"prod\" }."
  default     = {}
}
