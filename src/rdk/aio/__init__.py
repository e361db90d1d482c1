"""asyncio fronts of rdk's Producer, Consumer and ShareConsumer.

Every wait is an awaitable woken by rdk's own threads, never a thread of the event loop's
default executor. File descriptor waits: ``async for batch in consumer`` (an eventfd the
consumer's fetch or share thread writes, registered with ``loop.add_reader`` while a task
waits). Futures settled by a thread the client already has (``call_soon_threadsafe``):
``await producer.send(...)``, ``flush``, ``stop``, ``partition_count`` and a first
partition-count lookup (the producer's event thread), a consumer's ``stop`` (its fetch or
share thread, after the last fetch) and a consumer's start (the thread that then fetches
for it). Any loop (asyncio's, uvloop), several loops in several threads.
"""

from __future__ import annotations

from ..producer import Delivery, FlushResult, SendResult
from ._consumer import Batch, Consumer
from ._producer import Producer
from ._share import ShareBatch, ShareConsumer

__all__ = ["Batch", "Consumer", "Delivery", "FlushResult", "Producer", "SendResult",
           "ShareBatch", "ShareConsumer"]
