"""Reviews of disagreements: what people say about cases, which cases to look at, and judge agreement."""

from __future__ import annotations

from abbench import _lazy
from abbench.review._agreement import (
    ReviewerAgreement,
    assign_review,
    review_assignments,
    reviewer_agreement,
    visible_reviews,
)
from abbench.review._all_cases import CASE_OUTCOMES, CasePage, CaseRow, CaseRun, case_page, case_table
from abbench.review._api import (
    HUMAN_LABELS as HUMAN_LABELS,
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
from abbench.review._pages import PAGE_SORTS, SAMPLE as SAMPLE, DisagreementPage, disagreement_page
from abbench.review._sample import CorrectedAccuracy, corrected_accuracy, draw_review_sample, sample_cases
from abbench.review._threshold import LowConfidence, default_threshold, low_confidence_threshold
from abbench.review._turns import HistoryExcerpt, TurnExcerpt
from abbench.store import Review, ReviewAssignment, ReviewSample
from abbench.types import REVIEW_VERDICTS

__all__ = [
    "CASE_OUTCOMES",
    "DISAGREEMENT_KINDS",
    "PAGE_SORTS",
    "REVIEW_VERDICTS",
    "AttemptView",
    "CaseDetail",
    "CasePage",
    "CaseRow",
    "CaseRun",
    "CaseView",
    "CorrectedAccuracy",
    "Disagreement",
    "DisagreementPage",
    "Evidence",
    "GradeView",
    "HistoryExcerpt",
    "JudgeAgreement",
    "LowConfidence",
    "Review",
    "ReviewAssignment",
    "ReviewSample",
    "ReviewerAgreement",
    "RunView",
    "ToolCall",
    "TurnExcerpt",
    "add_review",
    "assign_review",
    "case_detail",
    "case_page",
    "case_table",
    "corrected_accuracy",
    "default_threshold",
    "disagreement_page",
    "disagreements",
    "draw_review_sample",
    "judge_agreement",
    "low_confidence_threshold",
    "review_assignments",
    "review_history",
    "reviewer_agreement",
    "reviews",
    "sample_cases",
    "undo_review",
    "visible_reviews",
]

__dir__ = _lazy.listing(__all__)
