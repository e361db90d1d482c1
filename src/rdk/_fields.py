"""``tuple_field(index, doc)``: a read-only attribute of a tuple subclass that reads one
item, as namedtuple's fields do (the C accessor ``collections._tuplegetter``: one call per
read), for rdk.Message and rdk.ShareMessage."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

try:
    from collections import _tuplegetter as tuple_field  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - other Pythons: the same with property + itemgetter

    def tuple_field(index: int, doc: str | None) -> Any:
        return property(itemgetter(index), doc=doc)
