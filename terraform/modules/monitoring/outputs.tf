output "alert_policies" {
  description = "Alert name -> alert policy id."
  value = {
    release_to_page     = google_monitoring_alert_policy.release_to_page.name
    discovery           = google_monitoring_alert_policy.discovery.name
    dead_letter_depth   = google_monitoring_alert_policy.dead_letter_depth.name
    dead_letter_growth  = google_monitoring_alert_policy.dead_letter_growth.name
    rejected_snapshots  = google_monitoring_alert_policy.rejected_snapshots.name
    stuck_pointers      = google_monitoring_alert_policy.stuck_pointers.name
    origin_5xx          = google_monitoring_alert_policy.origin_5xx.name
    origin_latency      = google_monitoring_alert_policy.origin_latency.name
    origin_catalog_age  = google_monitoring_alert_policy.origin_catalog_age.name
    watermark_lag       = google_monitoring_alert_policy.watermark_lag.name
    cdn_purge_failures  = google_monitoring_alert_policy.cdn_purge_failures.name
    authority_failed    = google_monitoring_alert_policy.daily_job_failed["authority"].name
    userclusters_failed = google_monitoring_alert_policy.daily_job_failed["userclusters"].name
  }
}

output "dashboard" {
  description = "Dashboard id (Cloud Console: Monitoring > Dashboards > Newsroom)."
  value       = google_monitoring_dashboard.newsroom.id
}

output "log_metrics" {
  description = "Log-based metric types the jobs feed (logging.googleapis.com/user/...)."
  value = [for m in [
    google_logging_metric.pages_published,
    google_logging_metric.release_to_page,
    google_logging_metric.snapshots_rejected,
    google_logging_metric.discovery_latency,
    google_logging_metric.cdn_purge_failures,
    google_logging_metric.daily_job_failures["authority"],
    google_logging_metric.daily_job_failures["userclusters"],
  ] : "${local.metric_prefix}${m.name}"]
}
