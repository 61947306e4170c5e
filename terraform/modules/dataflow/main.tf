# One Newsroom Dataflow job launched from its Flex Template (templates/<job>/metadata.json, image built from
# templates/Dockerfile). Streaming jobs run on Streaming Engine and are drained, never cancelled, when Terraform
# replaces or destroys them: draining finishes in-flight bundles and acks, so no item is lost or half-applied.
# Workers have no public IP (Cloud NAT gives the ingest job its way out) and run as the job's own service
# account from the iam module. Autoscaling is throughput-based between num_workers and max_workers.

locals {
  # Parameters every job takes from StoreOptions; the job's own flags come in var.parameters.
  store_parameters = {
    backend           = "gcp"
    bigtable_instance = var.bigtable_instance
    snapshot_bucket   = var.snapshot_bucket
    namespace         = var.namespace
  }
}

resource "google_dataflow_flex_template_job" "job" {
  provider = google-beta

  project                 = var.project_id
  region                  = var.region
  name                    = var.name
  container_spec_gcs_path = var.container_spec_gcs_path
  sdk_container_image     = var.image
  launcher_machine_type   = var.launcher_machine_type

  service_account_email = var.service_account_email
  temp_location         = "gs://${var.staging_bucket}/tmp/${var.name}"
  staging_location      = "gs://${var.staging_bucket}/staging/${var.name}"
  subnetwork            = var.subnetwork
  ip_configuration      = "WORKER_IP_PRIVATE"
  kms_key_name          = var.kms_key_name

  enable_streaming_engine = var.streaming
  autoscaling_algorithm   = "THROUGHPUT_BASED"
  num_workers             = var.num_workers
  max_workers             = var.max_workers
  machine_type            = var.machine_type

  # Streaming jobs drain (finish in-flight work, stop pulling) on destroy/replace; batch jobs are cancelled.
  on_delete                    = var.streaming ? "drain" : "cancel"
  skip_wait_on_job_termination = false

  parameters = merge(
    { for k, v in local.store_parameters : k => v if v != "" },
    var.parameters,
  )

  labels = merge(var.labels, { job = var.name })
}
