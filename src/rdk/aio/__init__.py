"""asyncio fronts of rdk's Producer, Consumer and ShareConsumer.

Every wait is an awaitable woken by rdk's own threads, never a thread of the event loop's
default executor: ``async for batch in consumer`` waits on a file descriptor the consumer's
fetch thread signals (``loop.add_reader``); ``await producer.send(...)`` is a future the
producer's event thread settles (``call_soon_threadsafe``) once every message of the call is
delivered or failed (``Delivery(delivered, failures)``); a start, stop, flush or partition
lookup runs on a thread of rdk's that ends with the call. Any loop (asyncio's, uvloop),
several loops in several threads.
"""

from __future__ import annotations

from ..producer import Delivery, FlushResult, SendResult
from ._consumer import Batch, Consumer
from ._producer import Producer
from ._share import ShareBatch, ShareConsumer

__all__ = ["Batch", "Consumer", "Delivery", "FlushResult", "Producer", "SendResult",
           "ShareBatch", "ShareConsumer"]
