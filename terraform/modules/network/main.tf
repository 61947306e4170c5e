# Network for the Dataflow workers: a VPC with one regional subnet (Private Google Access, flow logs), workers
# without public IPs, and Cloud NAT so the ingest job can fetch publishers' feeds and pages from the internet
# (the jobs' own address guard decides what may be fetched; NAT only gives a way out). The only ingress rule is
# the one Dataflow needs between its own workers (shuffle/streaming ports 12345-12346, by network tag).

resource "google_compute_network" "this" {
  project                 = var.project_id
  name                    = var.name
  auto_create_subnetworks = false
  routing_mode            = "REGIONAL"
}

resource "google_compute_subnetwork" "workers" {
  project                  = var.project_id
  name                     = "${var.name}-${var.region}"
  network                  = google_compute_network.this.id
  region                   = var.region
  ip_cidr_range            = var.cidr
  private_ip_google_access = true

  log_config {
    aggregation_interval = "INTERVAL_10_MIN"
    flow_sampling        = 0.5
    metadata             = "INCLUDE_ALL_METADATA"
  }
}

resource "google_compute_router" "this" {
  project = var.project_id
  name    = "${var.name}-router"
  network = google_compute_network.this.id
  region  = var.region
}

resource "google_compute_router_nat" "this" {
  project                            = var.project_id
  name                               = "${var.name}-nat"
  router                             = google_compute_router.this.name
  region                             = var.region
  nat_ip_allocate_option             = "AUTO_ONLY"
  source_subnetwork_ip_ranges_to_nat = "LIST_OF_SUBNETWORKS"
  # Many polls to the same few hundred hosts: give each VM enough ports.
  min_ports_per_vm = 1024

  subnetwork {
    name                    = google_compute_subnetwork.workers.id
    source_ip_ranges_to_nat = ["ALL_IP_RANGES"]
  }

  log_config {
    enable = true
    filter = "ERRORS_ONLY"
  }
}

resource "google_compute_firewall" "dataflow_internal" {
  project     = var.project_id
  name        = "${var.name}-dataflow-internal"
  network     = google_compute_network.this.id
  description = "Dataflow workers talk to each other on 12345-12346 (streaming and shuffle)."
  direction   = "INGRESS"
  priority    = 1000

  source_tags = ["dataflow"]
  target_tags = ["dataflow"]

  allow {
    protocol = "tcp"
    ports    = ["12345-12346"]
  }

  log_config {
    metadata = "EXCLUDE_ALL_METADATA"
  }
}
