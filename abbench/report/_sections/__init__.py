"""The report's sections: each turns the library's results into HTML and figures.

Every section reads the library's typed results, by attribute: `ExperimentMetrics` (arms, domains,
stability, usage, judges, confusion), `Comparison` and its `CaseChange`s and `PairwiseSummary`s,
`GateResult`, `MultiComparison`, `PositionBias`, `CaseDetail`, `Disagreement`, `Review`,
`JudgeAgreement`, `SnapshotDiff`, `ExperimentActivation`, `TriggerHelp`, `RunOverview` and `Provenance` — never their ``.as_dict()`` views
(only a gate dimension's `evidence`, a free-form record of figures in the library too, is read by key).

A section returns a list of parts — HTML text or plotly figures — that `show_parts` displays in order.
Sections never compute statistics; they choose what to show and say so in a sentence when there is
nothing to show. The report notebook reads them from `abbench.report`; each concept has its module:
per-arm figures (`_arms`), skill activation (`_activation`), confusion matrices (`_confusion`), the decision (`_decision`), arms compared (`_comparison`), single cases and
their review (`_cases`), runs and provenance (`_runs`), and what they share (`_parts`).
"""
