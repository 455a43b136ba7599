"""`DatasetInfo` (what the store knows about an imported dataset) and `Dataset` (that plus its cases)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from abbench._result import Result
from abbench.dataset._kind import ExpectedKind
from abbench.dataset._validate import ValidationReport
from abbench.errors import NotFoundError
from abbench.types import CASE_FIELDS, Case

if TYPE_CHECKING:  # pandas loads only when a frame is asked for
    import pandas as pd


@dataclass(frozen=True)
class DatasetInfo(Result):
    """An imported dataset: its identity, where it came from, how it was read and validated.

    Attributes:
        id: Row id in the store.
        fingerprint: ``name@<12 hex>``, the identity people and experiments use.
        name: The dataset's name.
        content_hash: sha256 (hex) over the canonical cases (see `abbench.dataset.canonical_json`).
        n_cases: Number of cases.
        label_set: The declared labels, or None.
        label_map: Gold value → label, as the profile declared it (graders use it too).
        expected_kind: Whether the gold values are labels or answers, and why (declared by the
            mapping's ``expected_kind:`` or ``label_set:``, else decided from every value at import).
        profile_name: The mapping profile used (the JSON holds `profile_ref` as ``profile`` instead).
        profile_version: Its version.
        source_file: The file's name when it was imported.
        source_sha256: sha256 of the file's bytes.
        upload_path: The stored copy, relative to the store folder.
        read_options: How the file was read: format, encoding, delimiter, sheet, header row, splits, recipe.
        validation: The validation report (with the skipped rows, when ``skip_invalid`` was used).
        created_at: When it was imported (UTC, ISO-8601).
        created_by: Who imported it.
        reused: True when an import found these exact cases already stored and returned them.
        name_versions: For what an import returns: the fingerprints of the stored datasets of its name,
            oldest first — a name imported again with other cases gets a new version, and the name
            alone then means the last (see `version`). Empty elsewhere.
        requested_name: For what an import returns: the name the import asked for (given, or the
            file's stem) when it found these cases stored under another name and returned them (that
            name is not given to them). None elsewhere.
    """

    id: int
    fingerprint: str
    name: str
    content_hash: str
    n_cases: int
    label_set: tuple[str, ...] | None = None
    label_map: dict[str, str] = field(default_factory=dict)
    expected_kind: ExpectedKind | None = None
    profile_name: str | None = field(default=None, metadata={"export": "profile=profile_ref"})
    profile_version: int | None = field(default=None, metadata={"export": False})
    source_file: str | None = None
    source_sha256: str | None = None
    upload_path: str | None = None
    read_options: dict[str, Any] = field(default_factory=dict)
    validation: ValidationReport = field(default_factory=ValidationReport)
    created_at: str | None = None
    created_by: str | None = None
    reused: bool = False
    name_versions: tuple[str, ...] = ()
    requested_name: str | None = None

    _extra_keys: ClassVar[str] = "version"

    @property
    def version(self) -> int | None:
        """Which version of its name an import returned (1 for the first dataset of that name), or None."""
        if self.fingerprint not in self.name_versions:
            return None
        return self.name_versions.index(self.fingerprint) + 1

    @property
    def short(self) -> str:
        """The first 12 hex of the content hash."""
        return self.content_hash[:12]

    @property
    def source_columns(self) -> list[str] | None:
        """The column names of a table's stored source rows (their cells, in order); None for other files."""
        columns: list[str] | None = self.read_options.get("columns")
        return columns

    @property
    def profile_ref(self) -> str | None:
        """``profile@version`` of the mapping used."""
        if self.profile_name is None:
            return None
        return f"{self.profile_name}@{self.profile_version}" if self.profile_version else self.profile_name

    to_dict = Result.as_dict

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DatasetInfo:
        """The dataset `to_dict` wrote, or a server's view of it (the mapping as ``profile_name`` and
        ``profile_version``; no id or paths of the server's: 0 and None)."""
        name, version = data.get("profile_name"), data.get("profile_version")
        if name is None and data.get("profile"):  # to_dict's ``name@version``
            name, _, number = str(data["profile"]).rpartition("@")
            name, version = (name, int(number)) if number.isdigit() else (str(data["profile"]), None)
        label_set = data.get("label_set")
        return cls(
            id=int(data.get("id") or 0),
            fingerprint=str(data["fingerprint"]),
            name=str(data["name"]),
            content_hash=str(data["content_hash"]),
            n_cases=int(data["n_cases"]),
            label_set=tuple(label_set) if label_set is not None else None,
            label_map=dict(data.get("label_map") or {}),
            expected_kind=ExpectedKind.from_dict(data.get("expected_kind")),
            profile_name=name,
            profile_version=version,
            source_file=data.get("source_file"),
            source_sha256=data.get("source_sha256"),
            upload_path=data.get("upload_path"),
            read_options=dict(data.get("read_options") or {}),
            validation=ValidationReport.from_dict(data.get("validation")),
            created_at=data.get("created_at"),
            created_by=data.get("created_by"),
            reused=bool(data.get("reused")),
            name_versions=tuple(data.get("name_versions") or ()),
            requested_name=data.get("requested_name"),
        )

    def __str__(self) -> str:
        return self.fingerprint


@dataclass(frozen=True)
class Dataset:
    """A dataset with its cases loaded, in file order.

    Attributes:
        info: What the store knows about it.
        cases: The cases.
    """

    info: DatasetInfo
    cases: tuple[Case, ...]

    @property
    def fingerprint(self) -> str:
        """``name@<12 hex>``."""
        return self.info.fingerprint

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    def __getitem__(self, index: int) -> Case:
        return self.cases[index]

    def get(self, case_id: str) -> Case:
        """The case with this id.

        Raises:
            NotFoundError: no such case.
        """
        for case in self.cases:
            if case.case_id == case_id:
                return case
        raise NotFoundError(f"{self.fingerprint} has no case {case_id!r}")

    def to_pandas(self) -> pd.DataFrame:
        """The cases as a DataFrame (one row per case, the case fields plus ``source_line``)."""
        import pandas as pd

        return pd.DataFrame.from_records(
            [{**{f: getattr(c, f) for f in CASE_FIELDS}, "source_line": c.source_line} for c in self.cases],
            columns=[*CASE_FIELDS, "source_line"],
        )


@dataclass(frozen=True)
class ProfileInfo:
    """A saved mapping profile version, with who saved it and how much it is used.

    Attributes:
        profile: The profile (``name`` and ``version`` set).
        created_at: When this version was saved.
        created_by: Who saved it.
        n_versions: How many versions the name has.
        n_datasets: How many datasets were imported with this version.
    """

    profile: Any
    created_at: str | None = None
    created_by: str | None = None
    n_versions: int = 1
    n_datasets: int = 0

    @property
    def ref(self) -> str:
        """``name@version``."""
        return f"{self.profile.name}@{self.profile.version}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "name": self.profile.name,
            "version": self.profile.version,
            "ref": self.ref,
            "created_at": self.created_at,
            "created_by": self.created_by,
            "n_versions": self.n_versions,
            "n_datasets": self.n_datasets,
            "spec": self.profile.spec(),
        }
