output "scheduler_job" {
  description = "Cloud Scheduler job id (projects/<p>/locations/<region>/jobs/<name>), for `gcloud scheduler jobs run|pause|resume`."
  value       = google_cloud_scheduler_job.launch.id
}

output "launch_request" {
  description = "The Flex Template launch request the scheduler POSTs, for review."
  value       = local.launch_request
}
