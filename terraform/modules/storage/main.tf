# Cloud Storage for Newsroom:
#   snapshots  page snapshots (pages/{edition}/{section}/v{n}.json and candidate pools), immutable by name; the
#              Bigtable pointer says which version is live. Versioning keeps an accidentally deleted or
#              overwritten object recoverable; lifecycle moves old versions to a colder class and removes
#              noncurrent versions. Current objects are deleted only if snapshot_delete_after_days is set: a quiet
#              page's live version can be old, and deleting it would break "the last good snapshot stays servable".
#   staging    Dataflow staging and temp files (--staging_location, --temp_location); short-lived.
#   templates  Flex Template spec files written by `gcloud dataflow flex-template build`.
#   backfill   analysts' backfill runs (their own --snapshot_bucket and outputs), deleted after a while.
# All buckets: uniform bucket-level access, public access prevention enforced, versioning on.

locals {
  buckets = {
    snapshots = { suffix = "snapshots", noncurrent_days = 30 }
    staging   = { suffix = "dataflow-staging", noncurrent_days = 1 }
    templates = { suffix = "templates", noncurrent_days = 90 }
    backfill  = { suffix = "backfill", noncurrent_days = 1 }
  }
}

resource "google_storage_bucket" "bucket" {
  for_each = local.buckets

  #checkov:skip=CKV_GCP_62:Access is recorded by Cloud Audit Logs (Data Access logs enabled at project level); legacy usage-log buckets add nothing.
  project                     = var.project_id
  name                        = "${var.bucket_prefix}-${each.value.suffix}"
  location                    = var.location
  storage_class               = "STANDARD"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = each.key == "snapshots" || each.key == "templates" ? false : var.force_destroy
  labels                      = var.labels

  versioning {
    enabled = true
  }

  dynamic "encryption" {
    for_each = var.kms_key_name == null ? [] : [var.kms_key_name]
    content {
      default_kms_key_name = encryption.value
    }
  }

  # Old noncurrent versions go away; objects are immutable by name, so noncurrent versions only appear after a
  # delete or a mistaken overwrite.
  lifecycle_rule {
    condition {
      with_state                 = "ARCHIVED"
      days_since_noncurrent_time = each.value.noncurrent_days
    }
    action {
      type = "Delete"
    }
  }

  # Dataflow temp/staging files are useless after a few days.
  dynamic "lifecycle_rule" {
    for_each = each.key == "staging" ? [var.staging_delete_after_days] : []
    content {
      condition {
        age = lifecycle_rule.value
      }
      action {
        type = "Delete"
      }
    }
  }

  # A backfill namespace is compared with production and then dropped.
  dynamic "lifecycle_rule" {
    for_each = each.key == "backfill" ? [var.backfill_delete_after_days] : []
    content {
      condition {
        age = lifecycle_rule.value
      }
      action {
        type = "Delete"
      }
    }
  }

  # Snapshots older than a month are read only on rollback or after a long upstream outage: colder storage.
  dynamic "lifecycle_rule" {
    for_each = each.key == "snapshots" ? [var.snapshot_nearline_after_days] : []
    content {
      condition {
        age        = lifecycle_rule.value
        with_state = "LIVE"
      }
      action {
        type          = "SetStorageClass"
        storage_class = "NEARLINE"
      }
    }
  }

  dynamic "lifecycle_rule" {
    for_each = each.key == "snapshots" && var.snapshot_delete_after_days != null ? [var.snapshot_delete_after_days] : []
    content {
      condition {
        age        = lifecycle_rule.value
        with_state = "LIVE"
      }
      action {
        type = "Delete"
      }
    }
  }
}

# The one container image (templates/Dockerfile): Flex Template launcher, Dataflow worker and origin.
resource "google_artifact_registry_repository" "images" {
  #checkov:skip=CKV_GCP_84:Images hold only open-source code and public model weights; Google-managed encryption is sufficient and CMEK is available through kms_key_name.
  project       = var.project_id
  location      = var.registry_location
  repository_id = var.registry_repository
  format        = "DOCKER"
  description   = "Newsroom image: Flex Template launcher, Dataflow worker and origin."
  kms_key_name  = var.kms_key_name
  labels        = var.labels

  docker_config {
    immutable_tags = true
  }

  cleanup_policy_dry_run = false

  cleanup_policies {
    id     = "keep-recent"
    action = "KEEP"
    most_recent_versions {
      keep_count = 20
    }
  }

  cleanup_policies {
    id     = "delete-old"
    action = "DELETE"
    condition {
      older_than = "7776000s"
    }
  }
}
