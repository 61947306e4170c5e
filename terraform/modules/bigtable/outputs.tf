output "instance_id" {
  description = "Bigtable instance id (the jobs' --bigtable_instance)."
  value       = google_bigtable_instance.this.name
}

output "table_names" {
  description = "Every table created, production and namespaced."
  value       = sort(keys(google_bigtable_table.table))
}
