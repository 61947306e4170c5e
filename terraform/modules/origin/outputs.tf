output "ip_address" {
  description = "Global anycast address of the load balancer: the A record of every domain."
  value       = google_compute_global_address.origin.address
}

output "service_uri" {
  description = "Cloud Run URI (reachable only through the load balancer)."
  value       = google_cloud_run_v2_service.origin.uri
}

output "cdn_backend" {
  description = "Backend service with Cloud CDN (for `gcloud compute url-maps invalidate-cdn-cache`)."
  value       = google_compute_backend_service.cdn.name
}

output "url_map" {
  description = "URL map name (cache invalidation: gcloud compute url-maps invalidate-cdn-cache URL_MAP --path ...)."
  value       = google_compute_url_map.api.name
}

output "security_policy" {
  description = "Cloud Armor policy name."
  value       = google_compute_security_policy.edge.name
}
