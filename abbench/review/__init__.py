"""Reviews of disagreements: what people say about cases, which cases to look at, and judge agreement."""

from __future__ import annotations

from abbench.review._api import (
    HUMAN_LABELS,
    JudgeAgreement,
    add_review,
    judge_agreement,
    review_history,
    reviews,
    undo_review,
)
from abbench.review._cases import (
    DISAGREEMENT_KINDS,
    AttemptView,
    CaseDetail,
    CaseView,
    Disagreement,
    Evidence,
    GradeView,
    RunView,
    ToolCall,
    case_detail,
    disagreements,
)
from abbench.store import Review
from abbench.types import REVIEW_VERDICTS

__all__ = [
    "DISAGREEMENT_KINDS",
    "HUMAN_LABELS",
    "REVIEW_VERDICTS",
    "AttemptView",
    "CaseDetail",
    "CaseView",
    "Disagreement",
    "Evidence",
    "GradeView",
    "JudgeAgreement",
    "Review",
    "RunView",
    "ToolCall",
    "add_review",
    "case_detail",
    "disagreements",
    "judge_agreement",
    "review_history",
    "reviews",
    "undo_review",
]
