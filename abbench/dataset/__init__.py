"""Datasets: reading CSV/XLSX/JSONL/JSON files, mapping rows to cases, validating and fingerprinting them.

Pure functions only: nothing here touches the store (``store.datasets.import_file`` writes what this computes).
"""

from __future__ import annotations

import typing

from abbench import _lazy

if typing.TYPE_CHECKING:
    from abbench.dataset._canonical import (
        ContentHasher as ContentHasher,
        canonical_json as canonical_json,
        case_line as case_line,
        content_hash,
        fingerprint,
        generated_case_id as generated_case_id,
        unpack_source_row as unpack_source_row,
    )
    from abbench.dataset._conflicts import ConflictLabel, ConflictRow, LabelConflict, LabelConflicts
    from abbench.dataset._convert import (
        Conversion,
        ImportPlan as ImportPlan,
        Preview,
        ProfileLike,
        check_report as check_report,
        convert_file,
        default_name as default_name,
        load_profile,
        plan_import,
        preview_import,
    )
    from abbench.dataset._csv import DELIMITERS, sniff_delimiter as sniff_delimiter
    from abbench.dataset._dialogues import MAX_DIALOGUE_TURNS, MAX_HISTORY_TURNS
    from abbench.dataset._formats import FORMATS, RowChunk as RowChunk, column_letter as column_letter
    from abbench.dataset._info import Dataset, DatasetInfo, ProfileInfo
    from abbench.dataset._jsonpath import JsonPath as JsonPath, PathError, parse_path as parse_path
    from abbench.dataset._kind import (
        EXPECTED_KINDS,
        INFERRED_LABELS_MAX,
        ExpectedKind,
        InferredLabels,
        gold_kind as gold_kind,
        infer_label_set,
        looks_like_labels as looks_like_labels,
    )
    from abbench.dataset._mapping import (
        Converted as Converted,
        Mapper as Mapper,
        MemoryIds as MemoryIds,
        resolve_duplicates as resolve_duplicates,
    )
    from abbench.dataset._match import ProfileMatch, ProfileMatches, match_profile, match_profiles
    from abbench.dataset._names import SYNONYMS as SYNONYMS
    from abbench.dataset._profile import (
        SPECIAL_SOURCES,
        Conversation,
        Lookup,
        MappingProfile,
        ReadOptions,
        ReadSpec,
        Shape,
        Source,
    )
    from abbench.dataset._readers import (
        CHUNK_SIZE as CHUNK_SIZE,
        Row as Row,
        Table,
        ValueCounts,
        check_data_file as check_data_file,
        read_table,
        sheet_names,
    )
    from abbench.dataset._recipes import RECIPES, Recipe, RowStream as RowStream, get_recipe
    from abbench.dataset._roles import (
        CHAT_ROLES,
        SPEAKER_ROLES,
        chat_role,
        turn_speaker as turn_speaker,
        turn_text as turn_text,
    )
    from abbench.dataset._suggest import Suggestion, declare_label_set as declare_label_set, suggest_mapping
    from abbench.dataset._text import (
        Encoding,
        detect_encoding,
        label_key as label_key,
        normalize_text as normalize_text,
    )
    from abbench.dataset._validate import (
        PROBLEM_HINTS as PROBLEM_HINTS,
        PROBLEM_KINDS,
        Problem,
        ProblemKind,
        ReportBuilder as ReportBuilder,
        ValidationReport,
        compact_locations as compact_locations,
    )

__all__ = [
    "CHAT_ROLES",
    "DELIMITERS",
    "EXPECTED_KINDS",
    "FORMATS",
    "INFERRED_LABELS_MAX",
    "MAX_DIALOGUE_TURNS",
    "MAX_HISTORY_TURNS",
    "PROBLEM_KINDS",
    "RECIPES",
    "SPEAKER_ROLES",
    "SPECIAL_SOURCES",
    "ConflictLabel",
    "ConflictRow",
    "Conversation",
    "Conversion",
    "Dataset",
    "DatasetInfo",
    "Encoding",
    "ExpectedKind",
    "InferredLabels",
    "LabelConflict",
    "LabelConflicts",
    "Lookup",
    "MappingProfile",
    "PathError",
    "Preview",
    "Problem",
    "ProblemKind",
    "ProfileInfo",
    "ProfileLike",
    "ProfileMatch",
    "ProfileMatches",
    "ReadOptions",
    "ReadSpec",
    "Recipe",
    "Shape",
    "Source",
    "Suggestion",
    "Table",
    "ValidationReport",
    "ValueCounts",
    "chat_role",
    "content_hash",
    "convert_file",
    "detect_encoding",
    "fingerprint",
    "get_recipe",
    "infer_label_set",
    "load_profile",
    "match_profile",
    "match_profiles",
    "plan_import",
    "preview_import",
    "read_table",
    "sheet_names",
    "suggest_mapping",
]

__getattr__, __dir__ = _lazy.exports(
    __name__,
    {
        "abbench.dataset._canonical": (
            "ContentHasher",
            "canonical_json",
            "case_line",
            "content_hash",
            "fingerprint",
            "generated_case_id",
            "unpack_source_row",
        ),
        "abbench.dataset._conflicts": (
            "ConflictLabel",
            "ConflictRow",
            "LabelConflict",
            "LabelConflicts",
        ),
        "abbench.dataset._convert": (
            "Conversion",
            "ImportPlan",
            "Preview",
            "ProfileLike",
            "check_report",
            "convert_file",
            "default_name",
            "load_profile",
            "plan_import",
            "preview_import",
        ),
        "abbench.dataset._csv": (
            "DELIMITERS",
            "sniff_delimiter",
        ),
        "abbench.dataset._dialogues": (
            "MAX_DIALOGUE_TURNS",
            "MAX_HISTORY_TURNS",
        ),
        "abbench.dataset._formats": (
            "FORMATS",
            "RowChunk",
            "column_letter",
        ),
        "abbench.dataset._info": (
            "Dataset",
            "DatasetInfo",
            "ProfileInfo",
        ),
        "abbench.dataset._jsonpath": (
            "JsonPath",
            "PathError",
            "parse_path",
        ),
        "abbench.dataset._kind": (
            "EXPECTED_KINDS",
            "INFERRED_LABELS_MAX",
            "ExpectedKind",
            "InferredLabels",
            "gold_kind",
            "infer_label_set",
            "looks_like_labels",
        ),
        "abbench.dataset._mapping": (
            "Converted",
            "Mapper",
            "MemoryIds",
            "resolve_duplicates",
        ),
        "abbench.dataset._match": (
            "ProfileMatch",
            "ProfileMatches",
            "match_profile",
            "match_profiles",
        ),
        "abbench.dataset._names": ("SYNONYMS",),
        "abbench.dataset._profile": (
            "SPECIAL_SOURCES",
            "Conversation",
            "Lookup",
            "MappingProfile",
            "ReadOptions",
            "ReadSpec",
            "Shape",
            "Source",
        ),
        "abbench.dataset._readers": (
            "CHUNK_SIZE",
            "Row",
            "Table",
            "ValueCounts",
            "check_data_file",
            "read_table",
            "sheet_names",
        ),
        "abbench.dataset._roles": (
            "CHAT_ROLES",
            "SPEAKER_ROLES",
            "chat_role",
            "turn_speaker",
            "turn_text",
        ),
        "abbench.dataset._recipes": (
            "RECIPES",
            "Recipe",
            "RowStream",
            "get_recipe",
        ),
        "abbench.dataset._suggest": (
            "Suggestion",
            "declare_label_set",
            "suggest_mapping",
        ),
        "abbench.dataset._text": (
            "Encoding",
            "detect_encoding",
            "label_key",
            "normalize_text",
        ),
        "abbench.dataset._validate": (
            "PROBLEM_HINTS",
            "PROBLEM_KINDS",
            "Problem",
            "ProblemKind",
            "ReportBuilder",
            "ValidationReport",
            "compact_locations",
        ),
    },
    public=__all__,
)
