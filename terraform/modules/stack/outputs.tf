output "snapshot_bucket" {
  description = "--snapshot_bucket of the jobs and the origin."
  value       = module.storage.snapshots_bucket
}

output "staging_bucket" {
  description = "Dataflow staging/temp bucket (--staging-location, --temp-location)."
  value       = module.storage.staging_bucket
}

output "templates_bucket" {
  description = "Where `gcloud dataflow flex-template build` writes the template specs."
  value       = module.storage.templates_bucket
}

output "backfill_bucket" {
  description = "--snapshot_bucket of backfill runs in their own namespace."
  value       = module.storage.backfill_bucket
}

output "image_repository" {
  description = "Docker path prefix for the Newsroom image."
  value       = module.storage.image_repository_url
}

output "bigtable_instance" {
  description = "--bigtable_instance of the jobs and the origin."
  value       = module.bigtable.instance_id
}

output "service_accounts" {
  description = "Service account e-mail per job and for the origin."
  value       = module.iam.emails
}

output "subnetwork" {
  description = "Worker subnet for `gcloud dataflow flex-template run --subnetwork`."
  value       = module.network.subnetwork
}

output "subscriptions" {
  description = "Job subscription ids."
  value       = module.pubsub.subscription_ids
}

output "topics" {
  description = "Topic ids."
  value       = module.pubsub.topic_ids
}

output "archive_subscriptions" {
  description = "Dead-letter topic -> archive subscription (replay source)."
  value       = module.pubsub.archive_subscription_ids
}

output "origin_ip" {
  description = "Load balancer address: the A record of every domain."
  value       = local.deploy ? module.origin[0].ip_address : null
}

output "url_map" {
  description = "URL map (for CDN cache invalidation)."
  value       = local.deploy ? module.origin[0].url_map : null
}

output "alert_policies" {
  description = "Alert name -> alert policy id (null before the second apply)."
  value       = local.deploy ? module.monitoring[0].alert_policies : null
}

output "dashboard" {
  description = "Monitoring dashboard id (null before the second apply)."
  value       = local.deploy ? module.monitoring[0].dashboard : null
}
