"""rdk.Producer: kafka-native's Producer over librdkafka, one C call per send().

``send(topic, partition, payloads)`` validates the whole list, lays it out as one
contiguous buffer plus an int64 offsets array (keys, headers and timestamps likewise
when present) and hands it to ``rdk_produce_batch`` in a single call. Delivery
reports arrive on the Client's event thread already folded in C into runs of
``(send id, count)`` and a list of failures; per-send accounting turns them into
``on_delivery(delivered_count, failures)`` and ``delivery_report_callback(info)``.

The package, by role:

- ``_producer``: the ``Producer`` API (construction, send, transactions, flush, stop), thin;
- ``_core``: the state the API shares with its collaborators, the checks every call makes;
- ``_config``: the constructor's arguments checked, the librdkafka properties they make;
- ``_sending``: send()'s arguments normalised, the one C call, retries under "block";
- ``_transactions``: the transaction calls and the count stop() must wait for;
- ``_lifetime``: draining, flush() and stop() (purge, authentication failures);
- ``_events``: the handlers of the Client's event thread (reports, stats, errors);
- ``_layout``: payloads -> the contiguous buffers one C call reads;
- ``_accounting``: per-send delivery accounting and the callbacks it completes;
- ``_balancers``: partition choice for ``partition=None`` and partition counts;
- ``_types``: the values handed back (``SendResult``, ``FlushResult``, ``Delivery``, callback
  arguments).
"""

from __future__ import annotations

# the choices of Producer(balancer=..., queue_full=...), listed in its docstring
from ._balancers import BALANCERS as BALANCERS
from ._producer import QUEUE_FULL_POLICIES as QUEUE_FULL_POLICIES
from ._producer import Producer
from ._types import Delivery, DeliveryReportInfo, FlushResult, SendResult, StatsInfo

__all__ = [
    "Delivery",
    "DeliveryReportInfo",
    "FlushResult",
    "Producer",
    "SendResult",
    "StatsInfo",
]

# the public names keep the module they have always had (reprs, pickles, docs)
for _public in (Producer, SendResult, Delivery, DeliveryReportInfo, StatsInfo, FlushResult):
    _public.__module__ = __name__
del _public
