"""rdk.Consumer: kafka-native's Consumer over librdkafka.

Explicit partitions (worker slots) or a Kafka consumer group (``group_id``), progress in
kafka-native's offset files, the group or any OffsetStore, pause/resume that also stops
fetching, seek, one topic or several, and periodic stats.

Pipeline (no Python code per message on the C fast path):

- a **fetch thread** calls the C batch helper (one call copies up to
  ``max_messages_per_callback`` messages into contiguous buffers, with the GIL released)
  and queues the filled buffer (a few rotate), so it goes straight back to fetching;
- a **delivery thread** turns a buffer into :class:`rdk.Message` tuples in one call
  (``rdk._messages``, C; or ``map``/``zip`` in Python), gives the buffer back, hands the
  batch to ``receive_callback`` and settles it when the callback returns (or when the
  Future / awaitable it returned completes);
- an **offset thread** stores the contiguous settled prefix per partition, coalescing.

Modules, one role each:

- ``_consumer``: :class:`Consumer`, the public API and lifecycle;
- ``_pipeline``: the fetch thread and its rotating pool of batch buffers;
- ``_delivery``: the delivery thread (callback mode) and the in-flight bound;
- ``_batch``: :class:`Batch`, and a C batch buffer turned into Messages (C or Python);
- ``_tracker``: which offsets may be recorded (the settled prefix per partition);
- ``_group``: group mode (rebalances on a thread of ours, the group's offset store) and
  the per-topic trackers and stores of several topics;
- ``_beyond_end``: on_offset_out_of_range where the broker does not report it (Tansu);

The asyncio loop that runs awaitables the callback returns is ``rdk._loop_thread``'s,
shared with the share consumer.
"""

from ._batch import Batch
from ._consumer import METADATA_TIMEOUT, Consumer
from ._group import REVOKE_TIMEOUT

__all__ = ["METADATA_TIMEOUT", "REVOKE_TIMEOUT", "Batch", "Consumer"]
