output "snapshots_bucket" {
  description = "Snapshot bucket name (the jobs' and origin's --snapshot_bucket)."
  value       = google_storage_bucket.bucket["snapshots"].name
}

output "staging_bucket" {
  description = "Dataflow staging/temp bucket name."
  value       = google_storage_bucket.bucket["staging"].name
}

output "templates_bucket" {
  description = "Flex Template spec bucket name."
  value       = google_storage_bucket.bucket["templates"].name
}

output "backfill_bucket" {
  description = "Bucket for analysts' backfill namespaces."
  value       = google_storage_bucket.bucket["backfill"].name
}

output "bucket_names" {
  description = "Bucket key -> name."
  value       = { for k, b in google_storage_bucket.bucket : k => b.name }
}

output "registry_repository" {
  description = "Artifact Registry repository id."
  value       = google_artifact_registry_repository.images.repository_id
}

output "image_repository_url" {
  description = "Docker path prefix of the repository: <location>-docker.pkg.dev/<project>/<repository>."
  value       = "${var.registry_location}-docker.pkg.dev/${var.project_id}/${google_artifact_registry_repository.images.repository_id}"
}
