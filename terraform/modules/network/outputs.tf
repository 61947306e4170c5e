output "network" {
  description = "VPC self link."
  value       = google_compute_network.this.self_link
}

output "subnetwork" {
  description = "Worker subnet self link (the Dataflow jobs' subnetwork)."
  value       = google_compute_subnetwork.workers.self_link
}
