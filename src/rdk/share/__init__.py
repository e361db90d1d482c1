"""rdk.ShareConsumer: Kafka share groups (KIP-932, "queues for Kafka") in kafka-native's style.

librdkafka 2.15's share consumer is a *preview* C API (``rd_kafka_share_*``); this package is
its one user. Shape (see ARCHITECTURE.md "Threads and callbacks"):

- One thread of ours (``rdk-share-<group>``) owns the ``rd_kafka_share_t``: the handle is not
  thread-safe, so every share call (poll, acknowledge, commit, close) is made there. librdkafka
  serves its stats, error, log and acknowledgement-commit callbacks inside those calls, so
  they too run on that thread and never on librdkafka's.
- Explicit acknowledgement mode: every record of a poll must be acknowledged before the next
  poll, so one batch is in flight per consumer: poll -> ``receive_callback(info)`` (or the
  Future/awaitable it returns) -> one C call acknowledges the whole batch -> the next poll
  sends those acknowledgements to the broker along with its fetch. ``stop()`` commits them
  synchronously (``rd_kafka_share_commit_sync``), then closes the handle.
- A batch is copied into contiguous buffers in C (``rdk_share_fill``, src/rdk/_share.c) and
  turned into :class:`ShareMessage` tuples with ``map``/``zip``.

Modules, one role each:

- ``_consumer``: :class:`ShareConsumer`, the public API, over the lifecycle of
  ``rdk._lifecycle``;
- ``_config``: the constructor's argument checks and the handle's librdkafka properties;
- ``_handle``: librdkafka's C callbacks, the group prepared with the Admin API, the handle
  created (conf, callbacks, subscription) and closed (commit sync, destroy);
- ``_thread``: the share thread (poll, deliver, acknowledge, serve the callbacks' findings)
  and the stats counts;
- ``_messages``: :class:`ShareMessage`, :class:`ShareBatch`, :class:`ShareStats`, and a C
  batch turned into ShareMessages.
"""

# besides __all__, rdk.share keeps the names of the module this package replaced: its
# constants, and ShareMessage's unpickler (pickles made before name rdk.share._rebuild_share)
from ._consumer import ShareConsumer
from ._handle import METADATA_TIMEOUT as METADATA_TIMEOUT
from ._messages import ACCEPT as ACCEPT
from ._messages import REJECT as REJECT
from ._messages import RELEASE as RELEASE
from ._messages import ShareBatch, ShareMessage, ShareStats
from ._messages import _rebuild_share as _rebuild_share

__all__ = ["ShareBatch", "ShareConsumer", "ShareMessage", "ShareStats"]
