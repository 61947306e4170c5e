# The Newsroom origin (serving/, `newsroom serve`: Flask under gunicorn, every shared page held in memory) on
# Cloud Run, behind a global external HTTPS load balancer with Cloud CDN.
#
# Two backend services point at the same serverless NEG:
#   cdn     shared pages (editions, sections, stories, version). Cloud CDN honours the origin's Cache-Control
#           (`public, s-maxage=60`, stories and topics 30; content-versioned assets `public, max-age=31536000,
#           immutable`). The cache key is host + path +
#           only the query strings the API reads (limit, cursor, edition): no cookie, no header, no other query
#           string, so tracking parameters cannot split the cache and no personal value can enter a key. The URL
#           map removes Cookie and Authorization from these requests before the cache and the origin (the origin
#           answers 400 to a shared request that carries either). Concurrent misses are coalesced into one origin
#           request; 404/410/301 are cached briefly (negative caching).
#           Stale content (the design: the last good page stays at the edge for an hour when the origin fails, and
#           revalidation is asynchronous otherwise). What Cloud CDN documents ("Serve stale content",
#           https://cloud.google.com/cdn/docs/serving-stale-content; "Caching overview", cache modes; "Using TTL
#           overrides", https://cloud.google.com/cdn/docs/using-ttl-overrides):
#             - it does not support stale-if-error;
#             - a response's own stale-while-revalidate=N wins: stale for N s, for revalidation and for errors;
#             - without that directive the backend's serveWhileStale applies: after expiry the edge answers the
#               stale copy and revalidates asynchronously, for at most that long; past it, it revalidates
#               synchronously and an origin error is the reader's answer;
#             - default/max/client TTL are used only by FORCE_CACHE_ALL and CACHE_ALL_STATIC.
#           The choice: cache_mode USE_ORIGIN_HEADERS (the origin says which responses are shared: For you and
#           errors are private or no-store, and the TTL per kind is the origin's s-maxage), so no TTL override is
#           set (it would be ignored); the origin sends no stale-while-revalidate and no stale-if-error
#           (serving/http/conventions.py), so serve_while_stale = var.serve_while_stale_sec (3600) is the whole stale policy.
#           Not FORCE_CACHE_ALL: it would cache private answers and ignores stale-while-revalidate. Not the origin
#           sending stale-while-revalidate=3600: browsers honour it too and would show a returning reader an hour-old
#           page. tests/deploy/test_edge_policy.py pins this; devtools/edge_nginx.conf emulates the same policy.
#   direct  no CDN: For you (/v1/feed/*, personal, Cache-Control private), reader controls (/v1/me/*), events, and the
#           WebSub and ping endpoints (their query strings and bodies are per request).
# Cloud Armor: rate limits per client IP on the WebSub and ping endpoints, the Log4j (cve-canary) rule, and
# adaptive protection; attached to both backends (cache hits never reach a backend policy, so the shared pages'
# protection is the cache itself).

locals {
  # The API's query strings that change a shared response (serving/: sections ?limit=, stories ?edition=&cursor=).
  cache_query_strings = ["cursor", "edition", "limit"]

  # Personal paths (For you, reader controls, events): never cached, routed to the non-CDN backend. A path ending
  # in /* matches every path below it; any other path matches exactly.
  personal_paths = ["/v1/feed", "/v1/feed/*", "/v1/me", "/v1/me/*", "/v1/events", "/v1/events/*"]

  # Request headers removed on every route except the personal ones: shared endpoints are anonymous.
  shared_strip_headers = ["Cookie", "Authorization"]
}

resource "google_cloud_run_v2_service" "origin" {
  project             = var.project_id
  name                = var.name
  location            = var.region
  ingress             = "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER"
  deletion_protection = var.deletion_protection
  labels              = var.labels

  template {
    service_account                  = var.service_account_email
    max_instance_request_concurrency = var.concurrency
    timeout                          = "30s"

    scaling {
      # Pages live in memory and reload when a pointer moves: keep warm instances so the CDN never waits on a
      # cold load, and a ceiling so a cache-busting flood cannot scale costs without bound.
      min_instance_count = var.min_instances
      max_instance_count = var.max_instances
    }

    containers {
      image   = var.image
      command = ["newsroom"]
      args    = concat(["serve"], var.serve_args)

      ports {
        container_port = 8080
      }

      resources {
        limits = {
          cpu    = var.cpu
          memory = var.memory
        }
        # The pointer watcher runs between requests: CPU must stay allocated.
        cpu_idle = false
      }

      dynamic "env" {
        for_each = var.env
        content {
          name  = env.key
          value = env.value
        }
      }

      dynamic "env" {
        for_each = var.secret_env
        content {
          name = env.key
          value_source {
            secret_key_ref {
              secret  = env.value
              version = "latest"
            }
          }
        }
      }

      startup_probe {
        http_get {
          path = var.readiness_path
        }
        initial_delay_seconds = 2
        period_seconds        = 3
        failure_threshold     = 40
      }

      liveness_probe {
        http_get {
          path = var.health_path
        }
        period_seconds    = 15
        failure_threshold = 3
      }
    }
  }
}

# The load balancer forwards readers' requests unauthenticated, so the service must allow allUsers to invoke it;
# ingress INTERNAL_LOAD_BALANCER above means the service's own run.app URL refuses anything that did not come
# through the load balancer (and so through Cloud Armor and the CDN).
resource "google_cloud_run_v2_service_iam_member" "lb_invoker" {
  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.origin.name
  role     = "roles/run.invoker"
  member   = "allUsers"
}

resource "google_compute_region_network_endpoint_group" "origin" {
  project               = var.project_id
  name                  = "${var.name}-neg"
  region                = var.region
  network_endpoint_type = "SERVERLESS"

  cloud_run {
    service = google_cloud_run_v2_service.origin.name
  }
}

resource "google_compute_security_policy" "edge" {
  project     = var.project_id
  name        = "${var.name}-armor"
  description = "Rate limits on WebSub and pings, Log4j rule, adaptive protection."
  type        = "CLOUD_ARMOR"

  adaptive_protection_config {
    layer_7_ddos_defense_config {
      enable = true
    }
  }

  rule {
    action      = "deny(403)"
    priority    = 100
    description = "Log4j JNDI lookups (CVE-2021-44228)."
    match {
      expr {
        expression = "evaluatePreconfiguredWaf('cve-canary')"
      }
    }
  }

  rule {
    action      = "throttle"
    priority    = 1000
    description = "WebSub hub callbacks: at most ${var.websub_rate_limit.count} requests per ${var.websub_rate_limit.interval_sec}s per client IP."
    match {
      expr {
        expression = "request.path.matches('${var.websub_path_regex}')"
      }
    }
    rate_limit_options {
      conform_action = "allow"
      exceed_action  = "deny(429)"
      enforce_on_key = "IP"
      rate_limit_threshold {
        count        = var.websub_rate_limit.count
        interval_sec = var.websub_rate_limit.interval_sec
      }
    }
  }

  rule {
    action      = "throttle"
    priority    = 1100
    description = "Publisher pings: at most ${var.ping_rate_limit.count} requests per ${var.ping_rate_limit.interval_sec}s per client IP."
    match {
      expr {
        expression = "request.path.matches('${var.ping_path_regex}')"
      }
    }
    rate_limit_options {
      conform_action = "allow"
      exceed_action  = "deny(429)"
      enforce_on_key = "IP"
      rate_limit_threshold {
        count        = var.ping_rate_limit.count
        interval_sec = var.ping_rate_limit.interval_sec
      }
    }
  }

  rule {
    action      = "allow"
    priority    = 2147483647
    description = "Default: allow."
    match {
      versioned_expr = "SRC_IPS_V1"
      config {
        src_ip_ranges = ["*"]
      }
    }
  }
}

resource "google_compute_backend_service" "cdn" {
  project               = var.project_id
  name                  = "${var.name}-cdn"
  description           = "Shared pages through Cloud CDN."
  load_balancing_scheme = "EXTERNAL_MANAGED"
  protocol              = "HTTPS"
  security_policy       = google_compute_security_policy.edge.id
  # The origin sends no Vary and leaves compression to the edge (serving/http/conventions.py).
  compression_mode = "AUTOMATIC"

  enable_cdn = true

  cdn_policy {
    # The origin's headers decide what is cached and for how long; the stale policy is this backend's (header).
    cache_mode        = "USE_ORIGIN_HEADERS"
    serve_while_stale = var.serve_while_stale_sec
    # One request to the origin per cache key however many readers miss at once.
    request_coalescing = true

    negative_caching = true
    dynamic "negative_caching_policy" {
      for_each = var.negative_caching_ttls
      content {
        code = tonumber(negative_caching_policy.key)
        ttl  = negative_caching_policy.value
      }
    }

    cache_key_policy {
      include_host           = true
      include_protocol       = false
      include_query_string   = true
      query_string_whitelist = local.cache_query_strings
      # Explicitly nothing personal in the key: no request header, no cookie.
      include_http_headers  = []
      include_named_cookies = []
    }

    # The URL map removes Authorization on the routes to this backend; should a route without that header action
    # ever be added, a personal request still never reads or fills the shared cache.
    bypass_cache_on_request_headers {
      header_name = "Authorization"
    }
  }

  backend {
    group = google_compute_region_network_endpoint_group.origin.id
  }

  log_config {
    enable      = true
    sample_rate = var.log_sample_rate
  }
}

resource "google_compute_backend_service" "direct" {
  project               = var.project_id
  name                  = "${var.name}-direct"
  description           = "For you, reader events, WebSub and pings: never cached."
  load_balancing_scheme = "EXTERNAL_MANAGED"
  protocol              = "HTTPS"
  security_policy       = google_compute_security_policy.edge.id

  enable_cdn = false

  backend {
    group = google_compute_region_network_endpoint_group.origin.id
  }

  log_config {
    enable      = true
    sample_rate = var.log_sample_rate
  }
}

resource "google_compute_url_map" "api" {
  project         = var.project_id
  name            = "${var.name}-urls"
  default_service = google_compute_backend_service.cdn.id

  host_rule {
    hosts        = ["*"]
    path_matcher = "api"
  }

  path_matcher {
    name            = "api"
    default_service = google_compute_backend_service.cdn.id

    # Route rules, first match by priority. Each names the request headers the load balancer removes before the
    # request reaches the cache and the origin (serving/http/conventions.py answers 400 to a shared request carrying Cookie or
    # Authorization; readers' browsers and apps send them anyway). devtools/edge_nginx.conf, the local stand-in,
    # strips the same headers on the same routes (tests/deploy/test_terraform.py compares the two).

    # For you, reader controls and events are personal: they keep Authorization (the reader's bearer token) and go
    # to the backend without CDN.
    route_rules {
      priority = 10
      service  = google_compute_backend_service.direct.id

      dynamic "match_rules" {
        for_each = local.personal_paths
        content {
          full_path_match = endswith(match_rules.value, "/*") ? null : match_rules.value
          prefix_match    = endswith(match_rules.value, "/*") ? trimsuffix(match_rules.value, "*") : null
        }
      }
    }

    # WebSub and pings carry per-request query strings and bodies (hub.challenge, signatures in their own headers):
    # never cached, and no cookie or Authorization is needed there.
    route_rules {
      priority = 20
      service  = google_compute_backend_service.direct.id

      dynamic "match_rules" {
        for_each = concat(var.websub_paths, var.ping_paths)
        content {
          full_path_match = endswith(match_rules.value, "/*") ? null : match_rules.value
          prefix_match    = endswith(match_rules.value, "/*") ? trimsuffix(match_rules.value, "*") : null
        }
      }

      header_action {
        request_headers_to_remove = local.shared_strip_headers
      }
    }

    # Everything else is a shared page (editions, sections, stories, versions, health, openapi): through the CDN,
    # anonymous.
    route_rules {
      priority = 1000
      service  = google_compute_backend_service.cdn.id

      match_rules {
        prefix_match = "/"
      }

      header_action {
        request_headers_to_remove = local.shared_strip_headers
      }
    }
  }
}

resource "google_compute_global_address" "origin" {
  project = var.project_id
  name    = "${var.name}-ip"
}

resource "google_compute_managed_ssl_certificate" "origin" {
  project = var.project_id
  name    = "${var.name}-cert"

  managed {
    domains = var.domains
  }
}

resource "google_compute_ssl_policy" "modern" {
  project         = var.project_id
  name            = "${var.name}-tls"
  profile         = "MODERN"
  min_tls_version = "TLS_1_2"
}

resource "google_compute_target_https_proxy" "origin" {
  project          = var.project_id
  name             = "${var.name}-https"
  url_map          = google_compute_url_map.api.id
  ssl_certificates = [google_compute_managed_ssl_certificate.origin.id]
  ssl_policy       = google_compute_ssl_policy.modern.id
  quic_override    = "ENABLE"
}

resource "google_compute_global_forwarding_rule" "https" {
  project               = var.project_id
  name                  = "${var.name}-https"
  target                = google_compute_target_https_proxy.origin.id
  ip_address            = google_compute_global_address.origin.address
  port_range            = "443"
  load_balancing_scheme = "EXTERNAL_MANAGED"
}

# Port 80 only redirects to HTTPS.
resource "google_compute_url_map" "redirect" {
  project = var.project_id
  name    = "${var.name}-redirect"

  default_url_redirect {
    https_redirect         = true
    redirect_response_code = "MOVED_PERMANENTLY_DEFAULT"
    strip_query            = false
  }
}

resource "google_compute_target_http_proxy" "redirect" {
  project = var.project_id
  name    = "${var.name}-http"
  url_map = google_compute_url_map.redirect.id
}

resource "google_compute_global_forwarding_rule" "http" {
  project               = var.project_id
  name                  = "${var.name}-http"
  target                = google_compute_target_http_proxy.redirect.id
  ip_address            = google_compute_global_address.origin.address
  port_range            = "80"
  load_balancing_scheme = "EXTERNAL_MANAGED"
}
