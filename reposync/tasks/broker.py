"""kombu's Redis transport with one upstream bug worked around: a busy worker must
survive a broker restart.

The symptom (operator report; reproduced by tests/integration/distributed/test_broker_restart.py):
Redis is killed and restarted; every worker that was executing a task logs
``Restoring 1 unacknowledged message(s)`` and then ``CRITICAL Unrecoverable error:
AttributeError("'NoneType' object has no attribute 'hostname'")`` and exits; idle
workers survive. Nothing restarts the worker, so the Run stays stuck.

Root cause, in the installed celery 5.7.0 / kombu 5.7.0 (the latest releases on the
package index, so there is no fixed version to pin to):

1. The worker is busy *and* has a free pool slot (concurrency > 1, prefetch multiplier
   1): one message is delivered and not acknowledged (``task_acks_late``), so it sits
   in the channel's ``QoS._delivered``, and a ``BRPOP`` for the next message is
   outstanding on the same channel (``Channel._in_poll``).
2. Redis dies. ``Consumer.on_connection_error_after_connected``
   (celery/worker/consumer/consumer.py:476) calls ``connection.collect()``. The
   virtual transport has no ``_collect``, so kombu/connection.py:442 closes the default
   channel: ``Channel.close`` (kombu/transport/redis.py:1890) first reads the pending
   BRPOP reply (redis.py:1894), which raises ``ConnectionError`` *before* the channel
   is marked closed or its unacked messages are handled. ``maybe_close_channel``
   swallows the error (connection.py:401-406) and ``_do_close_transport``
   (connection.py:427-430) detaches the transport: ``transport.client = None``.
3. consumer.py:485-487 then closes the same connection again. ``_do_close_self``
   closes the same, still open ``_default_channel`` (connection.py:412); ``_in_poll``
   was reset by ``_brpop_read``'s ``finally`` (redis.py:1496), so this time
   ``Channel.close`` drops its pools and reaches ``restore_unacked_once``
   (kombu/transport/virtual/base.py:806, the "Restoring ..." line), whose
   ``restore_unacked`` (redis.py:493) needs a client: ``_create_client`` ->
   ``pool`` -> ``_get_pool`` -> ``_connparams`` reads
   ``self.connection.client.hostname`` (redis.py:1957-1959) on the detached
   transport: ``AttributeError``.
4. ``ignore_errors`` (kombu/common.py:334) only ignores connection and channel
   errors, so the AttributeError leaves ``on_connection_error_after_connected`` and
   the consumer, and ``WorkController.start`` (celery/worker/worker.py:274) ends the
   worker as an "Unrecoverable error". The cancellation of the running task
   (consumer.py:489) and the reconnect never happen.

An idle worker survives because its ``_delivered`` is empty: ``restore_unacked_once``
returns before it needs a client. A worker with a single pool process survives too:
while busy it has no BRPOP outstanding, so the first close runs to its restore
attempt while the transport is still attached (a dead Redis makes it fail with a plain
ConnectionError, which is ignored) and the second close is a no-op.
It is not ``worker_cancel_long_running_tasks_on_connection_loss`` (its loop runs
after the crash) nor celery #7185/#9250 (py-amqp paths, a different error).

The workaround: a channel whose transport has been detached from its connection
raises a redis ``ConnectionError`` when it needs a new client, instead of the
AttributeError. That is the error every caller on this path already expects
(``maybe_close_channel``, ``ignore_errors``, ``Message.ack_log_error`` /
``reject_log_error`` for a late acknowledgement of a message from the lost
connection: with cancellation switched off, a task that finished after the reconnect
logged ``Couldn't ack ..., reason: network:ConnectionError`` and the worker went on),
so the worker goes on to cancel the unacknowledged running task and reconnect, exactly
as it does in the single-process case.

Why it is safe for at-least-once delivery: a failed restore or a failed late ack
leaves the message where it was, in Redis's ``unacked`` hash (persisted with AOF);
kombu's visibility sweep puts it back on the queue after ``visibility_timeout``, and
before that the recovery tick re-dispatches the Run once its lease expires. The task
that was running is cancelled by Celery (our setting), so it does not keep running in
parallel with a redelivered copy; any later copy is refused or made a no-op by the
lease fences. Nothing is acknowledged that did not finish.

The channel is selected through ``broker_transport`` for ``redis://`` broker URLs
only (see ``reposync.tasks.settings``), which is why worker logs read ``Connected to
reposync.tasks.broker:Transport://...``. Remove this module once kombu closes a
channel whose BRPOP read failed before it detaches the transport (or guards
``_connparams`` itself).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import redis.exceptions
from kombu.transport import redis as kombu_redis

#: The value of Celery's ``broker_transport`` that selects this transport.
TRANSPORT = "reposync.tasks.broker:Transport"

DETACHED = (
    "this Redis channel belongs to a broker connection that was already closed "
    "(connection lost); it cannot open a new one"
)


class Channel(kombu_redis.Channel):
    """kombu's Redis channel; a detached one fails like a lost connection."""

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection is None or self.connection.client is None:
            raise redis.exceptions.ConnectionError(DETACHED)
        # A private kombu method (unannotated) that celery-types' kombu stubs leave out.
        params: dict[str, Any] = super()._connparams(  # type: ignore[misc]
            asynchronous=asynchronous
        )
        return params


class Transport(kombu_redis.Transport):
    """kombu's Redis transport with :class:`Channel`."""

    Channel = Channel


def transport_for(broker_url: str) -> str | None:
    """The ``broker_transport`` to configure for ``broker_url``.

    Only plain ``redis://``: for ``rediss://`` kombu derives TLS defaults from the
    scheme name, which an explicit transport would bypass, and other brokers do not
    have this bug. ``None`` keeps Celery's choice from the URL.
    """
    return TRANSPORT if urlsplit(broker_url).scheme == "redis" else None
