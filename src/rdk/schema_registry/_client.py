"""SchemaRegistryClient: Confluent's schema registry REST API (Confluent Schema Registry,
Apicurio's ``/apis/ccompat/v7``, Karapace...) over urllib3's connection pool, with caches of
what never changes (a schema by id, an id by subject and schema)."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from ..errors import RdkError

__all__ = [
    "IncompatibleSchemaError",
    "RegisteredSchema",
    "RegistryUnavailableError",
    "Schema",
    "SchemaNotFoundError",
    "SchemaReference",
    "SchemaRegistryClient",
    "SchemaRegistryError",
]

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")


class SchemaRegistryError(RdkError):
    """The registry answered with an error, or could not be asked.

    ``status`` (HTTP status, None when no answer), ``error_code`` (the registry's code, like
    40401), ``subject`` (the subject asked about, or None).

    Args:
        message: What went wrong.
        status: The HTTP status; None when there was no answer.
        error_code: The registry's error code; None if it gave none.
        subject: The subject concerned; None if none.
    """

    def __init__(self, message: str, *, status: int | None = None, error_code: int | None = None,
                 subject: str | None = None) -> None:
        super().__init__(message)
        self.status, self.error_code, self.subject = status, error_code, subject


class SchemaNotFoundError(SchemaRegistryError):
    """404: no such subject, version or schema id.

    Args:
        message: What went wrong.
        status: The HTTP status; None when there was no answer.
        error_code: The registry's error code; None if it gave none.
        subject: The subject concerned; None if none.
    """


class IncompatibleSchemaError(SchemaRegistryError):
    """409: the schema is not compatible with the subject's earlier versions.

    Args:
        message: What went wrong.
        status: The HTTP status; None when there was no answer.
        error_code: The registry's error code; None if it gave none.
        subject: The subject concerned; None if none.
    """


class RegistryUnavailableError(SchemaRegistryError):
    """No answer from the registry (refused, timed out, TLS failure).

    Args:
        message: What went wrong.
        status: The HTTP status; None when there was no answer.
        error_code: The registry's error code; None if it gave none.
        subject: The subject concerned; None if none.
    """


@dataclass(frozen=True)
class SchemaReference:
    """A reference from one schema to another registered one (``name`` as the referring schema
    imports it, the ``subject`` and ``version`` it is registered under)."""

    name: str
    """The name the referring schema imports it by."""
    subject: str
    """The subject it is registered under."""
    version: int
    """Its version there."""


@dataclass(frozen=True)
class Schema:
    """A schema's text, its type (``"AVRO"``, ``"JSON"``, ``"PROTOBUF"``) and references."""

    schema_str: str
    """The schema's text (Avro or JSON Schema JSON; Protobuf: .proto text or a base64 descriptor)."""
    schema_type: str = "AVRO"
    """``"AVRO"``, ``"JSON"`` or ``"PROTOBUF"``."""
    references: tuple[SchemaReference, ...] = field(default=())
    """Other registered schemas this one refers to."""

    def to_request(self) -> dict[str, Any]:
        """The JSON body the registry takes for this schema."""
        body: dict[str, Any] = {"schema": self.schema_str}
        if self.schema_type != "AVRO":
            body["schemaType"] = self.schema_type
        if self.references:
            body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version}
                                  for r in self.references]
        return body

    @classmethod
    def from_response(cls, body: dict[str, Any]) -> Schema:
        """The schema of a registry answer (``schema``, ``schemaType``, ``references``).

        Args:
            body: The answer's JSON.

        Returns:
            The schema.
        """
        refs = tuple(SchemaReference(r["name"], r["subject"], int(r["version"]))
                     for r in body.get("references") or ())
        return cls(body["schema"], body.get("schemaType") or "AVRO", refs)


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as registered: its global ``schema_id``, ``subject`` and ``version``."""

    schema_id: int
    """The registry's global id of the schema."""
    schema: Schema
    """The schema."""
    subject: str
    """The subject."""
    version: int
    """Its version under the subject."""


def _schema_arg(schema: Schema | str) -> Schema:
    if isinstance(schema, str):
        return Schema(schema)
    if not isinstance(schema, Schema):
        raise TypeError(f"schema must be an rdk.schema_registry.Schema or str, got {type(schema).__name__}")
    if schema.schema_type not in SCHEMA_TYPES:
        raise ValueError(f"schema_type must be one of {SCHEMA_TYPES}, got {schema.schema_type!r}")
    return schema


def _subject_arg(subject: str) -> str:
    if not isinstance(subject, str) or not subject:
        raise TypeError(f"subject must be a non-empty str, got {subject!r}")
    return subject


class SchemaRegistryClient:
    """A client of Confluent's schema registry REST API.

    Schemas by id and ids by (subject, schema) are cached for the client's life (they never
    change); the latest version of a subject is cached ``latest_ttl`` seconds. Thread-safe.

    Args:
        url: The registry's base URL (``http://host:8081``, Apicurio:
            ``http://host:8080/apis/ccompat/v7``); several, comma-separated, are tried in turn.
        basic_auth: ``(user, password)`` for HTTP basic authentication; None: none.
        ca_location: A PEM file of CAs to verify an ``https`` registry's certificate; None: the
            system's.
        cert_location: A PEM client certificate for mutual TLS; None: none.
        key_location: The client certificate's PEM key; None: in ``cert_location``.
        verify: False skips verifying the server's certificate (tests only).
        timeout: Seconds for connecting and for each answer.
        latest_ttl: Seconds ``get_latest_version`` answers from its cache.

    Raises:
        TypeError: An argument of the wrong type.
        ValueError: A URL that is not http(s).
    """

    def __init__(self, url: str, *, basic_auth: tuple[str, str] | None = None, ca_location: str | None = None,
                 cert_location: str | None = None, key_location: str | None = None, verify: bool = True,
                 timeout: float = 10.0, latest_ttl: float = 60.0) -> None:
        import urllib3

        if not isinstance(url, str) or not url:
            raise TypeError(f"url must be a non-empty str, got {url!r}")
        self.urls = [u.strip().rstrip("/") for u in url.split(",") if u.strip()]
        """The registry URLs, tried in turn."""
        for u in self.urls:
            if not u.startswith(("http://", "https://")):
                raise ValueError(f"schema registry url must start with http:// or https://, got {u!r}")
        headers = {"Accept": "application/vnd.schemaregistry.v1+json, application/json",
                   "Content-Type": "application/vnd.schemaregistry.v1+json"}
        if basic_auth is not None:
            if (not isinstance(basic_auth, tuple) or len(basic_auth) != 2
                    or not all(isinstance(x, str) for x in basic_auth)):
                raise TypeError("basic_auth must be a (user, password) tuple of str")
            headers.update(urllib3.make_headers(basic_auth=f"{basic_auth[0]}:{basic_auth[1]}"))
        tls: dict[str, Any] = {}
        if any(u.startswith("https://") for u in self.urls):
            tls = {"cert_reqs": ssl.CERT_REQUIRED if verify else ssl.CERT_NONE, "ca_certs": ca_location,
                   "cert_file": cert_location, "key_file": key_location}
        self.timeout = float(timeout)
        timeouts = urllib3.Timeout(connect=self.timeout, read=self.timeout)
        self._http = urllib3.PoolManager(headers=headers, retries=False, maxsize=4, timeout=timeouts, **tls)
        self._lock = threading.Lock()
        self._by_id: dict[int, Schema] = {}
        self._ids: dict[tuple[str, Schema], int] = {}
        self._lookups: dict[tuple[str, Schema], RegisteredSchema] = {}
        self._latest: dict[str, tuple[float, RegisteredSchema]] = {}
        self._latest_ttl = float(latest_ttl)

    # -- HTTP -----------------------------------------------------------------
    def _request(self, method: str, path: str, body: Any = None, *, subject: str | None = None) -> Any:
        import urllib3

        data = None if body is None else json.dumps(body).encode()
        last: Exception | None = None
        for base in self.urls:
            try:
                resp = self._http.request(method, base + path, body=data)
            except urllib3.exceptions.HTTPError as e:
                last = e
                continue
            if resp.status < 300:
                return json.loads(resp.data) if resp.data else None
            raise self._error(method, path, resp.status, resp.data, subject)
        raise RegistryUnavailableError(f"schema registry {', '.join(self.urls)} did not answer "
                                       f"{method} {path}: {_reason(last)}", subject=subject)

    @staticmethod
    def _error(method: str, path: str, status: int, data: bytes, subject: str | None) -> SchemaRegistryError:
        try:
            answer = json.loads(data)
            code, text = answer.get("error_code"), answer.get("message") or data.decode(errors="replace")
        except (ValueError, AttributeError):
            code, text = None, data.decode(errors="replace")[:300]
        where = f" (subject {subject!r})" if subject else ""
        message = f"schema registry: {method} {path}{where}: HTTP {status} {code or ''}: {text}"
        kind = {404: SchemaNotFoundError, 409: IncompatibleSchemaError}.get(status, SchemaRegistryError)
        if status == 409:
            message = f"schema is incompatible with subject {subject!r}: {text} (HTTP 409 {code or ''})"
        return kind(message, status=status, error_code=code, subject=subject)

    # -- schemas --------------------------------------------------------------
    def register_schema(self, subject: str, schema: Schema | str, *, normalize: bool = False) -> int:
        """Register ``schema`` under ``subject`` (a no-op answering the same id if it is there).

        Args:
            subject: The subject, like ``"orders-value"``.
            schema: The schema (a str is an Avro schema).
            normalize: Ask the registry to normalize the schema first.

        Returns:
            The schema's global id.

        Raises:
            rdk.schema_registry.IncompatibleSchemaError: 409, naming the subject.
            rdk.schema_registry.SchemaRegistryError: Another refusal (invalid schema: 422).
            rdk.schema_registry.RegistryUnavailableError: No answer.
        """
        subject, schema = _subject_arg(subject), _schema_arg(schema)
        key = (subject, schema)
        with self._lock:
            if key in self._ids:
                return self._ids[key]
        query = "?normalize=true" if normalize else ""
        answer = self._request("POST", f"/subjects/{quote(subject, safe='')}/versions{query}",
                               schema.to_request(), subject=subject)
        schema_id = int(answer["id"])
        with self._lock:
            self._ids[key] = schema_id
            self._by_id.setdefault(schema_id, schema)
        return schema_id

    def get_schema(self, schema_id: int) -> Schema:
        """The schema with global id ``schema_id`` (cached).

        Args:
            schema_id: The id, as in a record's header.

        Returns:
            The schema.

        Raises:
            rdk.schema_registry.SchemaNotFoundError: No schema has that id.
            rdk.schema_registry.RegistryUnavailableError: No answer.
        """
        with self._lock:
            if schema_id in self._by_id:
                return self._by_id[schema_id]
        try:
            answer = self._request("GET", f"/schemas/ids/{int(schema_id)}")
        except SchemaNotFoundError as e:
            raise SchemaNotFoundError(f"schema registry has no schema with id {schema_id}: {e}",
                                      status=404, error_code=e.error_code) from None
        schema = Schema.from_response(answer)
        with self._lock:
            self._by_id[schema_id] = schema
        return schema

    def lookup_schema(self, subject: str, schema: Schema | str) -> RegisteredSchema:
        """The registration of ``schema`` under ``subject`` (cached).

        Args:
            subject: The subject.
            schema: The schema (a str is an Avro schema).

        Returns:
            Its id and version there.

        Raises:
            rdk.schema_registry.SchemaNotFoundError: Not registered there.
        """
        subject, schema = _subject_arg(subject), _schema_arg(schema)
        with self._lock:
            if (subject, schema) in self._lookups:
                return self._lookups[(subject, schema)]
        answer = self._request("POST", f"/subjects/{quote(subject, safe='')}", schema.to_request(),
                               subject=subject)
        found = RegisteredSchema(int(answer["id"]), schema, subject, int(answer["version"]))
        with self._lock:
            self._lookups[(subject, schema)] = found
            self._ids[(subject, schema)] = found.schema_id
        return found

    def get_latest_version(self, subject: str) -> RegisteredSchema:
        """The latest version registered under ``subject`` (cached ``latest_ttl`` seconds).

        Args:
            subject: The subject.

        Returns:
            The registered schema.

        Raises:
            rdk.schema_registry.SchemaNotFoundError: No such subject.
        """
        import time

        subject = _subject_arg(subject)
        with self._lock:
            hit = self._latest.get(subject)
            if hit is not None and time.monotonic() - hit[0] < self._latest_ttl:
                return hit[1]
        found = self.get_version(subject, "latest")
        with self._lock:
            self._latest[subject] = (time.monotonic(), found)
        return found

    def get_version(self, subject: str, version: int | str) -> RegisteredSchema:
        """Version ``version`` (a number or ``"latest"``) of ``subject``.

        Args:
            subject: The subject.
            version: A version number or ``"latest"``.

        Returns:
            The registered schema.

        Raises:
            rdk.schema_registry.SchemaNotFoundError: No such subject or version.
        """
        subject = _subject_arg(subject)
        answer = self._request("GET", f"/subjects/{quote(subject, safe='')}/versions/{version}",
                               subject=subject)
        schema = Schema.from_response(answer)
        with self._lock:
            self._by_id.setdefault(int(answer["id"]), schema)
        return RegisteredSchema(int(answer["id"]), schema, answer.get("subject", subject),
                                int(answer["version"]))

    def get_subjects(self) -> list[str]:
        """Every subject the registry holds."""
        return list(self._request("GET", "/subjects"))

    def get_versions(self, subject: str) -> list[int]:
        """The versions registered under ``subject``.

        Args:
            subject: The subject.

        Returns:
            The version numbers.
        """
        subject = _subject_arg(subject)
        return [int(v) for v in self._request("GET", f"/subjects/{quote(subject, safe='')}/versions",
                                              subject=subject)]

    def test_compatibility(self, subject: str, schema: Schema | str, version: int | str = "latest") -> bool:
        """Whether ``schema`` is compatible with version ``version`` of ``subject``, under the
        subject's (or the registry's) compatibility level.

        Args:
            subject: The subject.
            schema: The candidate schema.
            version: The version to check against, or ``"latest"``.

        Returns:
            True when compatible.
        """
        subject, schema = _subject_arg(subject), _schema_arg(schema)
        path = f"/compatibility/subjects/{quote(subject, safe='')}/versions/{version}"
        answer = self._request("POST", path, schema.to_request(), subject=subject)
        return bool(answer.get("is_compatible"))

    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        """Set the compatibility level of ``subject``, or of the registry when None.

        Args:
            level: ``"BACKWARD"``, ``"FORWARD"``, ``"FULL"``, ``"NONE"`` or a ``…_TRANSITIVE``.
            subject: The subject; None: the registry's default.

        Returns:
            The level set.
        """
        path = "/config" if subject is None else f"/config/{quote(_subject_arg(subject), safe='')}"
        answer = self._request("PUT", path, {"compatibility": level.upper()}, subject=subject)
        return str(answer.get("compatibility", level.upper()))

    def get_compatibility(self, subject: str | None = None) -> str:
        """The compatibility level of ``subject``, or of the registry when None.

        Args:
            subject: The subject; None: the registry's default.

        Returns:
            The level, like ``"BACKWARD"``.
        """
        path = "/config" if subject is None else f"/config/{quote(_subject_arg(subject), safe='')}"
        answer = self._request("GET", path, subject=subject)
        return str(answer.get("compatibilityLevel") or answer.get("compatibility"))

    def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        """Delete ``subject`` (soft; ``permanent`` after a soft delete removes it for good).

        Args:
            subject: The subject.
            permanent: Remove it for good (after a soft delete).

        Returns:
            The versions deleted.
        """
        subject = _subject_arg(subject)
        path = f"/subjects/{quote(subject, safe='')}" + ("?permanent=true" if permanent else "")
        versions = self._request("DELETE", path, subject=subject)
        with self._lock:
            self._latest.pop(subject, None)
            for key in [k for k in self._ids if k[0] == subject]:
                self._ids.pop(key)
                self._lookups.pop(key, None)
        return [int(v) for v in versions or ()]

    def close(self) -> None:
        """Close the connection pool (idempotent)."""
        self._http.clear()

    def __enter__(self) -> SchemaRegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SchemaRegistryClient {','.join(self.urls)}>"


def _reason(e: Exception | None) -> str:
    reason = getattr(e, "reason", None) or e
    return f"{type(reason).__name__}: {reason}"


def client_arg(client: SchemaRegistryClient | str | Sequence[str]) -> SchemaRegistryClient:
    """A client from a client or a URL."""
    if isinstance(client, SchemaRegistryClient):
        return client
    if isinstance(client, str):
        return SchemaRegistryClient(client)
    raise TypeError(f"schema_registry must be an rdk.schema_registry.SchemaRegistryClient or a URL, "
                    f"got {type(client).__name__}")
