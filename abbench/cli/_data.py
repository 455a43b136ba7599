"""Commands for datasets and mapping profiles: import, datasets, profiles."""

from __future__ import annotations
