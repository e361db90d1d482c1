"""What every area of rdk.Admin shares: the librdkafka handle, the argument checks, close()
(the admin requests themselves are rdk._binding.admin's)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from .. import _binding
from ..validate import check_group_id, check_wait  # noqa: F401  (rdk.admin's, as before)

# librdkafka takes timeouts as int milliseconds (and rdk waits 2 s longer for the answer)
MAX_TIMEOUT = 2_000_000.0


def _check_timeout(value: Any, name: str = "timeout") -> float:
    """Seconds >= 0 (ValueError naming it otherwise); ``inf`` or anything beyond
    MAX_TIMEOUT (about 23 days) waits MAX_TIMEOUT, i.e. without a practical limit."""
    return check_wait(value, name, MAX_TIMEOUT)


class _AdminBase:
    """What every area of rdk.Admin uses: the client(s) and the admin request plumbing."""

    _props: dict[str, Any]
    _oauth_cb: Callable[[str], Any] | None
    _logger: logging.Logger | logging.LoggerAdapter | None
    _client: _binding.Client
    _fetch_client: _binding.Client | None

    @property
    def _rk(self) -> Any:
        self._client.ensure_open()
        return self._client.rk

    def close(self) -> None:
        """Free the handles. Idempotent."""
        if self._fetch_client is not None:
            self._fetch_client.close()
        self._client.close()


def check_mapping(value: Any, message: str) -> None:
    """TypeError ``"{message}, got {type}"`` unless ``value`` is a Mapping."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{message}, got {type(value).__name__}")

