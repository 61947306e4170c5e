# Bigtable for Newsroom: one instance and the tables of schemas/tables.py TABLES (articles, stories, pointers,
# feeds, profiles) with one GC policy per column family. The GC rules mirror TABLES (max versions per family;
# the stores write each history entry under its own qualifier, so one cell version is all any family needs) plus
# the ages the layout docstring gives (profiles:e, read events, 30 days). GC is asynchronous and the emulator does
# not apply it at all: correctness never depends on it (every read carries a latest-cell filter).
#
# Tables are created for production ("" namespace) and for each analyst namespace in var.namespaces
# ("<namespace>-<table>", stores.StoreConfig.name), so a backfill writes to its own tables and IAM can be
# granted per table rather than on the whole instance.

locals {
  prefixes = concat([""], [for ns in var.namespaces : "${ns}-"])

  tables = merge([
    for prefix in local.prefixes : {
      for table, families in var.tables : "${prefix}${table}" => {
        base     = table
        families = families
      }
    }
  ]...)

  gc_policies = merge([
    for name, t in local.tables : {
      for family, rule in t.families : "${name}/${family}" => {
        table  = name
        family = family
        rules = concat(
          [{ max_version = rule.max_versions }],
          rule.max_age == null ? [] : [{ max_age = rule.max_age }],
        )
      }
    }
  ]...)
}

resource "google_bigtable_instance" "this" {
  #checkov:skip=CKV_GCP_122:Protection is a per-environment input: environments/prod passes true; dev passes false so a dev project can be torn down with terraform destroy.
  project             = var.project_id
  name                = var.instance_id
  display_name        = "Newsroom ${var.instance_id}"
  deletion_protection = var.deletion_protection
  labels              = var.labels

  cluster {
    cluster_id   = "${var.instance_id}-c1"
    zone         = var.zone
    storage_type = "SSD"
    kms_key_name = var.kms_key_name

    autoscaling_config {
      min_nodes      = var.min_nodes
      max_nodes      = var.max_nodes
      cpu_target     = var.cpu_target
      storage_target = 2560
    }
  }
}

resource "google_bigtable_table" "table" {
  for_each = local.tables

  project       = var.project_id
  instance_name = google_bigtable_instance.this.name
  name          = each.key
  # Production tables are protected; analyst namespaces can be dropped when the comparison is done.
  deletion_protection = each.key == each.value.base && var.deletion_protection ? "PROTECTED" : "UNPROTECTED"

  dynamic "column_family" {
    for_each = each.value.families
    content {
      family = column_family.key
    }
  }
}

resource "google_bigtable_gc_policy" "family" {
  for_each = local.gc_policies

  project         = var.project_id
  instance_name   = google_bigtable_instance.this.name
  table           = google_bigtable_table.table[each.value.table].name
  column_family   = each.value.family
  deletion_policy = "ABANDON"

  gc_rules = jsonencode(
    length(each.value.rules) == 1
    ? { rules = each.value.rules }
    : { mode = "union", rules = each.value.rules }
  )
}
