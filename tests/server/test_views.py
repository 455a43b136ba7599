"""The JSON view of a progress is made once per progress object, and is what `plain` makes of it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from abbench._result import plain
from abbench.server._common import progress_view


@dataclass
class _Progress:
    experiment_id: int
    done: int
    rates: dict = field(default_factory=lambda: {"a": math.nan, 1: (1, 2.5)})

    def as_dict(self) -> dict:
        return {"experiment_id": self.experiment_id, "done": self.done, "rates": self.rates}


def test_one_view_per_progress_object_and_a_new_one_for_the_next():
    first = _Progress(7, 10)
    view = progress_view(first)
    assert (
        view
        == plain(first.as_dict())
        == {"experiment_id": 7, "done": 10, "rates": {"a": None, "1": [1, 2.5]}}
    )
    assert progress_view(first) is view  # the pollers sharing `first` share its view
    later = _Progress(7, 11)
    assert progress_view(later)["done"] == 11  # a new count of the same experiment is a new view
    assert progress_view(_Progress(8, 1))["experiment_id"] == 8
