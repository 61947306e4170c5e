# Pub/Sub for Newsroom: one topic per entry of schemas/tables.py TOPICS, each with the Avro schema of the
# message it carries (schemas/avro/*.avsc, attached with BINARY encoding so a malformed publish is refused at
# the topic), per-stage application dead-letter topics (DeadLetter records the jobs route bad input to), and the
# subscriptions the jobs read. Every subscription carries a dead_letter_policy: after max_delivery_attempts the
# message is forwarded to "<subscription>-undeliverable", a topic with the SAME schema as the source (Pub/Sub
# validates forwarded messages too), so a replay is a plain republish to the source topic.
#
# Topics without a subscription drop what is published to them, so every dead-letter topic gets an archive
# subscription that keeps messages for the retention window.

locals {
  # "dead-letter" (from TOPICS) plus "dead-letter-<stage>" for each stage, all DeadLetter records.
  dead_letter_topics = {
    for stage in var.dead_letter_stages : "dead-letter-${stage}" => "dead_letter"
  }

  all_topics = merge(var.topics, local.dead_letter_topics)

  # Avro schema files are read once per message type, not once per topic.
  schema_files = toset(values(local.all_topics))

  undeliverable_topics = {
    for name, sub in var.subscriptions : "${name}-undeliverable" => local.all_topics[sub.topic]
  }

  archive_subscriptions = {
    for topic in concat(keys(local.dead_letter_topics), ["dead-letter"], keys(local.undeliverable_topics)) :
    "${topic}-archive" => topic
  }

  prefix = var.namespace == "" ? "" : "${var.namespace}-"
}

resource "google_pubsub_schema" "message" {
  for_each = local.schema_files

  project    = var.project_id
  name       = "${local.prefix}${replace(each.key, "_", "-")}"
  type       = "AVRO"
  definition = file("${var.schema_dir}/${each.key}.avsc")
}

resource "google_pubsub_topic" "topic" {
  for_each = local.all_topics

  project                    = var.project_id
  name                       = "${local.prefix}${each.key}"
  labels                     = var.labels
  message_retention_duration = var.topic_retention
  kms_key_name               = var.kms_key_name

  schema_settings {
    schema   = google_pubsub_schema.message[each.value].id
    encoding = "BINARY"
  }
}

resource "google_pubsub_topic" "undeliverable" {
  for_each = local.undeliverable_topics

  project                    = var.project_id
  name                       = "${local.prefix}${each.key}"
  labels                     = var.labels
  message_retention_duration = var.topic_retention
  kms_key_name               = var.kms_key_name

  schema_settings {
    schema   = google_pubsub_schema.message[each.value].id
    encoding = "BINARY"
  }
}

resource "google_pubsub_subscription" "job" {
  for_each = var.subscriptions

  project = var.project_id
  name    = "${local.prefix}${each.key}"
  topic   = google_pubsub_topic.topic[each.value.topic].id
  labels  = var.labels

  ack_deadline_seconds = each.value.ack_deadline_seconds
  # Messages with the same ordering key (items-raw: the canonical URL) are delivered in publish order.
  enable_message_ordering = each.value.enable_message_ordering
  # Acked messages are kept too, so `gcloud pubsub subscriptions seek --time=...` can replay a whole day
  # (replays are idempotent by design: change ids and conditional writes).
  retain_acked_messages      = true
  message_retention_duration = var.subscription_retention

  expiration_policy {
    ttl = "" # never expire a job's subscription because the job was stopped for a while
  }

  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.undeliverable["${each.key}-undeliverable"].id
    max_delivery_attempts = each.value.max_delivery_attempts
  }
}

resource "google_pubsub_subscription" "archive" {
  for_each = local.archive_subscriptions

  project = var.project_id
  name    = "${local.prefix}${each.key}"
  topic = (
    contains(keys(local.undeliverable_topics), each.value)
    ? google_pubsub_topic.undeliverable[each.value].id
    : google_pubsub_topic.topic[each.value].id
  )
  labels = var.labels

  ack_deadline_seconds       = 60
  retain_acked_messages      = true
  message_retention_duration = var.subscription_retention

  expiration_policy {
    ttl = ""
  }
}

# Pub/Sub forwards undeliverable messages as its own service agent: it must be allowed to publish to the
# undeliverable topics and to acknowledge (subscribe) on the source subscriptions. Nothing else is granted to it.
data "google_project" "this" {
  project_id = var.project_id
}

locals {
  pubsub_agent = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_pubsub_topic_iam_member" "agent_publishes_undeliverable" {
  for_each = local.undeliverable_topics

  project = var.project_id
  topic   = google_pubsub_topic.undeliverable[each.key].name
  role    = "roles/pubsub.publisher"
  member  = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "agent_acks_source" {
  for_each = var.subscriptions

  project      = var.project_id
  subscription = google_pubsub_subscription.job[each.key].name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}
