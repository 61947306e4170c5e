# The prod environment: the whole system (terraform/modules/stack) with prod's sizes and protection. State lives
# under the prefix newsroom/prod of the bucket given to `terraform init` (versions.tf); the operator's values
# (project, domains, image tag, secrets, notification channels) come from terraform.tfvars (variables.tf).

module "stack" {
  source = "../../modules/stack"

  environment = "prod"

  # What differs between dev and prod: the sizes of docs/operations.md "Sizing" for 2,000,000 articles a day
  # (pipelines/commands/sizing.py; tests/deploy/test_sizing.py keeps them equal).
  bigtable_min_nodes   = 2
  bigtable_max_nodes   = 3
  ingest_max_workers   = 2
  stories_max_workers  = 14
  origin_min_instances = 2
  origin_max_instances = 28

  project_id            = var.project_id
  region                = var.region
  bigtable_zone         = var.bigtable_zone
  domains               = var.domains
  image_tag             = var.image_tag
  backfill_namespaces   = var.backfill_namespaces
  ingest_parameters     = var.ingest_parameters
  stories_parameters    = var.stories_parameters
  origin_secret_env     = var.origin_secret_env
  notification_channels = var.notification_channels

  authority_schedule         = var.authority_schedule
  authority_time_zone        = var.authority_time_zone
  authority_schedule_enabled = var.authority_schedule_enabled
}
