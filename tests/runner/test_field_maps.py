"""The records the runner maps by field name: each field it copies has a field of that name to go to.

A grade stores its grader's result field for field (`_ok_grade`), and a kept reply and the store's
cache entry copy each other so (`StoreResponseCache`); a field added to one side only would otherwise
fail at grading or caching time, not here.
"""

from __future__ import annotations

from dataclasses import fields

from abbench.graders import GradeResult
from abbench.llm import CachedReply
from abbench.runner._cache import _REPLY_FIELDS
from abbench.runner._grading import _RESULT_FIELDS
from abbench.store import CacheEntry, GradeWrite


def test_every_field_of_a_grader_result_is_a_grade_column():
    assert set(_RESULT_FIELDS) <= set(GradeWrite._fields)
    assert set(_RESULT_FIELDS) | {"cached"} == {f.name for f in fields(GradeResult)}


def test_every_field_of_a_kept_reply_is_a_field_of_the_store_entry():
    assert set(_REPLY_FIELDS) == {f.name for f in fields(CachedReply)}
    assert set(_REPLY_FIELDS) <= {f.name for f in fields(CacheEntry)}
