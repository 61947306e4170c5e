# A batch Newsroom Dataflow job launched on a schedule: a Cloud Scheduler job POSTs a Flex Template launch request
# (projects.locations.flexTemplates.launch) to the Dataflow API, authenticated with an OAuth token of its own
# launcher account (iam module: `scheduler`, allowed to create jobs and to act as the job's account only). The job
# then runs exactly as the README's `gcloud dataflow flex-template run` would launch it: the job's own service
# account, the worker subnet without public IPs, temp and staging under the staging bucket, an autoscaling ceiling.
#
# Its own module, not the dataflow one: the dataflow module keeps a job running under Terraform
# (google_dataflow_flex_template_job, drained or cancelled on change); this one only holds a request body and a
# timetable, and Terraform never sees the runs. Used for `newsroom authority` (README "Operations" 11).
#
# A static body cannot give each run a unique name, so every run is named var.name: Dataflow accepts a batch job
# name again once the previous job with that name has finished. A run that starts while the previous one is still
# running is refused (409 ALREADY_EXISTS) and retried by the retry policy below; never two runs at once.

locals {
  launch_url = "https://dataflow.googleapis.com/v1b3/projects/${var.project_id}/locations/${var.region}/flexTemplates:launch"

  launch_request = {
    launchParameter = {
      jobName              = var.name
      containerSpecGcsPath = var.container_spec_gcs_path
      parameters           = var.parameters
      environment = {
        serviceAccountEmail  = var.service_account_email
        subnetwork           = var.subnetwork
        ipConfiguration      = "WORKER_IP_PRIVATE"
        stagingLocation      = "gs://${var.staging_bucket}/staging/${var.name}"
        tempLocation         = "gs://${var.staging_bucket}/tmp/${var.name}"
        sdkContainerImage    = var.image
        maxWorkers           = var.max_workers
        machineType          = var.machine_type
        launcherMachineType  = var.launcher_machine_type
        additionalUserLabels = merge(var.labels, { job = var.name })
      }
    }
  }
}

resource "google_cloud_scheduler_job" "launch" {
  project     = var.project_id
  region      = var.region
  name        = var.name
  description = "Launches the Dataflow Flex Template ${var.container_spec_gcs_path} as ${var.name} (terraform/modules/schedule)."

  schedule         = var.schedule
  time_zone        = var.time_zone
  paused           = !var.enabled
  attempt_deadline = var.attempt_deadline

  retry_config {
    retry_count          = var.retry_count
    min_backoff_duration = var.min_backoff
    max_backoff_duration = var.max_backoff
    max_doublings        = 3
  }

  http_target {
    http_method = "POST"
    uri         = local.launch_url
    headers     = { "Content-Type" = "application/json" }
    body        = base64encode(jsonencode(local.launch_request))

    oauth_token {
      service_account_email = var.launcher_service_account_email
      scope                 = "https://www.googleapis.com/auth/cloud-platform"
    }
  }
}
