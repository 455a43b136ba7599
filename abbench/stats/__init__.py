"""Statistics for comparing agent arms: pure functions over plain sequences that return named results.

Every function takes lists, tuples or numpy arrays (booleans, 0/1 or floats), refuses empty input and
NaN with a :class:`~abbench.errors.UsageError` that says which argument and position, and returns a
frozen result with ``as_dict()``. Differences between two arms are always **b − a** (positive: arm B,
the treatment, is higher). Method follows Evan Miller, "Adding Error Bars to Evals" (2024,
arXiv:2411.00640): central-limit standard errors, clustered errors for grouped cases, per-case means
for repeated rounds, paired differences, and power analysis. Only numpy and scipy are imported.
"""

from __future__ import annotations

import typing

from abbench import _lazy

if typing.TYPE_CHECKING:
    from abbench.stats._agreement import Kappa, cohen_kappa, fleiss_kappa
    from abbench.stats._base import FEW_CLUSTERS, FewClustersWarning, Interval, StatsWarning
    from abbench.stats._bootstrap import BOOTSTRAP_STATISTICS, BootstrapResult, paired_bootstrap
    from abbench.stats._describe import Summary, percentile, summary
    from abbench.stats._errors import ClusteredSE, MeanSE, RepeatedSE, clustered_se, mean_se, repeated_se
    from abbench.stats._exact import exact_means
    from abbench.stats._intervals import (
        PAIRED_INTERVAL_METHODS,
        Proportion,
        paired_proportion_interval,
        paired_score_interval,
        proportion,
        wilson_interval,
    )
    from abbench.stats._mcnemar import (
        CochransQ,
        McNemarResult,
        PairedOutcomes,
        cochrans_q,
        mcnemar_exact,
        mcnemar_midp,
        mcnemar_score,
        paired_outcomes,
    )
    from abbench.stats._paired import PairedDifference, paired_difference, paired_ratio_interval
    from abbench.stats._passk import PassK, pass_at_k, pass_at_k_case, pass_at_k_curve, pass_hat_k_case
    from abbench.stats._plan import Plan, independent_discordance, plan_experiment
    from abbench.stats._power import (
        RULE_OF_THUMB,
        WHY_THEY_DIFFER,
        MinDetectableEffect,
        PowerInputs,
        SampleSize,
        TwoProportionMDE,
        TwoProportionSampleSize,
        estimate_power_inputs,
        min_detectable_effect,
        min_detectable_effect_two_proportions,
        power_paired,
        rule_of_thumb_mde,
        rule_of_thumb_n,
        sample_size_paired,
        sample_size_two_proportions,
    )
    from abbench.stats._ppi import PredictionPowered, ppi_mean
    from abbench.stats._sequential import (
        CS_METHOD,
        DECISIONS,
        ConfidenceSequence,
        SequentialTest,
        StoppingRule,
        StoppingSimulation,
        confidence_sequence,
        confidence_sequence_bounds,
        sequential_order,
        simulate_stopping,
    )
    from abbench.stats._tests import HolmCorrection, TwoProportionTest, holm_correction, two_proportion_test

__all__ = [
    "BOOTSTRAP_STATISTICS",
    "CS_METHOD",
    "DECISIONS",
    "FEW_CLUSTERS",
    "PAIRED_INTERVAL_METHODS",
    "RULE_OF_THUMB",
    "WHY_THEY_DIFFER",
    "BootstrapResult",
    "ClusteredSE",
    "CochransQ",
    "ConfidenceSequence",
    "FewClustersWarning",
    "HolmCorrection",
    "Interval",
    "Kappa",
    "McNemarResult",
    "MeanSE",
    "MinDetectableEffect",
    "PairedDifference",
    "PairedOutcomes",
    "PassK",
    "Plan",
    "PowerInputs",
    "PredictionPowered",
    "Proportion",
    "RepeatedSE",
    "SampleSize",
    "SequentialTest",
    "StatsWarning",
    "StoppingRule",
    "StoppingSimulation",
    "Summary",
    "TwoProportionMDE",
    "TwoProportionSampleSize",
    "TwoProportionTest",
    "clustered_se",
    "cochrans_q",
    "cohen_kappa",
    "confidence_sequence",
    "confidence_sequence_bounds",
    "estimate_power_inputs",
    "exact_means",
    "fleiss_kappa",
    "holm_correction",
    "independent_discordance",
    "mcnemar_exact",
    "mcnemar_midp",
    "mcnemar_score",
    "mean_se",
    "min_detectable_effect",
    "min_detectable_effect_two_proportions",
    "paired_bootstrap",
    "paired_difference",
    "paired_outcomes",
    "paired_proportion_interval",
    "paired_ratio_interval",
    "paired_score_interval",
    "pass_at_k",
    "pass_at_k_case",
    "pass_at_k_curve",
    "pass_hat_k_case",
    "percentile",
    "plan_experiment",
    "power_paired",
    "ppi_mean",
    "proportion",
    "repeated_se",
    "rule_of_thumb_mde",
    "rule_of_thumb_n",
    "sample_size_paired",
    "sample_size_two_proportions",
    "sequential_order",
    "simulate_stopping",
    "summary",
    "two_proportion_test",
    "wilson_interval",
]

__getattr__, __dir__ = _lazy.exports(
    __name__,
    {
        "abbench.stats._agreement": (
            "Kappa",
            "cohen_kappa",
            "fleiss_kappa",
        ),
        "abbench.stats._base": (
            "FEW_CLUSTERS",
            "FewClustersWarning",
            "Interval",
            "StatsWarning",
        ),
        "abbench.stats._bootstrap": (
            "BOOTSTRAP_STATISTICS",
            "BootstrapResult",
            "paired_bootstrap",
        ),
        "abbench.stats._describe": (
            "Summary",
            "percentile",
            "summary",
        ),
        "abbench.stats._exact": ("exact_means",),
        "abbench.stats._errors": (
            "ClusteredSE",
            "MeanSE",
            "RepeatedSE",
            "clustered_se",
            "mean_se",
            "repeated_se",
        ),
        "abbench.stats._intervals": (
            "PAIRED_INTERVAL_METHODS",
            "Proportion",
            "paired_proportion_interval",
            "paired_score_interval",
            "proportion",
            "wilson_interval",
        ),
        "abbench.stats._mcnemar": (
            "CochransQ",
            "McNemarResult",
            "PairedOutcomes",
            "cochrans_q",
            "mcnemar_exact",
            "mcnemar_midp",
            "mcnemar_score",
            "paired_outcomes",
        ),
        "abbench.stats._paired": (
            "PairedDifference",
            "paired_difference",
            "paired_ratio_interval",
        ),
        "abbench.stats._passk": (
            "PassK",
            "pass_at_k",
            "pass_at_k_case",
            "pass_at_k_curve",
            "pass_hat_k_case",
        ),
        "abbench.stats._plan": (
            "Plan",
            "independent_discordance",
            "plan_experiment",
        ),
        "abbench.stats._power": (
            "RULE_OF_THUMB",
            "WHY_THEY_DIFFER",
            "MinDetectableEffect",
            "PowerInputs",
            "SampleSize",
            "TwoProportionMDE",
            "TwoProportionSampleSize",
            "estimate_power_inputs",
            "min_detectable_effect",
            "min_detectable_effect_two_proportions",
            "power_paired",
            "rule_of_thumb_mde",
            "rule_of_thumb_n",
            "sample_size_paired",
            "sample_size_two_proportions",
        ),
        "abbench.stats._ppi": (
            "PredictionPowered",
            "ppi_mean",
        ),
        "abbench.stats._sequential": (
            "CS_METHOD",
            "DECISIONS",
            "ConfidenceSequence",
            "SequentialTest",
            "StoppingRule",
            "StoppingSimulation",
            "confidence_sequence",
            "confidence_sequence_bounds",
            "sequential_order",
            "simulate_stopping",
        ),
        "abbench.stats._tests": (
            "HolmCorrection",
            "TwoProportionTest",
            "holm_correction",
            "two_proportion_test",
        ),
    },
    public=__all__,
)
