output "emails" {
  description = "Account key (ingest, stories, backfill, covisit, authority, scheduler, origin) -> service account email."
  value       = { for k, sa in google_service_account.sa : k => sa.email }
}

output "grants" {
  description = "The grants as data (account -> resource kind -> resource -> roles), for review."
  value       = local.grants
}
