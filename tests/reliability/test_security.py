"""Security: TLS through stunnel in front of Tansu (server and mutual TLS), SASL settings
reaching librdkafka, and secrets never leaking into logs, messages or reprs. Native TLS,
SASL, OAUTHBEARER (oauth_cb), authentication failures and ACLs against Apache Kafka:
test_auth_errors.py."""

from __future__ import annotations

import logging
import threading
import time
import uuid

import pytest
from helpers import wait_until

from rdk import Admin, ConfigError, Consumer, Message, Producer
from rdk.errors import KafkaError

SECRET = "Sup3r-s3cret-PASSWORD-8472"


def refused(bootstrap: str, options: dict, log, *texts: str, timeout: float = 60.0) -> KafkaError:
    """Assert that metadata cannot be had over ``options`` and that librdkafka said why. The
    timeout is long: a refusal ends the wait at once (rdk's auth/TLS failure check), so a
    _TIMED_OUT means it went unnoticed."""
    with Admin(bootstrap, options) as admin:
        with pytest.raises(KafkaError) as ei:
            admin.list_topics(timeout=timeout)
        wait_until(lambda: all(t in log.text for t in texts), 10,
                   what=f"librdkafka to log {texts!r}")
    return ei.value


def test_tls_client_trusting_the_ca_lists_and_creates_topics(tls_site):
    with Admin(tls_site.bootstrap, tls_site.ssl_options()) as admin:
        admin.create_topics({"tls-topic": 3}, exist_ok=True)
        topics = {t.name: t for t in admin.list_topics(timeout=10)}
    assert len(topics["tls-topic"].partitions) == 3
    # the traffic went through the TLS terminator
    assert "s_connect: connected" in tls_site.stunnel.output()


def test_tls_producer_and_consumer_round_trip_binary_messages(tls_site, tmp_path):
    with Admin(tls_site.bootstrap, tls_site.ssl_options()) as admin:
        admin.create_topics({"tls-rt": 2}, exist_ok=True)
    sent = [Message(b"\x00tls-%d\xff" % i, key=b"k%d" % i, headers=[("h", b"\x00")])
            for i in range(500)]
    with Producer(tls_site.bootstrap, driver_options=tls_site.ssl_options()) as producer:
        assert producer.send("tls-rt", 1, sent).enqueued == len(sent)
        assert producer.flush(30) == 0
    got: list = []
    done = threading.Event()

    def receive(batch) -> None:
        got.extend(batch.messages)
        if len(got) >= len(sent):
            done.set()

    with Consumer(tls_site.bootstrap, "tls-rt", str(tmp_path), receive,
                  driver_options=tls_site.ssl_options()) as consumer:
        consumer.start()
        assert done.wait(30), f"{len(got)} of {len(sent)} messages over TLS"
    assert [(m.value, m.key, m.headers) for m in got] == [(m.value, m.key, m.headers) for m in sent]
    assert [m.offset for m in got] == list(range(len(sent)))


def test_tls_with_a_ca_that_did_not_sign_the_server_is_refused(tls_site, rdk_log):
    options = {"security.protocol": "SSL", "ssl.ca.location": str(tls_site.other.ca.cert)}
    err = refused(tls_site.bootstrap, options, rdk_log, "certificate verify failed")
    assert err.name == "_SSL", err


def test_tls_server_certificate_for_another_host_is_refused_by_name_check(tls_site, rdk_log):
    bootstrap = tls_site.extra_listener(tls_site.wrong_name).bootstrap
    options = tls_site.ssl_options(**{"ssl.endpoint.identification.algorithm": "https"})
    refused(bootstrap, options, rdk_log, "certificate verify failed")
    # the same certificate is accepted once the host name check is off: the name was the cause
    options["ssl.endpoint.identification.algorithm"] = "none"
    with Admin(bootstrap, options) as admin:
        assert isinstance(admin.list_topics(timeout=10), list)


def test_plaintext_client_is_refused_by_the_tls_listener(tls_site, rdk_log):
    before = tls_site.stunnel.output().count("wrong version number")
    refused(tls_site.bootstrap, {"security.protocol": "PLAINTEXT"}, rdk_log)
    # stunnel saw a client that did not speak TLS
    wait_until(lambda: tls_site.stunnel.output().count("wrong version number") > before, 10,
               what="stunnel to log the failed TLS handshake")


@pytest.fixture(scope="module")
def mtls(tls_site):
    """A listener that demands a client certificate signed by the test CA (stunnel verify=2)."""
    return tls_site.extra_listener(tls_site.server, client_ca=tls_site.pki.ca.cert,
                                   advertise_self=True)


def client_cert_options(site, identity) -> dict:
    return site.ssl_options(**{"ssl.certificate.location": str(identity.cert),
                               "ssl.key.location": str(identity.key)})


def test_mutual_tls_with_a_client_certificate_from_the_ca_connects(tls_site, mtls):
    options = client_cert_options(tls_site, tls_site.client)
    tls_site.wait_ready(mtls.bootstrap, options)
    with Admin(mtls.bootstrap, options) as admin:
        admin.create_topics({"mtls-topic": 2}, exist_ok=True)
        names = [t.name for t in admin.list_topics(timeout=10)]
    assert "mtls-topic" in names


def test_mutual_tls_without_a_client_certificate_is_refused(tls_site, mtls, rdk_log):
    before = mtls.output().count("peer did not return a certificate")
    # Known gap: the server's refusal (a TLS alert after the handshake) is not noticed, and
    # list_topics waits out its timeout: a short one keeps the suite's time; what is proven is
    # the refusal, logged, and no metadata
    refused(mtls.bootstrap, tls_site.ssl_options(), rdk_log, "alert certificate required",
            timeout=15.0)
    wait_until(lambda: mtls.output().count("peer did not return a certificate") > before, 10,
               what="stunnel to refuse the certificate-less client")


def test_mutual_tls_with_a_client_certificate_from_another_ca_is_refused(tls_site, mtls, rdk_log):
    # librdkafka sees that the server trusts no issuer of this certificate and withholds it;
    # the server then refuses the connection as it does any client without a certificate
    refused(mtls.bootstrap, client_cert_options(tls_site, tls_site.rogue_client), rdk_log,
            "No matching issuer found", "alert certificate required", timeout=15.0)  # gap: above


# ---- SASL ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sasl_kafka():
    """A 1-node Apache Kafka with a SASL_PLAINTEXT listener and two users (PLAIN and SCRAM)."""
    from helpers import kafka_unavailable

    from rdk.testing import KafkaCluster

    why = kafka_unavailable()
    if why:
        pytest.skip(f"Apache Kafka: {why}")

    with KafkaCluster(1, listeners=("SASL_PLAINTEXT",), sasl_users={"alice": SECRET, "bob": "b0b-pw"}) as kc:
        yield kc


def sasl_options(mechanism: str, user: str = "alice", password: str = SECRET) -> dict:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_plain_and_scram_authenticate_against_a_real_broker(sasl_kafka, tmp_path, mechanism, caplog):
    """rdk.Producer and rdk.Consumer round-trip over SASL_PLAINTEXT on Apache Kafka, the
    credentials passed through driver_options; the password never reaches the logs."""
    caplog.set_level(logging.DEBUG, logger="rdk")
    bootstrap = sasl_kafka.bootstrap_servers_for("SASL_PLAINTEXT")
    topic = f"sasl-{mechanism.lower()}-{uuid.uuid4().hex[:8]}"
    sasl_kafka.create_topic(topic, 2)
    options = sasl_options(mechanism)
    sent = [Message(b"sasl-%d" % i, key=b"k%d" % i) for i in range(200)]
    with Producer(bootstrap, driver_options=options) as producer:
        assert producer.send(topic, 1, sent).enqueued == len(sent)
        assert producer.flush(30) == 0
    got: list = []
    done = threading.Event()

    def receive(batch) -> None:
        got.extend(batch.messages)
        if len(got) >= len(sent):
            done.set()

    with Consumer(bootstrap, topic, str(tmp_path), receive, driver_options=options) as consumer:
        consumer.start()
        assert done.wait(30), f"{len(got)} of {len(sent)} messages over SASL {mechanism}"
    assert [(m.partition, m.offset, m.value, m.key) for m in got] == [
        (1, i, m.value, m.key) for i, m in enumerate(sent)]
    # another user of the same listener authenticates too (PLAIN and SCRAM both hold bob)
    with Admin(bootstrap, sasl_options(mechanism, "bob", "b0b-pw")) as admin:
        assert admin.partition_count(topic, timeout=10) == 2
    assert SECRET not in caplog.text


def test_sasl_wrong_password_is_refused_by_name_within_seconds(sasl_kafka, tmp_path, rdk_log):
    """A wrong SCRAM password: the broker refuses the handshake; librdkafka reports
    ``_AUTHENTICATION`` ("invalid credentials") at once, and rdk ends every wait on it with
    that named error (tests/reliability/test_auth_errors.py covers each client and case)."""
    bootstrap = sasl_kafka.bootstrap_servers_for("SASL_PLAINTEXT")
    topic = f"sasl-bad-{uuid.uuid4().hex[:8]}"
    sasl_kafka.create_topic(topic, 1)
    bad = sasl_options("SCRAM-SHA-256", password="not-" + SECRET)
    with Producer(bootstrap, driver_options=bad) as producer:
        producer.send(topic, 0, [b"never"])
        with pytest.raises(KafkaError, match="invalid credentials") as ei:
            producer.flush(60)
        assert ei.value.name == "_AUTHENTICATION"
    assert "invalid credentials" in rdk_log.text
    with Admin(bootstrap, bad) as admin, pytest.raises(KafkaError, match="_AUTHENTICATION"):
        admin.list_topics(timeout=60)
    consumer = Consumer(bootstrap, topic, str(tmp_path), lambda batch: None, driver_options=bad)
    try:
        t0 = time.monotonic()
        with pytest.raises(KafkaError, match="invalid credentials") as ei:
            consumer.start()
        assert ei.value.name == "_AUTHENTICATION" and time.monotonic() - t0 < 15
    finally:
        consumer.stop()
    assert "not-" + SECRET not in rdk_log.text


def test_unknown_sasl_mechanism_is_rejected_with_librdkafkas_text():
    with pytest.raises(ConfigError, match="Unsupported SASL mechanism: NOPE"):
        Admin("127.0.0.1:9092", {"security.protocol": "SASL_PLAINTEXT",
                                 "sasl.mechanisms": "NOPE", "sasl.password": SECRET})


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_settings_reach_the_wire(tansu, rdk_log, mechanism):
    """librdkafka sends a SaslHandshake naming our mechanism; Tansu (no users) refuses it."""
    options = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mechanism,
               "sasl.username": "alice", "sasl.password": SECRET}
    err = refused(tansu.bootstrap_servers, options, rdk_log,
                  f"SASL {mechanism} mechanism handshake failed")
    assert err.name == "_AUTHENTICATION", err


# ---- no leaks ----------------------------------------------------------------------

SECRET_OPTIONS = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanisms": "PLAIN",
    "sasl.username": "alice",
    "sasl.password": SECRET,
    "ssl.key.password": SECRET + "-key",
}


def test_password_never_reaches_logs_even_with_all_debug_contexts(tansu, rdk_log):
    options = {**SECRET_OPTIONS, "debug": "all"}
    with Admin(tansu.bootstrap_servers, options) as admin:
        with pytest.raises(KafkaError) as ei:
            admin.list_topics(timeout=2.0)
        wait_until(lambda: "sasl.password" in rdk_log.text, 10,
                   what="librdkafka's configuration dump")
        text_of_everything = "\n".join([rdk_log.text, str(ei.value), repr(ei.value), repr(admin)])
    assert "mechanism handshake failed" in rdk_log.text  # the failed connection was logged
    assert SECRET not in text_of_everything
    assert "[redacted]" in rdk_log.text


def test_password_never_reaches_the_reprs_of_clients(tansu, tmp_path):
    options = {**SECRET_OPTIONS, "security.protocol": "PLAINTEXT"}
    producer = Producer(tansu.bootstrap_servers, driver_options=options)
    consumer = Consumer(tansu.bootstrap_servers, "any-topic", str(tmp_path), lambda b: None,
                        driver_options=options)
    admin = Admin(tansu.bootstrap_servers, options)
    try:
        shown = [repr(producer), str(producer), repr(consumer), str(consumer), repr(admin),
                 str(admin)]
    finally:
        producer.stop(5)
        consumer.stop(5)
        admin.close()
    assert shown[0].startswith("<rdk.Producer") and shown[2].startswith("<rdk.Consumer")
    assert not [s for s in shown if SECRET in s]


@pytest.mark.parametrize("options, culprit", [
    ({**SECRET_OPTIONS, "sasl.mechanisms": "NOPE"}, "NOPE"),
    ({**SECRET_OPTIONS, "sasl.password": object()}, "sasl.password"),
    ({**SECRET_OPTIONS, "no.such.property": "x"}, "no.such.property"),
    ({**SECRET_OPTIONS, "security.protocol": "TLS-ish"}, "security.protocol"),
])
def test_secrets_stay_out_of_configuration_errors(options, culprit):
    with pytest.raises(ConfigError) as ei:
        Admin("127.0.0.1:9092", options)
    assert culprit in str(ei.value)
    assert SECRET not in str(ei.value) and SECRET not in repr(ei.value)
