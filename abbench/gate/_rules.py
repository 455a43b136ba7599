"""Gate rules: ``{metric, op, value, severity}``, read from JSON or YAML with messages naming rule, line and field."""

from __future__ import annotations

import difflib
import json
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abbench._utf8 import read_utf8
from abbench._yaml import compose_yaml, error_at, error_problem, load_yaml
from abbench.compare import DEFAULT_MARGIN
from abbench.errors import UsageError
from abbench.gate._coverage import check_min_coverage
from abbench.gate._decision import COST_WARN_SHARE as COST_WARN_SHARE
from abbench.gate._namespace import MetricRef, parse_metric
from abbench.gate._words import Severity

OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}
"""The comparison operators a rule may use."""
SEVERITIES = tuple(Severity)
"""``block`` fails the gate; ``warn`` is reported and never blocks."""
_FIELDS = {"metric", "op", "value", "severity", "name", "description", "allow_missing", "margin"}
_K_METRICS = ("pass_at_k", "pass_hat_k")  # ``k:`` in a rule: the attempts these metrics are about
_MARGIN_METRICS = ("non_inferior",)
"""Metrics judged against a rule's own ``margin:`` (and written without op and value: ``== true``)."""
_SHORTHAND = re.compile(
    r"^\s*(?P<metric>\S+)\s*(?P<op>>=|<=|==|!=|>|<)\s*(?P<value>\S+)\s*(?:\((?P<sev>block|warn)\))?\s*$"
)


@dataclass(frozen=True)
class GateRule:
    """One gate rule.

    Attributes:
        metric: The metric as written (see the namespace in `abbench.gate`).
        op: One of `OPS`.
        value: The threshold: a number, or true/false for yes/no metrics.
        severity: ``block`` (the default) or ``warn``.
        name: A short name shown with the outcome (default: the rule itself).
        description: Why the rule exists.
        allow_missing: When the metric cannot be computed (one round for a flip rate, no cost recorded),
            pass instead of failing.
        margin: For ``non_inferior``: the non-inferiority margin in the comparison's unit (0.02 = 2
            points; None: `abbench.compare.DEFAULT_MARGIN`).
        where: Where the rule was written (``gate.yaml, rule 2 (line 7)``).
        ref: The parsed metric.
    """

    metric: str
    op: str
    value: Any
    severity: str = Severity.BLOCK.value
    name: str | None = None
    description: str | None = None
    allow_missing: bool = False
    where: str = ""
    ref: MetricRef | None = None
    margin: float | None = None

    @property
    def text(self) -> str:
        """The rule as one line: ``p95_latency_ms <= 8000``, ``non_inferior (margin 0.02)``."""
        if self.metric in _MARGIN_METRICS and self.op == "==" and self.value is True:
            return f"{self.metric} (margin {self.margin if self.margin is not None else DEFAULT_MARGIN:g})"
        value = str(self.value).lower() if isinstance(self.value, bool) else f"{self.value:g}"
        return f"{self.metric} {self.op} {value}"

    def as_dict(self) -> dict[str, Any]:
        """The rule as a gate file writes it."""
        data: dict[str, Any] = {
            "metric": self.metric,
            "op": self.op,
            "value": self.value,
            "severity": self.severity,
        }
        if self.name:
            data["name"] = self.name
        if self.description:
            data["description"] = self.description
        if self.allow_missing:
            data["allow_missing"] = True
        if self.margin is not None:
            data["margin"] = self.margin
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateRule:
        """The rule `as_dict` wrote (a server's answer), unparsed: its words, not its metric's reader."""
        known = ("metric", "op", "value", "severity", "name", "description", "allow_missing", "margin")
        return cls(**{k: data[k] for k in known if k in data})


DEFAULT_RULES: tuple[dict[str, Any], ...] = (
    {
        "metric": "capability_pass",
        "op": "==",
        "value": True,
        "severity": Severity.BLOCK,
        "name": "capability",
        "description": "the candidate is better or not worse than the baseline within the comparison's "
        "non-inferiority margin, and no domain is significantly worse (inconclusive when the interval "
        "straddles the margin: too few cases to show it is not worse)",
    },
    {
        "metric": "cost_pass",
        "op": "==",
        "value": True,
        "severity": Severity.BLOCK,
        "name": "cost",
        "allow_missing": True,
        "description": "the candidate is not shown to cost more than 10 % extra (the lower bound of the "
        "interval of its cost over the baseline's) without being better (not assessed when no cost is recorded)",
    },
    {
        "metric": "cost_change_ci_low",
        "op": "<=",
        "value": COST_WARN_SHARE,
        "severity": Severity.WARN,
        "name": f"cost up at most {COST_WARN_SHARE:.0%}",
        "allow_missing": True,
        "description": f"warns when the mean cost per case is shown to rise more than {COST_WARN_SHARE:.0%} (the "
        "lower bound of its relative change is above it, so noise alone does not warn): a budget notices that, "
        "and cost is billed as a sum, so the mean is compared (the median is shown beside it)",
    },
    {
        "metric": "stability_pass",
        "op": "==",
        "value": True,
        "severity": Severity.BLOCK,
        "name": "stability",
        "allow_missing": True,
        "description": "the candidate is not shown to change its answers across rounds more often than the "
        "baseline by more than 5 points (the lower bound of the paired interval; not assessed with one round)",
    },
)

COST_WARNING: dict[str, Any] = {
    **next(r for r in DEFAULT_RULES if r["metric"] == "cost_change_ci_low"),
    "name": f"cost up at most {COST_WARN_SHARE:.0%} (added: no rule of the gate speaks of cost)",
}
"""The default rules' cost warning, added to a gate whose rules say nothing of cost when it fails: a gate file
about capability alone never passes plainly beside a candidate shown to cost a quarter more per case (or
fourteen times as much)."""
"""The rules used when neither a gate file nor the experiment's own gate gives any: the three dimensions
(capability is inconclusive, never passed, while the interval straddles the comparison's margin; cost and
stability are not assessed, rather than blocking, when there is no cost or one round) and a warning on a
cost increase above `COST_WARN_SHARE`."""

GATE_KEYS = ("rules", "name", "description", "baseline", "candidate", "min_coverage")
"""What a gate file may hold beside its rules: the pair it decides on and the coverage it needs."""


@dataclass(frozen=True)
class GateSpec:
    """A gate as written: its rules, and the pair and coverage it asks for.

    Attributes:
        rules: The rules.
        source: Where they came from: a file's path, ``experiment gate``, ``rules given`` or ``default rules``.
        baseline: The baseline arm the gate file names (None: not named there).
        candidate: The candidate arm it names.
        min_coverage: The share of planned runs per arm the decision needs (None: every run).
    """

    rules: list[GateRule]
    source: str
    baseline: str | None = None
    candidate: str | None = None
    min_coverage: float | None = None

    @property
    def pair(self) -> tuple[str, str] | None:
        """``(baseline, candidate)`` when the gate names them."""
        return (self.baseline, self.candidate) if self.baseline and self.candidate else None


def _line_numbers(text: str) -> list[int | None]:
    """The line of each rule in a YAML/JSON gate file, read from the YAML node tree (None when unknown)."""
    import yaml

    try:
        node = compose_yaml(text)
    except yaml.YAMLError:
        return []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if getattr(key, "value", None) == "rules":
                node = value
                break
    if not isinstance(node, yaml.SequenceNode):
        return []
    return [item.start_mark.line + 1 for item in node.value]


def _read_gate(path: str | Path) -> tuple[dict[str, Any], list[int | None]]:
    import yaml

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"gate file {path} does not exist")
    text = read_utf8(path)
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else load_yaml(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path}, line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg})"
        ) from None
    except yaml.YAMLError as exc:
        where = error_at(exc, ", line {line}, column {column}")
        raise UsageError(f"{path}{where}: not valid YAML ({error_problem(exc)})") from None
    if isinstance(data, dict):
        unknown = set(data) - set(GATE_KEYS)
        if unknown:
            close = [difflib.get_close_matches(str(k), GATE_KEYS, n=1) for k in sorted(map(str, unknown))]
            hint = "".join(f" (did you mean {c[0]!r}?)" for c in close if c)
            raise UsageError(
                f"{path}: unknown key(s) {', '.join(sorted(map(str, unknown)))}{hint}; a gate file is a list of "
                f"rules or a mapping with {', '.join(GATE_KEYS)}",
                kind="gate key",
                name=min(map(str, unknown)),
                choices=GATE_KEYS,
            )
    elif isinstance(data, list):
        data = {"rules": data}
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise UsageError(
            f"{path}: expected a list of rules (or {{rules: [...]}}), e.g. "
            '[{"metric": "diff_ci_low", "op": ">=", "value": 0, "severity": "block"}]'
        )
    return data, _line_numbers(text)


def read_gate_file(path: str | Path) -> tuple[list[Any], list[int | None]]:
    """The raw rules of a gate file (a list, or ``{rules: [...]}``) and each rule's line.

    Raises:
        UsageError: the file is missing or is not valid JSON/YAML (with the line and column).
    """
    data, lines = _read_gate(path)
    return data["rules"], lines


def parse_rules(
    raw: Any,
    *,
    origin: str = "gate",
    lines: list[int | None] | None = None,
    arms: tuple[str, ...] | None = None,
) -> list[GateRule]:
    """Validate rules given as dicts (or ``"metric op value"`` strings).

    Args:
        raw: A list of rules.
        origin: Where they came from, for messages (a file name, ``experiment gate``).
        lines: Each rule's line in its file, when known.
        arms: The gated experiment's arms, to check arm prefixes.

    Raises:
        UsageError: a rule is malformed; the message names the rule (number, name, line), the field, and
            the valid choices.
    """
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list | tuple):
        raise UsageError(f"{origin}: gate rules must be a list; got {type(raw).__name__}")
    rules = []
    for i, item in enumerate(raw, start=1):
        line = lines[i - 1] if lines and i - 1 < len(lines) else None
        where = f"{origin}, rule {i}" + (f" (line {line})" if line else "")
        rules.append(_rule(item, where, arms))
    return rules


def _rule(item: Any, where: str, arms: tuple[str, ...] | None) -> GateRule:
    if isinstance(item, str):
        match = _SHORTHAND.match(item)
        if not match:
            raise UsageError(
                f"{where}: {item!r} is not a rule; write 'metric op value' (e.g. 'p95_latency_ms <= 8000', "
                "optionally '(warn)') or {metric, op, value, severity}"
            )
        item = {
            "metric": match.group("metric"),
            "op": match.group("op"),
            "value": _literal(match.group("value")),
            "severity": match.group("sev") or Severity.BLOCK,
        }
    if not isinstance(item, dict):
        raise UsageError(f"{where}: a rule is a mapping {{metric, op, value, severity}}; got {item!r}")
    label = f"{where} ({item['name']})" if item.get("name") else where
    unknown = set(item) - _FIELDS - {"k"}
    if unknown:
        raise UsageError(
            f"{label}: unknown field(s) {', '.join(sorted(map(str, unknown)))}; a rule has {', '.join(sorted(_FIELDS))}"
        )
    if str(item.get("metric", "")).strip() in _MARGIN_METRICS:
        item = {"op": "==", "value": True, **item}
    elif "margin" in item:
        raise UsageError(
            f"{label}: margin belongs to {', '.join(_MARGIN_METRICS)} (e.g. {{metric: non_inferior, margin: 0.02}}); "
            f"{item.get('metric')!r} takes op and value"
        )
    margin = item.get("margin")
    if margin is not None and (
        isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin < 1
    ):
        raise UsageError(
            f"{label}: margin: a non-inferiority margin is a number in [0, 1) in the comparison's unit "
            f"(0.02 = 2 points); got {margin!r}"
        )
    for required in ("metric", "op", "value"):
        if required not in item:
            raise UsageError(f"{label}: missing field {required!r} (a rule needs metric, op and value)")
    if "k" in item or str(item["metric"]).strip().split(".")[-1] in _K_METRICS:
        item = {**item, "metric": _with_k(item, label)}
    try:
        ref = parse_metric(str(item["metric"]), arms)
    except UsageError as exc:
        raise exc.within(UsageError, f"{label}: metric: ") from None
    op = str(item["op"]).strip()
    if op not in OPS:
        raise UsageError(f"{label}: op {op!r} is not an operator; use one of {', '.join(OPS)}")
    value = item["value"]
    _check_value(ref, op, value, label)
    severity = str(item.get("severity", Severity.BLOCK)).strip().lower()
    if severity not in SEVERITIES:
        raise UsageError(f"{label}: severity {severity!r} is not one of {', '.join(SEVERITIES)}")
    allow = item.get("allow_missing", False)
    if not isinstance(allow, bool):
        raise UsageError(f"{label}: allow_missing must be true or false; got {allow!r}")
    return GateRule(
        metric=ref.text,
        op=op,
        value=value,
        severity=severity,
        name=str(item["name"]) if item.get("name") else None,
        description=str(item["description"]) if item.get("description") else None,
        allow_missing=allow,
        where=where,
        ref=ref,
        margin=float(margin) if margin is not None else None,
    )


def _check_value(ref: MetricRef, op: str, value: Any, label: str) -> None:
    """A yes/no metric takes true or false with == or !=; any other a finite number."""
    if ref.definition.kind == "bool":
        if not isinstance(value, bool):
            raise UsageError(
                f"{label}: value: {ref.text} is yes/no, so the value must be true or false; got {value!r}"
            )
        if op not in ("==", "!="):
            raise UsageError(f"{label}: op: {ref.text} is yes/no; compare it with == or !=, not {op}")
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(
            f"{label}: value: {ref.text} is a number, so the value must be a number; got {value!r}"
        )
    elif not math.isfinite(value):
        raise UsageError(
            f"{label}: value: {value!r} is not a finite number; NaN compares false with everything and "
            "infinity with nothing it could be, so the rule would never decide — give a number"
        )


def _with_k(item: dict[str, Any], label: str) -> str:
    """``pass_hat_k`` with ``k: 3`` as the metric ``pass_hat_k[3]`` (the parameterised form)."""
    metric, k = str(item["metric"]).strip(), item.get("k")
    if metric.split(".")[-1] not in _K_METRICS:
        raise UsageError(f"{label}: k: only {' and '.join(_K_METRICS)} take k (attempts); {metric} does not")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(
            f"{label}: {metric} needs k: a whole number of attempts ≥ 1 (k: 3, or write {metric}[3]); got {k!r}"
        )
    return f"{metric}[{k}]"


def _literal(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _spec(
    data: dict[str, Any],
    origin: str,
    lines: list[int | None] | None,
    arms: tuple[str, ...] | None,
    empty_ok: bool = False,
) -> GateSpec:
    # A gate file or mapping with no rule would pass anything; a caller's empty list means "the pair only"
    if not data.get("rules") and not empty_ok:
        raise UsageError(
            f"{origin}: the gate has no rule, so it would pass anything; list at least one rule, or give no "
            "gate to apply the default rules"
        )
    rules = parse_rules(data.get("rules") or [], origin=origin, lines=lines, arms=arms)
    pair = {}
    for key in ("baseline", "candidate"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise UsageError(f"{origin}: {key} names an arm; got {value!r}")
        pair[key] = value
    if (pair["baseline"] is None) != (pair["candidate"] is None):
        given = "baseline" if pair["baseline"] is not None else "candidate"
        raise UsageError(
            f"{origin}: names a {given} but no {'candidate' if given == 'baseline' else 'baseline'}; a gate names "
            "both arms of its pair (baseline: A, candidate: B) or neither"
        )
    minimum = data.get("min_coverage")
    if minimum is not None:
        minimum = check_min_coverage(minimum, origin)
    return GateSpec(rules, origin, pair["baseline"], pair["candidate"], minimum)


def load_gate(
    source: str | Path | list[Any] | dict[str, Any] | GateSpec | None,
    *,
    arms: tuple[str, ...] | None = None,
    origin: str | None = None,
) -> GateSpec:
    """A gate from a file, a list of rules, or a mapping ``{rules, baseline, candidate, min_coverage}``
    (`origin`: where they were written, for its messages; default ``rules given``); None gives the
    default rules, a `GateSpec` (loaded already) is itself.

    Raises:
        UsageError: the file cannot be read, a key is unknown, or a rule is invalid (the message says
            which and why).
    """
    if isinstance(source, GateSpec):
        return source
    if source is None:
        return GateSpec(parse_rules(list(DEFAULT_RULES), origin="default rules", arms=arms), "default rules")
    if isinstance(source, str | Path):
        data, lines = _read_gate(source)
        return _spec(data, str(source), lines, arms)
    origin = origin or "rules given"
    if isinstance(source, dict):
        if "rules" in source:
            unknown = set(source) - set(GATE_KEYS)
            if unknown:
                raise UsageError(
                    f"{origin}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; a gate has "
                    f"{', '.join(GATE_KEYS)}"
                )
            return _spec(source, origin, None, arms)
        source = [source]
    return _spec({"rules": list(source)}, origin, None, arms, empty_ok=True)


def load_rules(
    source: str | Path | list[Any] | dict[str, Any] | None, *, arms: tuple[str, ...] | None = None
) -> tuple[list[GateRule], str]:
    """Rules from a gate file, a list of rules, or ``{rules: [...]}``; None gives the default rules.

    Returns:
        The rules and where they came from (the file path, ``rules given``, or ``default rules``).

    Raises:
        UsageError: the file cannot be read or a rule is invalid (the message says which and why).
    """
    gate = load_gate(source, arms=arms)
    return gate.rules, gate.source
