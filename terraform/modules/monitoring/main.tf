# Alert policies and the dashboard of a Newsroom environment (README "Operations" explains each alert and
# what to do). Signals:
#   - built-in metrics: Dataflow data watermark age, Pub/Sub dead-letter depth and publish counts, Cloud Run request
#     counts and latencies of the origin;
#   - log-based metrics over the jobs' worker logs (resource dataflow_step). Each is one log record of the job whose
#     message is an event name followed by key=value pairs (logfmt), so that the text survives Dataflow's log
#     handler unchanged (it keeps only the message):
#       newsroom.page_published edition=<edition> section=<section> version=<n> [release_to_page_s=<seconds>]
#       newsroom.snapshot_rejected edition=<edition> section=<section> version=<n> reason=<reason>
#       newsroom.edition_heartbeat edition=<edition> section=<section> version=<n> outcome=<published|unchanged>
#       newsroom.item_discovered tier=<authoritative|long_tail> via=<poll|websub|ping> [discovery_s=<seconds>]
#       newsroom.cdn_purge_failed edition=<edition> section=<section> story=<id> error=<text>
#     (the exact contract is in local.log_events; tests/deploy/test_terraform.py pins it, and
#     tests/deploy/test_signal_contract.py runs the code paths that write each line and matches every filter and
#     extractor here against what they logged);
#   - log-based metrics over platform logs: the daily batch jobs' (authority, userclusters) Cloud Scheduler attempts
#     that failed and the ERROR job messages of their Dataflow runs (one per entry of local.daily_jobs);
#   - Dataflow user counters of the stories job (dashboard only): breaking/announced_<edition>, takedowns_applied.
# Every policy notifies var.notification_channels and carries its runbook in `documentation`.

locals {
  # Log events of the jobs: event -> the job that logs it and the key=value fields the metrics read.
  log_events = {
    page_published    = { job = var.stories_job, fields = ["edition", "section", "version", "release_to_page_s"] }
    snapshot_rejected = { job = var.stories_job, fields = ["edition", "section", "version", "reason"] }
    edition_heartbeat = { job = var.stories_job, fields = ["edition", "section", "version", "outcome"] }
    item_discovered   = { job = var.ingest_job, fields = ["tier", "via", "discovery_s"] }
    cdn_purge_failed  = { job = var.stories_job, fields = ["edition", "section", "story", "error"] }
  }

  event_filter = {
    for event, e in local.log_events : event => join(" AND ", [
      "resource.type=\"dataflow_step\"",
      "resource.labels.job_name=\"${e.job}\"",
      "jsonPayload.message=~\"^newsroom[.]${event} \"",
    ])
  }

  # Dead letters: the application's per-stage topics (dead-letter, dead-letter-<stage>) and the undeliverable
  # topics of the job subscriptions; each has an archive subscription "<topic>-archive" (modules/pubsub).
  dead_letter_topic_regex        = "dead-letter(-[a-z0-9-]+)?|.+-undeliverable"
  dead_letter_subscription_regex = "(dead-letter(-[a-z0-9-]+)?|.+-undeliverable)-archive"

  metric_prefix = "logging.googleapis.com/user/"

  # The daily batch jobs modules/schedule launches, watched alike (one log metric and one alert each, by for_each):
  # a launch attempt Cloud Scheduler logs as failed (severity ERROR: the Dataflow launch API answered an error or
  # timed out; each retry is logged again), or an ERROR job message of a run (a work item that failed, "Workflow
  # failed"), both found by the job's name. Per job: that name, its words in titles, the alert's severity, threshold,
  # window and runbook. The authority job alerts at ERROR (authority ages by the day); the user-cluster job at
  # WARNING (the origin ignores memberships older than two days, so one missed day costs nothing).
  daily_jobs = {
    authority = {
      job          = var.authority_job
      what         = "authority"
      severity     = "ERROR"
      tolerated    = var.authority_failures_tolerated
      window_hours = var.authority_failure_window_hours
      runbook      = "The daily authority job did not launch or its run failed; publisher authority keeps yesterday's values (nothing breaks, it ages). source=cloud_scheduler_job: read the attempt's status in the scheduler logs (403: the scheduler account's grants; 404: the template authority-<tag>.json is missing; 409: the previous run still running). source=dataflow_step: read the job's messages. Rerun with `gcloud scheduler jobs run`; README \"Operations\" / Alerts."
    }
    userclusters = {
      job          = var.userclusters_job
      what         = "user-cluster"
      severity     = "WARNING"
      tolerated    = var.userclusters_failures_tolerated
      window_hours = var.userclusters_failure_window_hours
      runbook      = "The daily user-cluster job (For you's readers like you) did not launch or its run failed; readers keep yesterday's clusters, the origin ignores memberships older than two days, so one missed day costs nothing and a second fades the source out (For you keeps its other sources). source=cloud_scheduler_job: read the attempt's status in the scheduler logs (403: the scheduler account's grants; 404: the template userclusters-<tag>.json is missing; 409: the previous run still running). source=dataflow_step: read the job's messages (a store error names the table). Rerun with `gcloud scheduler jobs run newsroom-userclusters`; README \"Operations\" / Alerts."
    }
  }
}

# --- log-based metrics --------------------------------------------------------------------------------------

resource "google_logging_metric" "pages_published" {
  project     = var.project_id
  name        = "newsroom/pages_published"
  description = "Snapshot pages whose latest pointer moved (newsroom.page_published), by edition."
  filter      = local.event_filter["page_published"]

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "edition"
      value_type = "STRING"
    }
  }

  label_extractors = {
    edition = "REGEXP_EXTRACT(jsonPayload.message, \"edition=([A-Za-z0-9_-]+)\")"
  }
}

# One line per edition and cycle in which one of its pages is current (published, or unchanged and so not
# rewritten): the stuck-pointer alert reads its absence, so a quiet edition is not taken for a stuck one.
resource "google_logging_metric" "edition_heartbeats" {
  project     = var.project_id
  name        = "newsroom/edition_heartbeats"
  description = "Cycles in which an edition had a current page (newsroom.edition_heartbeat: published or unchanged), by edition."
  filter      = local.event_filter["edition_heartbeat"]

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "edition"
      value_type = "STRING"
    }
  }

  label_extractors = {
    edition = "REGEXP_EXTRACT(jsonPayload.message, \"edition=([A-Za-z0-9_-]+)\")"
  }
}

resource "google_logging_metric" "release_to_page" {
  project     = var.project_id
  name        = "newsroom/release_to_page"
  description = "Seconds from the first-seen time of the newest article new on a page version to its pointer move (release_to_page_s of newsroom.page_published), by edition."
  filter      = "${local.event_filter["page_published"]} AND jsonPayload.message=~\" release_to_page_s=\""

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "s"
    labels {
      key        = "edition"
      value_type = "STRING"
    }
  }

  value_extractor = "REGEXP_EXTRACT(jsonPayload.message, \"release_to_page_s=([0-9]+(?:[.][0-9]+)?)\")"
  label_extractors = {
    edition = "REGEXP_EXTRACT(jsonPayload.message, \"edition=([A-Za-z0-9_-]+)\")"
  }

  # 1 s to ~6 h in 30 buckets.
  bucket_options {
    exponential_buckets {
      num_finite_buckets = 30
      growth_factor      = 1.4
      scale              = 1
    }
  }
}

resource "google_logging_metric" "snapshots_rejected" {
  project     = var.project_id
  name        = "newsroom/snapshots_rejected"
  description = "Snapshot pages refused by validation (newsroom.snapshot_rejected), by edition and reason."
  filter      = local.event_filter["snapshot_rejected"]

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "edition"
      value_type = "STRING"
    }
    labels {
      key        = "reason"
      value_type = "STRING"
    }
  }

  label_extractors = {
    edition = "REGEXP_EXTRACT(jsonPayload.message, \"edition=([A-Za-z0-9_-]+)\")"
    reason  = "REGEXP_EXTRACT(jsonPayload.message, \"reason=([A-Za-z0-9_-]+)\")"
  }
}

resource "google_logging_metric" "discovery_latency" {
  project     = var.project_id
  name        = "newsroom/discovery_latency"
  description = "Seconds from a publisher's stated publish time of an item to its publish on items-raw (discovery_s of newsroom.item_discovered), by feed tier and discovery path."
  filter      = "${local.event_filter["item_discovered"]} AND jsonPayload.message=~\" discovery_s=\""

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "s"
    labels {
      key        = "tier"
      value_type = "STRING"
    }
    labels {
      key        = "via"
      value_type = "STRING"
    }
  }

  value_extractor = "REGEXP_EXTRACT(jsonPayload.message, \"discovery_s=([0-9]+(?:[.][0-9]+)?)\")"
  label_extractors = {
    tier = "REGEXP_EXTRACT(jsonPayload.message, \"tier=([a-z_]+)\")"
    via  = "REGEXP_EXTRACT(jsonPayload.message, \"via=([a-z]+)\")"
  }

  bucket_options {
    exponential_buckets {
      num_finite_buckets = 30
      growth_factor      = 1.4
      scale              = 1
    }
  }
}

resource "google_logging_metric" "cdn_purge_failures" {
  project     = var.project_id
  name        = "newsroom/cdn_purge_failures"
  description = "Breaking purges the CDN refused in the stories job (newsroom.cdn_purge_failed; the bundle retries), by edition."
  filter      = local.event_filter["cdn_purge_failed"]

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "edition"
      value_type = "STRING"
    }
  }

  label_extractors = {
    edition = "REGEXP_EXTRACT(jsonPayload.message, \"edition=([A-Za-z0-9_-]+)\")"
  }
}



resource "google_logging_metric" "daily_job_failures" {
  for_each    = local.daily_jobs
  project     = var.project_id
  name        = "newsroom/${each.key}_failures"
  description = "Failed launch attempts of the daily ${each.value.what} job (Cloud Scheduler) and ERROR job messages of its Dataflow runs, by source (cloud_scheduler_job: launch, dataflow_step: run)."
  filter = join(" OR ", [
    "(resource.type=\"cloud_scheduler_job\" AND resource.labels.job_id=\"${each.value.job}\" AND severity>=ERROR)",
    "(resource.type=\"dataflow_step\" AND resource.labels.job_name=\"${each.value.job}\" AND log_id(\"dataflow.googleapis.com/job-message\") AND severity>=ERROR)",
  ])

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "source"
      value_type = "STRING"
    }
  }

  label_extractors = {
    source = "EXTRACT(resource.type)"
  }
}

# The metrics and alerts of the daily jobs were one resource each before local.daily_jobs: their state moves.
moved {
  from = google_logging_metric.authority_failures
  to   = google_logging_metric.daily_job_failures["authority"]
}

moved {
  from = google_logging_metric.userclusters_failures
  to   = google_logging_metric.daily_job_failures["userclusters"]
}

# --- alert policies -----------------------------------------------------------------------------------------

resource "google_monitoring_alert_policy" "release_to_page" {
  project               = var.project_id
  display_name          = "Newsroom: release-to-page latency p90 above ${var.release_to_page_p90_seconds}s"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "p90 release-to-page latency per edition"
    condition_threshold {
      filter          = "metric.type=\"${local.metric_prefix}${google_logging_metric.release_to_page.name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.release_to_page_p90_seconds
      duration        = "600s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_DELTA"
        cross_series_reducer = "REDUCE_PERCENTILE_90"
        group_by_fields      = ["metric.label.edition"]
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "New articles take too long to reach an edition's pages. Check the stories job's watermark lag and the items-raw backlog (dashboard: Freshness, Dataflow), then the ranker's cycle time; README \"Operations\" / Alerts."
  }
}

resource "google_monitoring_alert_policy" "discovery" {
  project               = var.project_id
  display_name          = "Newsroom: discovery latency p90 above ${var.discovery_p90_seconds}s (authoritative feeds)"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "p90 discovery latency of authoritative feeds"
    condition_threshold {
      filter          = "metric.type=\"${local.metric_prefix}${google_logging_metric.discovery_latency.name}\" AND metric.label.tier=\"authoritative\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.discovery_p90_seconds
      duration        = "900s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_DELTA"
        cross_series_reducer = "REDUCE_PERCENTILE_90"
        group_by_fields      = ["metric.label.via"]
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "The ingest job finds new items of the busiest feeds late. Check its watermark lag, the fetch-requests backlog, feed errors (Dataflow counters ingest/feed_errors) and WebSub leases; README \"Operations\" / Alerts."
  }
}

resource "google_monitoring_alert_policy" "dead_letter_depth" {
  project               = var.project_id
  display_name          = "Newsroom: dead letters piling up (more than ${var.dead_letter_depth} in an archive)"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "unacknowledged dead letters per archive subscription (stage)"
    condition_threshold {
      filter          = "resource.type=\"pubsub_subscription\" AND metric.type=\"pubsub.googleapis.com/subscription/num_undelivered_messages\" AND resource.label.subscription_id=monitoring.regex.full_match(\"${local.dead_letter_subscription_regex}\")"
      comparison      = "COMPARISON_GT"
      threshold_value = var.dead_letter_depth
      duration        = "600s"
      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_MAX"
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "A stage's dead letters are not being handled. Read a few (`gcloud pubsub subscriptions pull <archive> --limit=5`), fix the cause, replay, then acknowledge them; README \"Operations\" / Alerts."
  }
}

resource "google_monitoring_alert_policy" "dead_letter_growth" {
  project               = var.project_id
  display_name          = "Newsroom: dead letters growing (more than ${var.dead_letter_growth_per_10_minutes} per 10 min on a topic)"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "messages published per dead-letter topic (stage) in 10 minutes"
    condition_threshold {
      filter          = "resource.type=\"pubsub_topic\" AND metric.type=\"pubsub.googleapis.com/topic/send_message_operation_count\" AND resource.label.topic_id=monitoring.regex.full_match(\"${local.dead_letter_topic_regex}\")"
      comparison      = "COMPARISON_GT"
      threshold_value = var.dead_letter_growth_per_10_minutes
      duration        = "0s"
      aggregations {
        alignment_period     = "600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["resource.label.topic_id"]
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "A stage has started routing many inputs to its dead-letter topic (the topic names the stage). Read the reasons in the newest dead letters and the job's logs; README \"Operations\" / Alerts."
  }
}

resource "google_monitoring_alert_policy" "rejected_snapshots" {
  project               = var.project_id
  display_name          = "Newsroom: snapshots rejected (more than ${var.rejected_snapshots_per_15_minutes} in 15 min in an edition)"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "snapshot pages refused by validation per edition"
    condition_threshold {
      filter          = "metric.type=\"${local.metric_prefix}${google_logging_metric.snapshots_rejected.name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.rejected_snapshots_per_15_minutes
      duration        = "0s"
      aggregations {
        alignment_period     = "900s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.edition"]
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "Validation refuses an edition's new pages (the reason label says why: too few stories, a story without representative, a large shrink); the last good version keeps serving. README \"Operations\" / Alerts."
  }
}

resource "google_monitoring_alert_policy" "stuck_pointers" {
  project               = var.project_id
  display_name          = "Newsroom: no edition heartbeat for ${var.stuck_pointer_minutes} min (stuck pointers)"
  combiner              = "OR"
  severity              = "CRITICAL"
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "no heartbeat (no page published or confirmed unchanged) per edition"
    condition_absent {
      filter   = "metric.type=\"${local.metric_prefix}${google_logging_metric.edition_heartbeats.name}\""
      duration = "${var.stuck_pointer_minutes * 60}s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.edition"]
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "An edition's pages are neither published nor confirmed unchanged by the publisher (a quiet edition keeps its heartbeat): readers see an ageing page. Check the stories job is running and its watermark, then rejected snapshots and Bigtable errors; README \"Operations\" / Alerts."
  }
}

resource "google_monitoring_alert_policy" "origin_5xx" {
  project               = var.project_id
  display_name          = "Newsroom: origin 5xx above ${var.origin_5xx_ratio * 100}%"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "share of origin responses that are 5xx"
    condition_threshold {
      filter                  = "resource.type=\"cloud_run_revision\" AND resource.label.service_name=\"${var.origin_service}\" AND metric.type=\"run.googleapis.com/request_count\" AND metric.label.response_code_class=\"5xx\""
      denominator_filter      = "resource.type=\"cloud_run_revision\" AND resource.label.service_name=\"${var.origin_service}\" AND metric.type=\"run.googleapis.com/request_count\""
      comparison              = "COMPARISON_GT"
      threshold_value         = var.origin_5xx_ratio
      duration                = "300s"
      evaluation_missing_data = "EVALUATION_MISSING_DATA_INACTIVE"
      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }
      denominator_aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "The origin answers errors. Cloud CDN keeps serving cached shared pages (serve-while-stale, an hour), so readers first lose For you. Check the origin's logs, /readyz, memory, and the snapshot bucket; README \"Operations\" / Alerts."
  }
}

resource "google_monitoring_alert_policy" "origin_latency" {
  project               = var.project_id
  display_name          = "Newsroom: origin p99 latency above ${var.origin_latency_p99_ms} ms"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "origin request latency p99"
    condition_threshold {
      filter          = "resource.type=\"cloud_run_revision\" AND resource.label.service_name=\"${var.origin_service}\" AND metric.type=\"run.googleapis.com/request_latencies\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.origin_latency_p99_ms
      duration        = "300s"
      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_DELTA"
        cross_series_reducer = "REDUCE_PERCENTILE_99"
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "The origin is slow. Check instance count against max_instances, CPU, For you shedding, and whether the CDN hit ratio dropped (a cache-busting flood); README \"Operations\" / Alerts."
  }
}

# The origin's own metrics (serving/http/telemetry.py, OpenTelemetry -> Cloud Monitoring): how long since the stores last
# answered its pointer poll. Pages keep serving from memory meanwhile, so only this says the origin is going stale.
resource "google_monitoring_alert_policy" "origin_catalog_age" {
  project               = var.project_id
  display_name          = "Newsroom: origin catalogue older than ${var.origin_catalog_age_seconds}s"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "origin catalogue age (max over instances)"
    condition_threshold {
      filter          = "metric.type=\"workload.googleapis.com/newsroom.origin.catalog_age\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.origin_catalog_age_seconds
      duration        = "300s"
      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_MAX"
        cross_series_reducer = "REDUCE_MAX"
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "The origin has not reached the stores for a while and serves the last pages it loaded. Check the origin's logs (pointer listing failed), Bigtable and the snapshot bucket reachability from Cloud Run; README \"Operations\" / Alerts."
  }
}

resource "google_monitoring_alert_policy" "watermark_lag" {
  project               = var.project_id
  display_name          = "Newsroom: Dataflow watermark lag above ${var.watermark_lag_seconds}s"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "data watermark age per streaming job"
    condition_threshold {
      filter          = "resource.type=\"dataflow_job\" AND metric.type=\"dataflow.googleapis.com/job/data_watermark_age\" AND resource.label.job_name=monitoring.regex.full_match(\"${var.ingest_job}|${var.stories_job}|${var.covisit_job}\")"
      comparison      = "COMPARISON_GT"
      threshold_value = var.watermark_lag_seconds
      duration        = "600s"
      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_MAX"
        cross_series_reducer = "REDUCE_MAX"
        group_by_fields      = ["resource.label.job_name"]
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "A streaming job falls behind its input. Check its autoscaling (max_workers reached?), a hot key or a stuck step in the job graph, and the subscription backlog; README \"Operations\" / Alerts."
  }
}

resource "google_monitoring_alert_policy" "cdn_purge_failures" {
  project               = var.project_id
  display_name          = "Newsroom: CDN purges failing (more than ${var.cdn_purge_failures_per_15_minutes} in 15 min in an edition)"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "Breaking purges refused per edition"
    condition_threshold {
      filter          = "metric.type=\"${local.metric_prefix}${google_logging_metric.cdn_purge_failures.name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.cdn_purge_failures_per_15_minutes
      duration        = "0s"
      aggregations {
        alignment_period     = "900s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.edition"]
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "The stories job cannot purge Breaking pages at the CDN; its bundle retries, so that edition's Breaking announcements wait. Read error= of newsroom.cdn_purge_failed in the job's logs: HTTP 403 (the stories account lost compute.urlMaps.invalidateCache), 404 (wrong url_map), 429 (Compute's rate: lower cdn_purge_rate); README \"Operations\" / Alerts."
  }
}



resource "google_monitoring_alert_policy" "daily_job_failed" {
  for_each              = local.daily_jobs
  project               = var.project_id
  display_name          = "Newsroom: ${each.value.what} launch or run failed in the last ${each.value.window_hours} h"
  combiner              = "OR"
  severity              = each.value.severity
  notification_channels = var.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "failed launch attempts and run errors of the daily ${each.value.what} job"
    condition_threshold {
      filter          = "metric.type=\"${local.metric_prefix}${google_logging_metric.daily_job_failures[each.key].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = each.value.tolerated
      duration        = "0s"
      aggregations {
        alignment_period     = "${each.value.window_hours * 3600}s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.source"]
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = each.value.runbook
  }
}

moved {
  from = google_monitoring_alert_policy.authority_failed
  to   = google_monitoring_alert_policy.daily_job_failed["authority"]
}

moved {
  from = google_monitoring_alert_policy.userclusters_failed
  to   = google_monitoring_alert_policy.daily_job_failed["userclusters"]
}

# --- dashboard ----------------------------------------------------------------------------------------------

resource "google_monitoring_dashboard" "newsroom" {
  project = var.project_id
  dashboard_json = templatefile("${path.module}/dashboard.json.tftpl", {
    ingest_job                        = var.ingest_job
    stories_job                       = var.stories_job
    covisit_job                       = var.covisit_job
    origin_service                    = var.origin_service
    metric_prefix                     = local.metric_prefix
    release_to_page_metric            = google_logging_metric.release_to_page.name
    discovery_metric                  = google_logging_metric.discovery_latency.name
    pages_published_metric            = google_logging_metric.pages_published.name
    edition_heartbeats_metric         = google_logging_metric.edition_heartbeats.name
    snapshots_rejected_metric         = google_logging_metric.snapshots_rejected.name
    cdn_purge_failures_metric         = google_logging_metric.cdn_purge_failures.name
    authority_failures_metric         = google_logging_metric.daily_job_failures["authority"].name
    authority_job                     = var.authority_job
    userclusters_failures_metric      = google_logging_metric.daily_job_failures["userclusters"].name
    userclusters_job                  = var.userclusters_job
    dead_letter_topic_regex           = local.dead_letter_topic_regex
    dead_letter_subscription_regex    = local.dead_letter_subscription_regex
    release_to_page_p90_seconds       = var.release_to_page_p90_seconds
    discovery_p90_seconds             = var.discovery_p90_seconds
    dead_letter_depth                 = var.dead_letter_depth
    dead_letter_growth_per_10_minutes = var.dead_letter_growth_per_10_minutes
    origin_latency_p99_ms             = var.origin_latency_p99_ms
    origin_catalog_age_seconds        = var.origin_catalog_age_seconds
    watermark_lag_seconds             = var.watermark_lag_seconds
    cdn_purge_failures_per_15_minutes = var.cdn_purge_failures_per_15_minutes
  })
}
