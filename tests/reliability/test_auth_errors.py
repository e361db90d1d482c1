"""Security end to end against Apache Kafka (rdk.testing.KafkaCluster): authentication and
TLS failures become named KafkaErrors within seconds (never a silent retry loop), SASL/
OAUTHBEARER tokens come from ``oauth_cb``, and the StandardAuthorizer's refusals reach the
caller by name (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED)."""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import threading
import time
import uuid

import pytest
from helpers import kafka_unavailable, wait_until

from rdk import Admin, ConfigError, Consumer, Message, Producer
from rdk.errors import KafkaError

DEADLINE = 15.0  # seconds: a named error must come well before any of rdk's or librdkafka's timeouts
USERS = {"alice": "al1ce-pw", "bob": "b0b-pw"}
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    # KRaft: the controller and inter-broker listeners are PLAINTEXT, whose principal is
    # ANONYMOUS: it must be a super user or the brokers cannot talk to each other (and the
    # test's own PLAINTEXT admin then creates topics and ACLs). "admin" is the OAUTHBEARER
    # principal of the oauth_cb round trip.
    "super.users": "User:ANONYMOUS;User:admin",
    "allow.everyone.if.no.acl.found": "false",
}


@pytest.fixture(scope="module")
def kafka():
    """One Apache Kafka node: SSL, SASL_PLAINTEXT and SASL_SSL listeners, users alice and bob
    (PLAIN and SCRAM), OAUTHBEARER with unsecured JWS tokens, the StandardAuthorizer on."""
    why = kafka_unavailable()
    if why:
        pytest.skip(f"Apache Kafka: {why}")
    from rdk.testing import KafkaCluster

    with KafkaCluster(1, config=AUTHORIZER, listeners=("SSL", "SASL_PLAINTEXT", "SASL_SSL"),
                      sasl_users=USERS) as kc:
        yield kc


@pytest.fixture(scope="module")
def topic(kafka):
    name = f"auth-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(name, 2)
    return name


def sasl(mechanism: str, user: str = "alice", password: str = USERS["alice"]) -> dict:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password}


def unsecured_jwt(sub: str, lifetime: float, exp: float | None = None) -> tuple[str, float]:
    """An unsecured JWS (``{"alg":"none"}``) as Kafka's unsecured validator takes it, and its
    expiry in epoch seconds."""
    now = time.time()
    expiry = now + lifetime if exp is None else exp

    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part({'sub': sub, 'iat': int(now), 'exp': expiry})}.", expiry


OAUTH = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}


def named_within(call, name: str, *texts: str) -> tuple[KafkaError, float]:
    """Run ``call``: it must raise KafkaError ``name`` whose text holds ``texts``, within
    DEADLINE seconds. Returns the error and the seconds it took."""
    t0 = time.monotonic()
    with pytest.raises(KafkaError) as ei:
        call()
    took = time.monotonic() - t0
    err = ei.value
    assert err.name == name, str(err)
    for text in texts:
        assert text in str(err), str(err)
    assert took < DEADLINE, f"{took:.1f} s to report {err}"
    return err, took


# ---- 1. authentication failures are named errors within seconds ------------------------

BAD_CREDENTIALS = {
    "wrong-password-scram": (sasl("SCRAM-SHA-256", password="not-the-password"), "_AUTHENTICATION",
                             "invalid credentials"),
    "wrong-password-plain": (sasl("PLAIN", password="not-the-password"), "_AUTHENTICATION",
                             "Invalid username or password"),
    "unknown-user-scram": (sasl("SCRAM-SHA-512", user="mallory", password="mallory-pw-1"), "_AUTHENTICATION",
                           "invalid credentials"),
}


@pytest.mark.parametrize("case", list(BAD_CREDENTIALS))
def test_bad_credentials_fail_admin_calls_by_name_within_seconds(kafka, case):
    options, name, text = BAD_CREDENTIALS[case]
    bootstrap = kafka.bootstrap_servers_for("SASL_PLAINTEXT")
    with Admin(bootstrap, options) as admin:
        err, _ = named_within(lambda: admin.list_topics(timeout=60), name, text, bootstrap)
        assert "authentication with broker" in str(err)
        named_within(lambda: admin.create_topics({"never-made": 1}, timeout=60), name, text)
        named_within(lambda: admin.partition_count("any", timeout=60), name, text)
    assert options["sasl.password"] not in str(err)


def test_wrong_password_fails_consumer_start_by_name_within_seconds(kafka, topic, tmp_path):
    bootstrap = kafka.bootstrap_servers_for("SASL_PLAINTEXT")
    bad = sasl("SCRAM-SHA-256", password="not-the-password")
    consumer = Consumer(bootstrap, topic, str(tmp_path), lambda batch: None, driver_options=bad)
    try:
        err, _ = named_within(consumer.start, "_AUTHENTICATION", "invalid credentials", bootstrap)
        assert "start()" in str(err)
    finally:
        consumer.stop()
    group = Consumer(bootstrap, topic, None, lambda batch: None, group_id="auth-g", driver_options=bad)
    try:
        named_within(group.start, "_AUTHENTICATION", "invalid credentials")
    finally:
        group.stop()
    assert not list(tmp_path.iterdir()) or all(not p.name.endswith(".offset") for p in tmp_path.iterdir())


def test_wrong_password_fails_producer_flush_send_and_stop_within_seconds(kafka, topic, caplog):
    caplog.set_level(logging.ERROR, logger="rdk")
    bootstrap = kafka.bootstrap_servers_for("SASL_PLAINTEXT")
    producer = Producer(bootstrap, driver_options=sasl("PLAIN", password="not-the-password"))
    failures: list = []
    try:
        assert producer.send(topic, 0, [b"a", b"b", b"c"],
                             on_delivery=lambda n, f: failures.extend(f)).enqueued == 3
        # flush(timeout) does not hide the cause behind a count: it raises as soon as it is known
        named_within(lambda: producer.flush(120), "_AUTHENTICATION",
                              "Invalid username or password", "3 message(s) still queued")
        # the cause is known now: a send raises it, nothing is enqueued
        named_within(lambda: producer.send(topic, 0, [b"d"]), "_AUTHENTICATION", "send to")
        assert "authentication failed" in caplog.text  # logged as ERROR when it happened
    finally:
        t0 = time.monotonic()
        result = producer.stop(120)
        took = time.monotonic() - t0
    assert took < DEADLINE, f"stop() took {took:.1f} s"
    assert result.failed == 3 and result.queued == 0
    assert len(failures) == 3
    assert "message(s) not delivered" in caplog.text and "Invalid username or password" in caplog.text


def test_wrong_password_fails_every_pending_aio_send_with_the_cause_within_seconds(kafka, topic):
    """await rdk.aio.Producer.send() settles with _AUTHENTICATION as soon as librdkafka reports
    it (not with _PURGE_QUEUE at stop()): every pending send fails, naming its topic."""
    import asyncio

    import rdk.aio

    bootstrap = kafka.bootstrap_servers_for("SASL_PLAINTEXT")

    async def main():
        producer = rdk.aio.Producer(bootstrap, driver_options=sasl("PLAIN", password="not-the-password"))
        try:
            t0 = time.monotonic()
            sends = [producer.send(topic, p, [b"a", b"b"]) for p in (0, 1)]
            # a hang becomes TimeoutError here, not the KafkaError the test requires
            errors = await asyncio.wait_for(asyncio.gather(*sends, return_exceptions=True), DEADLINE)
            return errors, time.monotonic() - t0
        finally:
            await producer.stop(30)

    errors, took = asyncio.run(main())
    assert [type(e) for e in errors] == [KafkaError, KafkaError], errors
    for err in errors:
        assert err.name == "_AUTHENTICATION", err
        assert "Invalid username or password" in str(err) and topic in str(err)
    assert took < DEADLINE


def test_oauth_token_expired_before_use_is_a_named_error(kafka):
    """oauth_cb hands out a token whose expiry has passed: librdkafka refuses it
    ("Must supply an unexpired token"), rdk reports the token failure, calls fail by name."""
    calls: list[str] = []

    def oauth_cb(config: str):
        calls.append(config)
        token, _ = unsecured_jwt("admin", -60)
        return token, time.time() - 60, "admin"

    with Admin(kafka.bootstrap_servers_for("SASL_PLAINTEXT"), OAUTH, oauth_cb=oauth_cb) as admin:
        named_within(lambda: admin.list_topics(timeout=60), "_AUTHENTICATION",
                     "Failed to acquire SASL OAUTHBEARER token", "Must supply an unexpired token")
    assert calls


def test_oauth_token_the_broker_finds_expired_is_a_named_error(kafka):
    """The token's ``exp`` claim has passed but oauth_cb says it is good for a minute: the
    broker's validator refuses it in the SASL exchange."""
    def oauth_cb(config: str):
        token, _ = unsecured_jwt("admin", 0, exp=time.time() - 3600)
        return token, time.time() + 60, "admin"

    with Admin(kafka.bootstrap_servers_for("SASL_PLAINTEXT"), OAUTH, oauth_cb=oauth_cb) as admin:
        err, _ = named_within(lambda: admin.list_topics(timeout=60), "_AUTHENTICATION")
    assert "SASL authentication error" in str(err)


def test_oauth_cb_that_raises_is_a_named_error_quickly(kafka, caplog):
    caplog.set_level(logging.ERROR, logger="rdk")

    def oauth_cb(config: str):
        raise RuntimeError("identity provider unreachable")

    with Admin(kafka.bootstrap_servers_for("SASL_PLAINTEXT"), OAUTH, oauth_cb=oauth_cb) as admin:
        named_within(lambda: admin.list_topics(timeout=60), "_AUTHENTICATION",
                     "oauth_cb failed: RuntimeError: identity provider unreachable")
    assert "identity provider unreachable" in caplog.text  # logged with its traceback


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory):
    """A CA that did not sign the broker's certificate (made with openssl)."""
    folder = tmp_path_factory.mktemp("other-ca")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=not-the-ca"],
                   cwd=folder, check=True, capture_output=True)
    return str(folder / "ca.pem")


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_tls_with_a_ca_that_did_not_sign_the_broker_fails_by_name(kafka, other_ca, listener, tmp_path):
    bootstrap = kafka.bootstrap_servers_for(listener)
    options = {"security.protocol": listener, "ssl.ca.location": other_ca}
    if listener == "SASL_SSL":
        options.update({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
                        "sasl.password": USERS["alice"]})
    with Admin(bootstrap, options) as admin:
        err, _ = named_within(lambda: admin.list_topics(timeout=60), "_SSL", "certificate verify failed")
    assert "TLS handshake with broker" in str(err)
    consumer = Consumer(bootstrap, "any-topic", str(tmp_path), lambda b: None, driver_options=options)
    try:
        named_within(consumer.start, "_SSL", "certificate verify failed")
    finally:
        consumer.stop()


def test_tls_host_name_not_in_the_certificate_fails_by_name(kafka):
    """The broker's certificate names 127.0.0.1 and localhost. "127.1" reaches the same
    address (inet_aton) but is not an IP literal to OpenSSL, so the https endpoint check
    compares it with the certificate's DNS names and refuses."""
    port = kafka.bootstrap_servers_for("SSL").rsplit(":", 1)[1]
    options = {"security.protocol": "SSL", "ssl.ca.location": kafka.ca_location,
               "ssl.endpoint.identification.algorithm": "https"}
    with Admin(f"127.1:{port}", options) as admin:
        named_within(lambda: admin.list_topics(timeout=60), "_SSL", "certificate verify failed")
    # the same address by a name the certificate holds is accepted: the name was the cause
    with Admin(f"localhost:{port}", options) as admin:
        assert isinstance(admin.list_topics(timeout=30), list)


WRONG_PROTOCOL = {  # the client's security.protocol -> the listener it is pointed at
    "ssl-to-plaintext": ("SSL", "PLAINTEXT", "connecting to a PLAINTEXT broker listener?"),
    "plaintext-to-ssl": ("PLAINTEXT", "SSL", "connecting to a SSL listener?"),
    "sasl_ssl-to-sasl_plaintext": ("SASL_SSL", "SASL_PLAINTEXT",
                                   "connecting to a PLAINTEXT broker listener?"),
}


@pytest.mark.parametrize("case", list(WRONG_PROTOCOL))
def test_wrong_security_protocol_for_the_listener_fails_with_librdkafkas_hint(kafka, case, tmp_path):
    protocol, listener, hint = WRONG_PROTOCOL[case]
    bootstrap = kafka.bootstrap_servers_for(listener)
    options = {"security.protocol": protocol}
    if protocol.endswith("SSL"):
        options["ssl.ca.location"] = kafka.ca_location
    if protocol.startswith("SASL"):
        options.update({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
                        "sasl.password": USERS["alice"]})
    with Admin(bootstrap, options) as admin:  # not a bare _TRANSPORT after the whole timeout
        err, _ = named_within(lambda: admin.list_topics(timeout=60), "_TRANSPORT", hint, bootstrap)
    assert "security.protocol" in str(err)
    consumer = Consumer(bootstrap, "any-topic", str(tmp_path), lambda b: None, driver_options=options)
    try:
        named_within(consumer.start, "_TRANSPORT", hint)
    finally:
        consumer.stop()


@pytest.mark.parametrize("name", ["ssl.ca.location", "ssl.certificate.location",
                                  "ssl.key.location"])
def test_a_tls_file_that_does_not_exist_is_named_with_its_path(name, tmp_path):
    missing = str(tmp_path / "nowhere" / "file.pem")
    options = {"security.protocol": "SSL", name: missing}
    for make in (lambda: Admin("127.0.0.1:9", options),
                 lambda: Producer("127.0.0.1:9", driver_options=options)):
        with pytest.raises(ConfigError) as ei:
            make()
        assert f"{name}={missing!r}: no such file" in str(ei.value)


# ---- 2. oauth_cb --------------------------------------------------------------------

def test_oauth_cb_round_trip_and_refresh(kafka, topic, tmp_path):
    """Producer, Consumer and Admin get their tokens from oauth_cb (the string it receives is
    sasl.oauthbearer.config); a token good for 4 s is refreshed by librdkafka (at 80 % of
    its life) while the clients keep working."""
    calls: list[str] = []
    lock = threading.Lock()

    def oauth_cb(config: str):
        with lock:
            calls.append(config)
        token, expiry = unsecured_jwt("admin", 4.0)
        return token, expiry, "admin", {"traceId": "rdk-test"}

    options = {**OAUTH, "sasl.oauthbearer.config": "scope=rdk-test"}
    bootstrap = kafka.bootstrap_servers_for("SASL_PLAINTEXT")
    sent = [Message(b"oauth-%d" % i) for i in range(50)]
    with Producer(bootstrap, driver_options=options, oauth_cb=oauth_cb) as producer:
        assert producer.send(topic, 1, sent).enqueued == len(sent)
        assert producer.flush(30) == 0
        first = len(calls)
        wait_until(lambda: len(calls) > first, 20, what="oauth_cb to be called again for a refresh")
        assert producer.send(topic, 1, [b"after-refresh"]).enqueued == 1
        assert producer.flush(30) == 0
    assert set(calls) == {"scope=rdk-test"}
    got: list = []
    done = threading.Event()

    def receive(batch) -> None:
        got.extend(batch.messages)
        if len(got) >= len(sent) + 1:
            done.set()

    consumer_calls = len(calls)
    with Consumer(bootstrap, topic, str(tmp_path), receive, driver_options=options,
                  oauth_cb=oauth_cb) as consumer:
        consumer.start()
        assert done.wait(30), f"{len(got)} of {len(sent) + 1} messages over OAUTHBEARER"
    assert [m.value for m in got if m.partition == 1][-1] == b"after-refresh"
    assert len(calls) > consumer_calls
    with Admin(bootstrap, options, oauth_cb=oauth_cb) as admin:
        assert admin.partition_count(topic, timeout=30) == 2


def test_oauth_cb_conflicting_with_librdkafkas_own_token_sources_is_refused():
    def cb(config):
        return "t", time.time() + 60

    with pytest.raises(ConfigError, match="oidc"):
        Admin("127.0.0.1:9092", {**OAUTH, "sasl.oauthbearer.method": "oidc",
                                 "sasl.oauthbearer.token.endpoint.url": "https://idp.invalid/token",
                                 "sasl.oauthbearer.client.id": "rdk",
                                 "sasl.oauthbearer.client.secret": "s3cret"}, oauth_cb=cb)
    with pytest.raises(ConfigError, match=r"unsecure\.jwt"):
        Producer("127.0.0.1:9092", driver_options={**OAUTH, "enable.sasl.oauthbearer.unsecure.jwt": True},
                 oauth_cb=cb)
    with pytest.raises(TypeError, match="oauth_cb must be callable"):
        Consumer("127.0.0.1:9092", "t", None, lambda b: None, group_id="g", oauth_cb="nope")


def test_oidc_properties_are_passed_to_librdkafka_verbatim():
    """OIDC (librdkafka fetches tokens from the endpoint itself) is driver_options only. With
    no network here only the configuration is checked, never a token exchange; and librdkafka
    supports it only when built with libcurl (feature "oidc"): without it, its own refusal
    reaches the caller."""
    from rdk._binding import features

    oidc = {**OAUTH, "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.token.endpoint.url": "https://idp.invalid/oauth2/token",
            "sasl.oauthbearer.client.id": "rdk-client", "sasl.oauthbearer.client.secret": "s3cret",
            "sasl.oauthbearer.scope": "kafka", "sasl.oauthbearer.extensions": "logicalCluster=lkc-1"}
    if "oidc" in features():
        with Admin("127.0.0.1:9", oidc) as admin:
            assert "s3cret" not in repr(admin)
    else:
        with pytest.raises(ConfigError, match=r"not supported in this build.*libcurl") as ei:
            Admin("127.0.0.1:9", oidc)
        assert "s3cret" not in str(ei.value)
    with pytest.raises(ConfigError, match=r"sasl\.oauthbearer\.method"):
        Admin("127.0.0.1:9", {**oidc, "sasl.oauthbearer.method": "magic"})


# ---- 3. authorization (StandardAuthorizer) -------------------------------------------

def add_acls(kafka, *args: str) -> None:
    """Kafka's own AclCommand (kafka-tools) over the PLAINTEXT listener (ANONYMOUS: super user)."""
    cmd = [kafka.java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", f"{kafka.libs}/*",
           "org.apache.kafka.tools.AclCommand", "--bootstrap-server", kafka.bootstrap_servers, "--add",
           *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.fixture(scope="module")
def acl_topics(kafka):
    """``readable``: bob may Describe, Read and Write it; ``hidden``: bob may only Describe it.
    alice has no ACL at all; bob none on any group."""
    readable, hidden = f"acl-rw-{uuid.uuid4().hex[:6]}", f"acl-d-{uuid.uuid4().hex[:6]}"
    kafka.create_topic(readable, 1)
    kafka.create_topic(hidden, 1)
    add_acls(kafka, "--allow-principal", "User:bob", "--operation", "Describe", "--operation", "Read",
             "--operation", "Write", "--topic", readable)
    add_acls(kafka, "--allow-principal", "User:bob", "--operation", "Describe", "--topic", hidden)
    with Producer(kafka.bootstrap_servers) as producer:  # ANONYMOUS: super user
        producer.send(hidden, 0, [b"secret-%d" % i for i in range(5)])
        producer.send(readable, 0, [b"open-%d" % i for i in range(5)])
        assert producer.flush(30) == 0
    return readable, hidden


BOB = sasl("SCRAM-SHA-256", "bob", USERS["bob"])


@pytest.mark.parametrize("user", ["alice", "bob"])
def test_producing_to_a_topic_the_principal_may_not_write_fails_by_name(kafka, acl_topics, user):
    readable, hidden = acl_topics
    topic = readable if user == "alice" else hidden  # alice: no ACL; bob: Describe only
    failures: list = []
    options = sasl("SCRAM-SHA-256", user, USERS[user])
    with Producer(kafka.bootstrap_servers_for("SASL_PLAINTEXT"), driver_options=options) as producer:
        producer.send(topic, 0, [b"x", b"y"], on_delivery=lambda n, f: failures.extend(f))
        t0 = time.monotonic()
        result = producer.flush(60)
        assert time.monotonic() - t0 < DEADLINE
    assert result.failed == 2
    assert {e.name for _, e in failures} == {"TOPIC_AUTHORIZATION_FAILED"}


def test_group_consumer_without_group_read_fails_by_name(kafka, acl_topics):
    readable, _ = acl_topics
    errors: list = []
    consumer = Consumer(kafka.bootstrap_servers_for("SASL_PLAINTEXT"), readable, None,
                        lambda batch: None, group_id=f"no-acl-{uuid.uuid4().hex[:6]}",
                        driver_options=BOB)
    try:
        consumer.start()
        t0 = time.monotonic()
        wait_until(lambda: consumer.error is not None, DEADLINE,
                   what="the consumer to fail with GROUP_AUTHORIZATION_FAILED")
        errors.append(consumer.error)
        assert time.monotonic() - t0 < DEADLINE
    finally:
        consumer.stop()
    assert errors[0] is not None and errors[0].name == "GROUP_AUTHORIZATION_FAILED", errors


def slot_consumer_without_read(kafka, topic, directory):
    """Run a worker-slot consumer of ``topic`` as bob until it fails; (its error, messages
    got)."""
    got: list = []
    consumer = Consumer(kafka.bootstrap_servers_for("SASL_PLAINTEXT"), topic, str(directory),
                        lambda batch: got.extend(batch.messages), driver_options=BOB)
    try:
        consumer.start()
        wait_until(lambda: consumer.error is not None, 60, "the broker's refusal")
        return consumer.error, got
    finally:
        consumer.stop()


def test_slot_consumer_that_may_not_read_keeps_no_progress(kafka, acl_topics, tmp_path):
    _, hidden = acl_topics
    error, got = slot_consumer_without_read(kafka, hidden, tmp_path)
    assert error.name == "TOPIC_AUTHORIZATION_FAILED", error  # refused: nothing was read
    assert got == []
    # no offset file was written: only the partition lock is there
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []


def test_slot_consumer_that_may_not_read_fails_by_name(kafka, acl_topics, tmp_path):
    _, hidden = acl_topics
    error, _ = slot_consumer_without_read(kafka, hidden, tmp_path)
    assert error is not None and error.name == "TOPIC_AUTHORIZATION_FAILED", error
