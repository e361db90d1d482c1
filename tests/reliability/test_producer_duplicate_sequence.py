"""What an idempotent producer reports when the broker answers a Produce with
DUPLICATE_SEQUENCE_NUMBER for a batch it never stored (librdkafka's mock cluster, the
error pushed onto the request).

librdkafka (rdkafka_request.c, the DUPLICATE_SEQUENCE_NUMBER case of the Produce error
handling) takes that answer as "an earlier attempt of this batch was stored": the
messages are delivered, persisted, at offsets -1, 0, 1... (the error carries no offset, and
rd_kafka_msgq_set_metadata numbers the batch's messages up from it),
and it says so only in a debug line (DUPSEQ). A broker that answers so for a batch it did
not store loses that batch with nothing failed: rdk logs a warning naming the error, the
count and the first message's topic and partition."""

from __future__ import annotations

import logging

import pytest
from helpers import read_log

from rdk import Producer
from rdk.mock import MockCluster

WARNING = "DUPLICATE_SEQUENCE_NUMBER"


def _settled(results: list):
    return lambda delivered, failures: results.append((delivered, failures))


@pytest.mark.timeout(60)
def test_duplicate_sequence_answer_counts_as_delivered_and_is_logged(caplog):
    caplog.set_level(logging.WARNING, logger="rdk")
    with MockCluster(1) as mc:
        mc.create_topic("dupseq", 2)
        results: list = []
        with Producer(mc.bootstrap_servers, queue_buffering_max_ms=1,
                      driver_options={"enable.idempotence": True, "log_level": 3}) as producer:
            producer.send("dupseq", 1, [b"stored-1"], on_delivery=_settled(results))
            assert producer.flush(20).queued == 0
            assert [r for r in caplog.records if WARNING in r.getMessage()] == []

            mc.push_request_errors("Produce", ["DUPLICATE_SEQUENCE_NUMBER"])
            producer.send("dupseq", 1, [b"never-stored-1", b"never-stored-2"],
                          on_delivery=_settled(results))
            flushed = producer.flush(20)
            # librdkafka's behaviour: delivered, nothing failed
            assert (flushed.queued, flushed.failed) == (0, 0)
            assert results[1] == (2, [])

            producer.send("dupseq", 1, [b"stored-2"], on_delivery=_settled(results))
            assert producer.flush(20).queued == 0
        assert results == [(1, []), (2, []), (1, [])]
        # ... yet the two messages are not in the log
        log = read_log(mc.bootstrap_servers, "dupseq", [1])
        assert [v for _, _, v in log[1]] == [b"stored-1", b"stored-2"]
    warned = [r for r in caplog.records if WARNING in r.getMessage()]
    assert len(warned) == 1, [r.getMessage() for r in caplog.records]
    assert warned[0].levelno == logging.WARNING
    assert warned[0].getMessage().startswith(
        "2 message(s) in 1 batch(es) (the first to dupseq [1]) were reported delivered on a "
        "DUPLICATE_SEQUENCE_NUMBER answer, without an offset")


@pytest.mark.timeout(60)
def test_acks_0_deliveries_without_offsets_are_not_taken_for_duplicates(caplog):
    """acks=0: every message is delivered without an offset (possibly persisted): no
    warning."""
    caplog.set_level(logging.WARNING, logger="rdk")
    with MockCluster(1) as mc:
        mc.create_topic("acks0", 1)
        results: list = []
        with Producer(mc.bootstrap_servers, queue_buffering_max_ms=1,
                      driver_options={"log_level": 3}, topic_options={"acks": 0}) as producer:
            producer.send("acks0", 0, [b"a", b"b", b"c"], on_delivery=_settled(results))
            assert producer.flush(20).queued == 0
        assert results == [(3, [])]
        assert [v for _, _, v in read_log(mc.bootstrap_servers, "acks0", [0])[0]] == [b"a", b"b", b"c"]
    assert [r.getMessage() for r in caplog.records if WARNING in r.getMessage()] == []


@pytest.mark.timeout(60)
def test_without_idempotence_the_answer_fails_the_messages_by_name(caplog):
    """librdkafka's default (enable.idempotence=false, also the Spark sink's and the main
    job's): the batch carries no producer id, and the same answer fails its messages."""
    caplog.set_level(logging.WARNING, logger="rdk")
    with MockCluster(1) as mc:
        mc.create_topic("plain", 1)
        results: list = []
        with Producer(mc.bootstrap_servers, queue_buffering_max_ms=1,
                      driver_options={"log_level": 3}) as producer:
            mc.push_request_errors("Produce", ["DUPLICATE_SEQUENCE_NUMBER"])
            producer.send("plain", 0, [b"x"], on_delivery=_settled(results))
            flushed = producer.flush(20)
        assert (flushed.queued, flushed.failed) == (0, 1)
        [(delivered, [(message, err)])] = results
        assert (delivered, message.value, err.name) == (0, b"x", "DUPLICATE_SEQUENCE_NUMBER")
        assert read_log(mc.bootstrap_servers, "plain", [0]) == {0: []}
    assert [r.getMessage() for r in caplog.records if "without an offset" in r.getMessage()] == []
