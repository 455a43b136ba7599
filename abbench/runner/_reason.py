"""The base of the reasons the store keeps beside an experiment (why it halted, paused or stopped)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, ClassVar, Self


class StoredReason:
    """Mixin for frozen reason dataclasses the store keeps as JSON: ``as_dict()`` with their `text`,
    ``from_dict()`` back (keys a later version dropped are ignored, None stays None)."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def text(self) -> str:
        """The reason in words, as every view shows it."""
        raise NotImplementedError

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (what the store keeps), with the text."""
        return {**asdict(self), "text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Self | None:
        """The reason stored by `as_dict` (None stays None)."""
        if not data:
            return None
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})
