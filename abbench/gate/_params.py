"""A gate's rules checked against the experiment: a class, domain or k a rule names must exist."""

from __future__ import annotations

import difflib

from abbench.errors import UsageError
from abbench.gate._rules import GateRule
from abbench.metrics import ExperimentMetrics, dataset_labels
from abbench.store import Experiment, Store


def check_params(
    rules: list[GateRule], exp: Experiment, store: Store, metrics: list[ExperimentMetrics]
) -> None:
    """A class or domain a rule names must exist (a misspelling is a usage error, with "did you mean")."""
    labels: set[str] | None = None
    domains: set[str] | None = None
    for rule in rules:
        ref = rule.ref
        if ref is None or ref.param is None:
            continue
        name = ref.definition.name
        if name in ("f1[]", "precision[]", "recall[]"):
            if labels is None:
                # The label set, the gold labels and whatever the per-class tables list: a class absent
                # from the measured runs is a metric without a value, not a misspelling.
                labels = {str(x) for x in dataset_labels(store, exp.dataset_id)[0] or []}
                labels |= {
                    str(c.expected)
                    for c in store.datasets.load_cases(exp.dataset_id)
                    if c.expected is not None
                }
                for m in metrics:
                    for a in m.arms:
                        if a.classes is not None:
                            labels.update(map(str, a.classes.per_class))
            known, what = labels, "class"
        elif name in ("pass_at_k[]", "pass_hat_k[]"):
            # ASCII digits only: str.isdigit() takes "²", which int() refuses
            if not (ref.param.isascii() and ref.param.isdigit()) or not 1 <= int(ref.param) <= exp.rounds:
                raise UsageError(
                    f"{rule.where}: {rule.metric}: k must be a whole number from 1 to the experiment's "
                    f"{exp.rounds} round(s); got {ref.param!r} (pass@k needs k attempts per case)"
                )
            continue
        elif name in ("domain_accuracy[]", "domain_diff[]"):
            if domains is None:
                domains = {str(c.domain) for c in store.datasets.load_cases(exp.dataset_id) if c.domain}
            known, what = domains, "domain"
        else:
            continue
        if not known or ref.param in known or ref.param.casefold() in {k.casefold() for k in known}:
            continue
        close = difflib.get_close_matches(ref.param, sorted(known), n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        shown = ", ".join(sorted(known)[:20]) + (" …" if len(known) > 20 else "")
        plural = "classes" if what == "class" else "domains"
        raise UsageError(
            f"{rule.where}: {rule.metric}: no {what} {ref.param!r}{hint}; the {plural}: {shown}",
            kind=what,
            name=ref.param,
            choices=sorted(known),
        )
