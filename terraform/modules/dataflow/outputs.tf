output "job_id" {
  description = "Dataflow job id."
  value       = google_dataflow_flex_template_job.job.job_id
}

output "state" {
  description = "Dataflow job state at the last apply."
  value       = google_dataflow_flex_template_job.job.state
}
