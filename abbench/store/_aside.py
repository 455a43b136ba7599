"""A read run in a thread of its own beside the caller's (`Store.read_aside`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

_T = TypeVar("_T")


class Aside(Generic[_T]):
    """A read started by `StoreBase.read_aside`: its value once `result` is called."""

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self._value: Any = None
        self._error: BaseException | None = None

    def run(self, read: Callable[[], _T]) -> None:
        """Run `read`, keeping its value or its error for `result`."""
        try:
            self._value = read()
        except BaseException as exc:  # handed to the caller by `result`
            self._error = exc

    def result(self) -> _T:
        """The read's value, once it is done; its error raised here when it failed."""
        if self.thread is not None:
            self.thread.join()
        if self._error is not None:
            raise self._error
        value: _T = self._value
        return value
