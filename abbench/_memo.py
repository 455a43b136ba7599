"""`Memo`: the latest few results of a costly read, each kept with the stamp of the store it was read in.

A view that asks again (a reload, another tab, the next page) gets the kept result back while the stamp
is the same, and a new one once anything was written. What the stamp is — the store's state as one
connection sees it (`abbench.store.Store.state_stamp`), or the newest run, transition and grade ids
(`Store.results_stamp`) — is the caller's, as is how two stamps compare.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Memo(Generic[T]):
    """Up to `size` results by key, least recently used dropped first; safe to share between threads."""

    def __init__(self, size: int) -> None:
        self._kept: OrderedDict[Hashable, tuple[Any, T]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(
        self,
        key: Hashable,
        stamp: Any,
        make: Callable[[], T],
        same: Callable[[Any, Any], bool] = operator.eq,
    ) -> T:
        """The result kept for `key` when `same(kept stamp, stamp)`, else `make()` (kept with `stamp`)."""
        kept = self.kept(key, stamp, same)
        if kept is not None:
            return kept
        value = make()
        self.keep(key, stamp, value)
        return value

    def kept(self, key: Hashable, stamp: Any, same: Callable[[Any, Any], bool] = operator.eq) -> T | None:
        """The result kept for `key` when `same(kept stamp, stamp)`, else None."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and same(kept[0], stamp):
                self._kept.move_to_end(key)
                return kept[1]
        return None

    def keep(self, key: Hashable, stamp: Any, value: T) -> None:
        """Keep `value` for `key`, read in the state `stamp`."""
        with self._lock:
            self._kept[key] = (stamp, value)
            self._kept.move_to_end(key)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)

    def clear(self) -> None:
        """Forget everything kept."""
        with self._lock:
            self._kept.clear()
