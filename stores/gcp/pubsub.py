"""The Pub/Sub backend of the message bus: topics and subscriptions ``projects/{project}/topics/{config.name(topic)}``.

Publishing is retried by the Pub/Sub publisher client; the message id is returned once the service has it.
``publish_many`` hands the whole batch to the client before waiting, so the client packs it into few requests.
Pulls are retried by the client library's default policy and wait at most about ``timeout`` seconds.

Pub/Sub topics and subscriptions come from Terraform in production, where the jobs' and the origin's accounts hold
only publisher / subscriber roles: ``ensure_topic`` / ``ensure_subscription`` look before they create and never
fail for lack of admin rights on what exists (see :class:`PubSubBus`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from concurrent.futures import TimeoutError as FutureTimeout

from google.api_core import exceptions as gx

from stores.base import Message, MessageBus, NotFound
from stores.gcp.clients import client, store_errors

PUBLISH_TIMEOUT_S = 60.0

log = logging.getLogger(__name__)

MIN_ACK_DEADLINE_S, MAX_ACK_DEADLINE_S = 10, 600  # Pub/Sub's limits

_ASSUMED_LOCK = threading.Lock()
_ASSUMED: set[str] = set()  # resources already logged as "provisioned by Terraform" (log once per process)


def _assume_provisioned(kind: str, path: str, exc: Exception) -> None:
    with _ASSUMED_LOCK:
        if path in _ASSUMED:
            return
        _ASSUMED.add(path)
    log.info(
        "%s %s: this account may not create it (%s) nor confirm it exists; assuming it is provisioned by "
        "Terraform (terraform/modules/pubsub) with the account's publisher/subscriber grants",
        kind,
        path,
        getattr(exc, "message", exc),
    )


def _exists(get) -> bool | None:
    """``get()`` a Pub/Sub resource: True (exists), False (NotFound) or None (PermissionDenied: may not look)."""
    try:
        get()
        return True
    except gx.NotFound:
        return False
    except gx.Forbidden:  # PermissionDenied (gRPC 403) is a Forbidden
        return None


class PubSubBus(MessageBus):
    """Topics ``config.name(topic)`` in the project; subscriptions likewise. Full ``projects/...`` paths pass
    through unchanged.

    Least privilege: in production the jobs' and the origin's accounts hold only publisher / subscriber (+ viewer on
    their subscriptions) roles on topics and subscriptions that Terraform created. ``ensure_topic`` and
    ``ensure_subscription`` therefore look first (get_topic / get_subscription) and create only what is missing.
    A PermissionDenied on create is taken as "provisioned by Terraform" (logged once per resource at INFO) when
    the resource exists or this account may not look; when the service says it does not exist, ensure_* raise
    NotFound naming the resource, since publishing or pulling would fail anyway.
    """

    def __init__(self, publisher, subscriber, project: str, name=lambda base: base):
        self.publisher = publisher
        self.subscriber = subscriber
        self.project = project
        self._name = name

    def topic_path(self, topic: str) -> str:
        return topic if topic.startswith("projects/") else self.publisher.topic_path(self.project, self._name(topic))

    def subscription_path(self, subscription: str) -> str:
        if subscription.startswith("projects/"):
            return subscription
        return self.subscriber.subscription_path(self.project, self._name(subscription))

    def ensure_topic(self, topic: str) -> None:
        path = self.topic_path(topic)
        with store_errors(f"topic {topic}"):
            exists = _exists(lambda: self.publisher.get_topic(request={"topic": path}))
            if exists:
                return
            try:
                self.publisher.create_topic(request={"name": path})
            except gx.AlreadyExists:
                pass
            except gx.Forbidden as exc:
                if exists is False:
                    raise NotFound(
                        f"topic {path} does not exist and this account may not create it ({exc.message}); "
                        "create it with Terraform (terraform/modules/pubsub) or `newsroom stack up`"
                    ) from exc
                _assume_provisioned("topic", path, exc)

    def ensure_subscription(self, topic: str, subscription: str, ack_deadline_s: int = 60) -> None:
        """Idempotent. The ack deadline is clamped to Pub/Sub's 10..600 s. An existing subscription is left as it
        is (its topic is not touched, so a subscriber-only account needs no rights on the topic)."""
        path = self.subscription_path(subscription)
        with store_errors(f"subscription {subscription}"):
            exists = _exists(lambda: self.subscriber.get_subscription(request={"subscription": path}))
        if exists:
            return
        self.ensure_topic(topic)
        deadline = max(MIN_ACK_DEADLINE_S, min(MAX_ACK_DEADLINE_S, int(ack_deadline_s)))
        with store_errors(f"subscription {subscription}"):
            try:
                self.subscriber.create_subscription(
                    request={"name": path, "topic": self.topic_path(topic), "ack_deadline_seconds": deadline}
                )
            except gx.AlreadyExists:
                pass
            except gx.Forbidden as exc:
                if exists is False:
                    raise NotFound(
                        f"subscription {path} does not exist and this account may not create it ({exc.message}); "
                        "create it with Terraform (terraform/modules/pubsub) or `newsroom stack up`"
                    ) from exc
                _assume_provisioned("subscription", path, exc)

    def publish(self, topic: str, data: bytes, attributes: dict | None = None, ordering_key: str | None = None) -> str:
        """With ``ordering_key``: published through a second publisher client created with
        ``PublisherOptions(enable_message_ordering=True)`` (ordering must be enabled on the client, and it costs
        batching for keyed messages only; keyless messages keep the plain client). Subscribers see the order only on
        subscriptions with message ordering enabled (terraform/modules/pubsub, items-raw). After a failed keyed
        publish the client pauses that key; it is resumed here so that the next publish (a retry) goes out."""
        if not ordering_key:
            return self.publish_many(topic, [(data, attributes)])[0]
        path = self.topic_path(topic)
        publisher = self._ordered()
        attrs = {str(k): str(v) for k, v in (attributes or {}).items()}
        with store_errors(f"publish to {topic}"):
            future = publisher.publish(path, bytes(data), ordering_key=ordering_key, **attrs)
        try:
            return future.result(timeout=PUBLISH_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - mapped below
            publisher.resume_publish(path, ordering_key)
            if isinstance(exc, gx.NotFound):
                raise NotFound(f"no topic {topic!r}; create it with ensure_topic or `newsroom stack up`") from exc
            with store_errors(f"publish to {topic}"):
                raise

    def _ordered(self):
        return client("publisher-ordered", self.project)  # process-wide, like the plain publisher

    def publish_many(self, topic: str, items: list[tuple[bytes, dict]]) -> list[str]:
        """An ``ordering_key`` attribute is taken as the message's ordering key (as ``publish`` does). Hands every message to the publisher client first (it batches them into few requests), then waits on all
        the futures. Waits at most PUBLISH_TIMEOUT_S without progress: once one future times out, the others are
        only checked. If any message failed, raises (NotFound for a missing topic, else StoreError) after all
        were waited on; the others may have been published, and publishing the batch again is safe (consumers are
        idempotent, delivery is at least once)."""
        path = self.topic_path(topic)
        futures = []
        keys = set()
        with store_errors(f"publish to {topic}"):  # publish() only queues; it raises for invalid messages
            for data, attributes in items:
                attrs = {str(k): str(v) for k, v in (attributes or {}).items()}
                key = attrs.pop("ordering_key", None)  # see publish(): keyed messages go through the ordered client
                if key:
                    keys.add(key)
                    futures.append(self._ordered().publish(path, bytes(data), ordering_key=key, **attrs))
                else:
                    futures.append(self.publisher.publish(path, bytes(data), **attrs))
        ids: list[str] = []
        errors: list[BaseException] = []
        timeout = PUBLISH_TIMEOUT_S
        for future in futures:
            try:
                ids.append(future.result(timeout=timeout))
            except Exception as exc:  # noqa: BLE001 - mapped below, after every future was waited on
                errors.append(exc)
                if isinstance(exc, (TimeoutError, FutureTimeout)):
                    timeout = 0.0
        if not errors:
            return ids
        for key in keys:  # a failed keyed publish pauses its key: resume so the bundle's retry goes out
            self._ordered().resume_publish(path, key)
        first = errors[0]
        if isinstance(first, gx.NotFound):
            raise NotFound(f"no topic {topic!r}; create it with ensure_topic or `newsroom stack up`") from first
        what = f"publish to {topic}: {len(errors)} of {len(futures)} messages failed"
        with store_errors(what):  # maps client-library errors to StoreError, re-raises anything else
            raise first

    def pull(self, subscription: str, max_messages: int = 100, timeout: float = 1.0) -> list[Message]:
        # A unary pull on an empty subscription blocks until its own deadline (the emulator returns a little
        # earlier): ask with the remaining time and poll until messages arrive or ``timeout`` is spent.
        path = self.subscription_path(subscription)
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            remaining = deadline - time.monotonic()
            with store_errors(f"pull {subscription}"):
                try:
                    resp = self.subscriber.pull(
                        request={"subscription": path, "max_messages": int(max_messages)},
                        timeout=max(0.5, remaining),
                        retry=None,
                    )
                    received = list(resp.received_messages)
                except gx.DeadlineExceeded:
                    received = []
            if received:
                return [
                    Message(
                        message_id=r.message.message_id,
                        ack_id=r.ack_id,
                        data=bytes(r.message.data),
                        attributes=dict(r.message.attributes),
                    )
                    for r in received
                ]
            if time.monotonic() >= deadline:
                return []
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def ack(self, subscription: str, ack_ids: Iterable[str]) -> None:
        ids = list(ack_ids)
        path = self.subscription_path(subscription)
        for i in range(0, len(ids), 1000):  # the API's limit per request is well above; keep requests small
            with store_errors(f"ack {subscription}"):
                self.subscriber.acknowledge(request={"subscription": path, "ack_ids": ids[i : i + 1000]})


def open_pubsub_bus(config) -> PubSubBus:
    """The Pub/Sub bus alone (``--bus=pubsub`` with embedded tables and snapshots)."""
    project = config.gcp_project
    return PubSubBus(client("publisher", project), client("subscriber", project), project, config.name)
