"""Store methods for mapping profiles: save (a new version only when it changed), look up, list, resolve."""

from __future__ import annotations

import difflib
import logging
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abbench import _actions as do
from abbench.dataset import ProfileInfo
from abbench.errors import MappingError, NotFoundError, UsageError
from abbench.store._base import current_user, dumps, loads, now_iso
from abbench.store._noun import Noun

if TYPE_CHECKING:
    from abbench.dataset import MappingProfile

log = logging.getLogger(__name__)


def _stored(spec: str, name: str | None, version: int) -> MappingProfile:
    """A stored profile's JSON as its model, with its version."""
    from abbench.dataset import MappingProfile  # here: pydantic loads only when profiles are used

    profile = MappingProfile.from_dict(loads(spec), where=f"stored profile {name}")
    return profile.model_copy(update={"version": version})


class Profiles(Noun):
    """Saving and finding mapping profiles (part of ``store.profiles``)."""

    def save(self, profile: MappingProfile, *, name: str | None = None) -> MappingProfile:
        """Save a mapping profile under its name; return it with its version.

        Saving a profile that differs from the latest version of its name makes version n+1;
        saving one identical to the latest version returns that version. Lookup files are read and
        kept inline, so the saved profile works after they move.

        Args:
            profile: The profile.
            name: The name to save it under (default: ``profile.name``).

        Raises:
            UsageError: the profile has no name and none is given.
        """
        if name is not None:
            profile = profile.evolve(name=name)
        if not profile.name:
            raise UsageError("a profile needs a name to be saved: save_profile(profile, name='...')")
        profile = profile.with_lookups_loaded(Path.cwd()).model_copy(update={"version": None})
        creator = current_user()
        with self._store.transaction() as conn:
            # The same content as its creator's latest version of the name is that version; another
            # owner's profile of the name is never reused nor changed (the versions count on, globally).
            latest = conn.execute(
                "SELECT version, spec FROM mapping_profiles WHERE name = ? AND created_by = ? "
                "ORDER BY version DESC LIMIT 1",
                (profile.name, creator),
            ).fetchone()
            last = conn.execute(
                "SELECT MAX(version) FROM mapping_profiles WHERE name = ?", (profile.name,)
            ).fetchone()[0]
            if latest is not None:
                stored = _stored(latest["spec"], profile.name, latest["version"])
                if stored.identity() == profile.identity():
                    return stored
            version = (last or 0) + 1
            saved = profile.model_copy(update={"version": version})
            shape = saved.shape.model_dump(mode="json") if saved.shape is not None else None
            conn.execute(
                "INSERT INTO mapping_profiles (name, version, spec, shape, created_at, created_by) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (saved.name, version, saved.to_json(), dumps(shape), now_iso(), creator),
            )
        log.info("saved mapping profile %s", saved.ref)
        return saved

    def get(self, name: str, version: int | None = None, *, owner: str | None = None) -> MappingProfile:
        """A saved profile: ``name`` (latest version), ``name@3``, or `name` with `version`.

        Args:
            name: The name, or ``name@version``.
            version: The version (default: the latest).
            owner: Only among the profiles this owner saved (a server resolves a caller's names so);
                None: among every profile of the store.

        Raises:
            NotFoundError: no such profile or version; the message lists what exists (of `owner`'s).
        """
        row = self._profile_row(name, version, owner)
        return _stored(row["spec"], row["name"], row["version"])

    def _profile_row(self, name: str, version: int | None = None, owner: str | None = None) -> sqlite3.Row:
        if version is None and "@" in name:
            name, _, v = name.rpartition("@")
            if not v.isdigit():
                raise UsageError(f"a profile version is a number: {name}@{v} → e.g. {name}@1")
            version = int(v)
        mine = "" if owner is None else " AND created_by = ?"
        of = () if owner is None else (owner,)
        if version is None:
            row = self._store.query_one(
                f"SELECT * FROM mapping_profiles WHERE name = ?{mine} ORDER BY version DESC LIMIT 1",
                (name, *of),
            )
        else:
            row = self._store.query_one(
                f"SELECT * FROM mapping_profiles WHERE name = ? AND version = ?{mine}", (name, version, *of)
            )
        if row is None:
            versions = [
                r[0]
                for r in self._store.query(
                    f"SELECT version FROM mapping_profiles WHERE name = ?{mine}", (name, *of)
                )
            ]
            if versions:
                raise NotFoundError(f"profile {name!r} has no version {version}; versions: {versions}")
            names = [
                r[0]
                for r in self._store.query(
                    "SELECT DISTINCT name FROM mapping_profiles"
                    + (" WHERE created_by = ?" if owner is not None else "")
                    + " ORDER BY name",
                    of,
                )
            ]
            close = difflib.get_close_matches(name, names, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise NotFoundError(
                f"no saved mapping profile {name!r}{hint}; saved: {', '.join(names) or 'none'}. Save one with ",
                do.save_profile(),
                ", or pass a .yaml/.json profile file",
                kind="mapping profile",
                name=name,
                choices=names,
            )
        return row

    def all(self, *, all_versions: bool = False) -> list[ProfileInfo]:
        """Saved profiles, by name: the latest version of each (or every version)."""
        rows = self._store.query(
            "SELECT p.*, (SELECT COUNT(*) FROM mapping_profiles q WHERE q.name = p.name) AS n_versions, "
            "(SELECT COUNT(*) FROM datasets d WHERE d.profile_id = p.id) AS n_datasets "
            "FROM mapping_profiles p "
            + (
                ""
                if all_versions
                else "WHERE p.version = (SELECT MAX(version) FROM mapping_profiles q WHERE q.name = p.name) "
            )
            + "ORDER BY p.name, p.version"
        )
        out = []
        for row in rows:
            out.append(
                ProfileInfo(
                    _stored(row["spec"], row["name"], row["version"]),
                    row["created_at"],
                    row["created_by"],
                    row["n_versions"],
                    row["n_datasets"],
                )
            )
        return out

    def resolve(self, profile: Any) -> MappingProfile | None:
        """The profile meant by `profile`: a `MappingProfile`, a dict, a ``.yaml``/``.json`` file, or a
        saved name (``name`` for the latest version, ``name@3``); None stays None.

        Raises:
            MappingError: a profile file is missing or invalid.
            NotFoundError: no saved profile has that name or version.
        """
        from abbench.dataset import MappingProfile, load_profile

        if profile is None or isinstance(profile, (MappingProfile, dict)):
            return load_profile(profile) if profile is not None else None
        text = os.fspath(profile)
        path = Path(text).expanduser()
        if path.is_file():
            return MappingProfile.from_file(path)
        if path.suffix.lower() in (".json", ".yaml", ".yml"):
            raise MappingError(f"no mapping profile file {path}")
        return self.get(text)
