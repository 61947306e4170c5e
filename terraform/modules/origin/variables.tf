variable "project_id" {
  type        = string
  description = "Project that runs the origin and the load balancer. Example: newsroom-prod-123456."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits, dashes)."
  }
}

variable "region" {
  type        = string
  description = "Cloud Run region. Example: europe-west1."

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]$", var.region))
    error_message = "region must look like europe-west1."
  }
}

variable "name" {
  type        = string
  description = "Name of the Cloud Run service and prefix of the load balancer's resources. Example: newsroom-origin."
  default     = "newsroom-origin"

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$", var.name))
    error_message = "name is lowercase letters, digits and dashes, at most 42 characters."
  }
}

variable "image" {
  type        = string
  description = "Newsroom image (templates/Dockerfile); the origin runs `newsroom serve` in it. Example: europe-west1-docker.pkg.dev/p/newsroom/newsroom:20250101."

  validation {
    condition     = can(regex("^[a-z0-9.-]+-docker\\.pkg\\.dev/[^:@]+[:@].+$", var.image))
    error_message = "image must be an Artifact Registry image reference with a tag or digest."
  }
}

variable "serve_args" {
  type        = list(string)
  description = "Arguments after `newsroom serve` (see `newsroom serve --help`). Example: [\"--backend=gcp\", \"--snapshot_bucket=p-newsroom-snapshots\"]."
  default     = []
}

variable "env" {
  type        = map(string)
  description = "Plain environment variables of the origin container. Example: { GOOGLE_CLOUD_PROJECT = \"p\" }."
  default     = {}
}

variable "secret_env" {
  type        = map(string)
  description = "Environment variable -> Secret Manager secret id (latest version), e.g. token and cursor keys. Example: { NEWSROOM_TOKEN_SECRET = \"newsroom-token-secret\" }."
  default     = {}
}

variable "service_account_email" {
  type        = string
  description = "The origin's own service account (iam module). Example: newsroom-origin@p.iam.gserviceaccount.com."

  validation {
    condition     = can(regex("@[a-z0-9-]+\\.iam\\.gserviceaccount\\.com$", var.service_account_email))
    error_message = "service_account_email must be a user-managed service account."
  }
}

variable "domains" {
  type        = list(string)
  description = "Domains of the Google-managed TLS certificate; point their DNS A record at the ip_address output. Example: [\"news.example.com\"]."

  validation {
    condition     = length(var.domains) >= 1 && alltrue([for d in var.domains : can(regex("^([a-z0-9-]+\\.)+[a-z]{2,}$", d))])
    error_message = "domains needs at least one fully qualified domain name."
  }
}

variable "min_instances" {
  type        = number
  description = "Warm instances (each holds every page in memory). Example: 2."
  default     = 1

  validation {
    condition     = var.min_instances >= 1
    error_message = "Keep at least one warm instance: a cold start must load every page before it is ready."
  }
}

variable "max_instances" {
  type        = number
  description = "Instance ceiling. The CDN answers the audience; the origin sees ~280 requests/s. Example: 20."
  default     = 10

  validation {
    condition     = var.max_instances >= 1 && var.max_instances <= 1000
    error_message = "max_instances must be between 1 and 1000."
  }
}

variable "concurrency" {
  type        = number
  description = "Requests one instance serves at once (gunicorn workers x threads). Example: 16."
  default     = 16

  validation {
    condition     = var.concurrency >= 1 && var.concurrency <= 1000
    error_message = "concurrency must be between 1 and 1000."
  }
}

variable "cpu" {
  type        = string
  description = "CPU limit of an instance. Example: \"2\"."
  default     = "2"

  validation {
    condition     = contains(["1", "2", "4", "6", "8"], var.cpu)
    error_message = "cpu is one of 1, 2, 4, 6, 8."
  }
}

variable "memory" {
  type        = string
  description = "Memory limit of an instance (every page and candidate pool in memory). Example: 2Gi."
  default     = "2Gi"

  validation {
    condition     = can(regex("^[0-9]+(Mi|Gi)$", var.memory))
    error_message = "memory looks like 512Mi or 2Gi."
  }
}

variable "health_path" {
  type        = string
  description = "Liveness path of the origin. Example: /healthz."
  default     = "/healthz"

  validation {
    condition     = startswith(var.health_path, "/")
    error_message = "health_path starts with /."
  }
}

variable "readiness_path" {
  type        = string
  description = "Readiness path (200 once every page is loaded). Example: /readyz."
  default     = "/readyz"

  validation {
    condition     = startswith(var.readiness_path, "/")
    error_message = "readiness_path starts with /."
  }
}

variable "websub_paths" {
  type        = list(string)
  description = "URL map paths of the WebSub callback (serving/api/push.py, never cached). Example: [\"/v1/websub/*\"]."
  default     = ["/v1/websub/*"]

  validation {
    condition     = alltrue([for p in var.websub_paths : startswith(p, "/")])
    error_message = "Paths start with /."
  }
}

variable "websub_path_regex" {
  type        = string
  description = "RE2 regex on request.path that Cloud Armor rate-limits as WebSub. Example: ^/v1/websub/."
  default     = "^/v1/websub/"
}

variable "ping_paths" {
  type        = list(string)
  description = "URL map paths of the publisher ping endpoint (serving/api/push.py, never cached). Example: [\"/v1/ping\", \"/v1/ping/*\"]."
  default     = ["/v1/ping", "/v1/ping/*"]

  validation {
    condition     = alltrue([for p in var.ping_paths : startswith(p, "/")])
    error_message = "Paths start with /."
  }
}

variable "ping_path_regex" {
  type        = string
  description = "RE2 regex on request.path that Cloud Armor rate-limits as pings. Example: ^/v1/ping."
  default     = "^/v1/ping"
}

variable "websub_rate_limit" {
  type = object({
    count        = number
    interval_sec = number
  })
  description = "Requests per client IP per interval on WebSub callbacks before 429. Example: { count = 120, interval_sec = 60 }."
  default     = { count = 120, interval_sec = 60 }

  validation {
    condition     = var.websub_rate_limit.count >= 1 && contains([10, 30, 60, 120, 180, 240, 300, 600, 900, 1200, 1800, 2700, 3600], var.websub_rate_limit.interval_sec)
    error_message = "count >= 1 and interval_sec one of Cloud Armor's intervals (10, 30, 60, 120, ... 3600)."
  }
}

variable "ping_rate_limit" {
  type = object({
    count        = number
    interval_sec = number
  })
  description = "Requests per client IP per interval on pings before 429 (a ping triggers at most one poll per feed per 30 s anyway). Example: { count = 30, interval_sec = 60 }."
  default     = { count = 30, interval_sec = 60 }

  validation {
    condition     = var.ping_rate_limit.count >= 1 && contains([10, 30, 60, 120, 180, 240, 300, 600, 900, 1200, 1800, 2700, 3600], var.ping_rate_limit.interval_sec)
    error_message = "count >= 1 and interval_sec one of Cloud Armor's intervals (10, 30, 60, 120, ... 3600)."
  }
}

variable "serve_while_stale_sec" {
  type        = number
  description = "How long past expiry the CDN serves a stale shared page, revalidating asynchronously, and keeps serving it while the origin fails (the origin sends no stale-while-revalidate, so this policy applies; main.tf). Example: 3600."
  default     = 3600

  validation {
    condition     = var.serve_while_stale_sec >= 3600 && var.serve_while_stale_sec <= 604800
    error_message = "serve_while_stale_sec is between 3600 (the design's hour of last good page) and 604800 (Cloud CDN's maximum)."
  }
}

variable "negative_caching_ttls" {
  type        = map(number)
  description = "HTTP status -> seconds the CDN caches it (missing pages, gone stories, merged-story redirects). Example: { \"404\" = 10, \"410\" = 60, \"301\" = 300 }."
  default     = { "404" = 10, "410" = 60, "301" = 300 }

  validation {
    condition = alltrue([
      for code, ttl in var.negative_caching_ttls :
      contains(["300", "301", "302", "307", "308", "404", "405", "410", "421", "451", "501"], code) && ttl >= 0 && ttl <= 1800
    ])
    error_message = "Codes must be ones Cloud CDN can negatively cache; ttl 0-1800 s."
  }
}

variable "log_sample_rate" {
  type        = number
  description = "Share of requests logged by the load balancer. Example: 0.1."
  default     = 0.1

  validation {
    condition     = var.log_sample_rate >= 0 && var.log_sample_rate <= 1
    error_message = "log_sample_rate is between 0 and 1."
  }
}

variable "deletion_protection" {
  type        = bool
  description = "Refuse to destroy the Cloud Run service. Example: true in prod."
  default     = true
}

variable "labels" {
  type        = map(string)
  description = "Labels on the Cloud Run service. Example: { system = \"newsroom\" }."
  default     = {}
}
