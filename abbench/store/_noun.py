"""The base of the store's nouns: each holds the open store and reaches everything else through it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from abbench.store._store import Store


class Noun:
    """One noun of the store (``store.runs``, ``store.grades``, …): its SQL and its records.

    A noun keeps no state of its own beyond a few memos; the connections, transactions and read
    snapshots are the core's (`Store`), reached as ``self._store``, and another noun's verbs as
    ``self._store.<noun>``, so each class says what it needs of the others where it uses it.
    """

    def __init__(self, store: Store) -> None:
        self._store = store

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._store!r}>"
