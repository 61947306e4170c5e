output "topic_ids" {
  description = "Topic name -> full topic id (projects/P/topics/T), dead-letter topics included."
  value       = { for k, t in google_pubsub_topic.topic : k => t.id }
}

output "topic_names" {
  description = "Topic key -> topic name as created (namespace prefix included)."
  value       = { for k, t in google_pubsub_topic.topic : k => t.name }
}

output "subscription_ids" {
  description = "Job subscription name -> full subscription id."
  value       = { for k, s in google_pubsub_subscription.job : k => s.id }
}

output "subscription_names" {
  description = "Job subscription key -> subscription name as created."
  value       = { for k, s in google_pubsub_subscription.job : k => s.name }
}

output "undeliverable_topic_ids" {
  description = "Subscription name -> its undeliverable (dead_letter_policy) topic id."
  value       = { for k, t in google_pubsub_topic.undeliverable : k => t.id }
}

output "archive_subscription_ids" {
  description = "Dead-letter topic -> archive subscription id (where replays read from)."
  value       = { for k, s in google_pubsub_subscription.archive : k => s.id }
}

output "schema_ids" {
  description = "Avro schema stem -> Pub/Sub schema id."
  value       = { for k, s in google_pubsub_schema.message : k => s.id }
}
