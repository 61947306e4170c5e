# The stack's outputs, for `terraform output` (README "Operations"). Identical in every environment on purpose.

output "snapshot_bucket" {
  description = "--snapshot_bucket of the jobs and the origin."
  value       = module.stack.snapshot_bucket
}

output "staging_bucket" {
  description = "Dataflow staging/temp bucket (--staging-location, --temp-location)."
  value       = module.stack.staging_bucket
}

output "templates_bucket" {
  description = "Where `gcloud dataflow flex-template build` writes the template specs."
  value       = module.stack.templates_bucket
}

output "backfill_bucket" {
  description = "--snapshot_bucket of backfill runs in their own namespace."
  value       = module.stack.backfill_bucket
}

output "image_repository" {
  description = "Docker path prefix for the Newsroom image."
  value       = module.stack.image_repository
}

output "bigtable_instance" {
  description = "--bigtable_instance of the jobs and the origin."
  value       = module.stack.bigtable_instance
}

output "service_accounts" {
  description = "Service account e-mail per job and for the origin."
  value       = module.stack.service_accounts
}

output "subnetwork" {
  description = "Worker subnet for `gcloud dataflow flex-template run --subnetwork`."
  value       = module.stack.subnetwork
}

output "subscriptions" {
  description = "Job subscription ids."
  value       = module.stack.subscriptions
}

output "topics" {
  description = "Topic ids."
  value       = module.stack.topics
}

output "archive_subscriptions" {
  description = "Dead-letter topic -> archive subscription (replay source)."
  value       = module.stack.archive_subscriptions
}

output "origin_ip" {
  description = "Load balancer address: the A record of every domain."
  value       = module.stack.origin_ip
}

output "url_map" {
  description = "URL map (for CDN cache invalidation)."
  value       = module.stack.url_map
}

output "alert_policies" {
  description = "Alert name -> alert policy id (null before the second apply)."
  value       = module.stack.alert_policies
}

output "dashboard" {
  description = "Monitoring dashboard id (null before the second apply)."
  value       = module.stack.dashboard
}
