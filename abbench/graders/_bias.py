"""Position and verbosity bias of pairwise judges, measured from their judgements: typed records in, a result out.

A pairwise judge that prefers whatever it reads first is measuring the slot, not the answers. The
order of every judgement is recorded in its grade (see `pairwise_judge`), so the bias can be read
back: the first-slot win rate over decisive judgements, with a Wilson interval (an unbiased judge
sits at 0.5; an interval that excludes 0.5 is evidence of bias), and, for pairs judged in both
orders, how often the verdict changed with the order.

A judge that prefers the longer answer is measuring length (dotnet/skills' "regression" at p = 0.004
that was a verbose-answer preference). Each grade records the length of both answers as the judge saw
them, so `measure_verbosity_bias` reads the longer answer's win rate, with its Wilson interval, over
the judgements of pairs whose lengths differ by at least `VERBOSITY_MIN_DIFFERENCE` (relative to the
longer), in both slot orders and apart for each. Reading stored grades (and what judging cost) is
`abbench.metrics`' job: graders never touch the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from abbench.formatting import rate_interval as _fmt_rate
from abbench.types import GradeStatus

if TYPE_CHECKING:
    from abbench.stats import Interval


def _wilson(k: int, n: int, confidence: float) -> Interval | None:
    """The Wilson interval of ``k / n`` (`abbench.stats.wilson_interval`); None when ``n == 0``."""
    if n == 0:
        return None
    from abbench.stats import wilson_interval  # numpy and scipy load only when an interval is asked for

    return wilson_interval(k, n, confidence)


@dataclass(frozen=True)
class Judgement:
    """One reading of a pair by a pairwise judge: which arm's answer sat in which slot, and who won.

    Attributes:
        slots: The arm letters (``a``/``b``) shown in slot 1 and slot 2.
        winner_slot: 1 or 2; None for a tie.
        winner: ``a``, ``b`` or ``tie``, in arm terms.
    """

    slots: tuple[str, ...]
    winner_slot: int | None
    winner: str | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Judgement:
        """A judgement as `pairwise_judge` records it in a grade's details."""
        slot = data.get("winner_slot")
        return cls(tuple(data.get("slots") or ()), int(slot) if slot in (1, 2) else None, data.get("winner"))


@dataclass(frozen=True)
class PairJudgement:
    """One pairwise grade as the bias measure reads it.

    Attributes:
        judgements: Its single judgements (two when the pair was judged in both orders).
        verdict: The final verdict in arm terms (``a``, ``b``, ``tie``), when the grade has one.
        arms: The two arms compared (a, b).
        ok: False for a grade that failed (skipped).
        lengths: The characters of a's and b's answers as the judge saw them (None: not recorded, as
            in grades written before abbench recorded them).
    """

    judgements: tuple[Judgement, ...]
    verdict: str | None = None
    arms: tuple[str, ...] = ()
    ok: bool = True
    lengths: tuple[int, int] | None = None

    @classmethod
    def from_details(
        cls, details: Mapping[str, Any] | None, *, verdict: str | None = None, status: str = GradeStatus.OK
    ) -> PairJudgement:
        """A pair grade from what `pairwise_judge` writes into ``GradeResult.details``."""
        details = details or {}
        sizes = details.get("lengths")
        lengths = None
        if isinstance(sizes, Mapping) and all(isinstance(sizes.get(k), int) for k in ("a", "b")):
            lengths = (int(sizes["a"]), int(sizes["b"]))
        return cls(
            judgements=tuple(
                Judgement.from_dict(j) for j in details.get("judgements") or () if isinstance(j, Mapping)
            ),
            verdict=verdict,
            arms=tuple(details.get("arms") or ()),
            ok=status == GradeStatus.OK,
            lengths=lengths,
        )


@dataclass(frozen=True)
class PositionBias:
    """The position bias of one pairwise grader over an experiment's latest pair grades.

    Attributes:
        grader: The pairwise grader's name.
        pairs: Pairs with a readable verdict.
        judgements: Single judgements (two per pair judged in both orders).
        first_wins: Judgements won by the answer in slot 1.
        second_wins: Judgements won by the answer in slot 2.
        ties: Judgements that named no winner.
        first_win_rate: ``first_wins / (first_wins + second_wins)``; None without decisive judgements.
        first_win_interval: Its Wilson interval.
        both_orders: Pairs judged in both orders.
        inconsistent: Of those, pairs whose two verdicts differ (counted as ties).
        flips: Of those, pairs whose winner swapped (a in one order, b in the other).
        flip_rate: ``flips / both_orders``; None when no pair was judged in both orders.
        flip_interval: Its Wilson interval.
        verdicts: Final verdicts in arm terms: ``{"a": n, "b": n, "tie": n}``.
        arms: The two arms compared (a, b).
    """

    grader: str
    pairs: int
    judgements: int
    first_wins: int
    second_wins: int
    ties: int
    first_win_rate: float | None
    first_win_interval: Interval | None
    both_orders: int
    inconsistent: int
    flips: int
    flip_rate: float | None
    flip_interval: Interval | None
    verdicts: dict[str, int]
    arms: tuple[str, ...] = ()

    @property
    def decisive(self) -> int:
        """Judgements that named a winner."""
        return self.first_wins + self.second_wins

    @property
    def inconsistency_rate(self) -> float | None:
        """``inconsistent / both_orders``; None when no pair was judged in both orders."""
        return self.inconsistent / self.both_orders if self.both_orders else None

    @property
    def biased(self) -> bool | None:
        """True when the first-slot win rate's interval excludes 0.5; None without decisive judgements."""
        if self.first_win_interval is None:
            return None
        return not self.first_win_interval.contains(0.5)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        data = asdict(self)
        for key in ("first_win_interval", "flip_interval"):
            interval = getattr(self, key)
            data[key] = None if interval is None else interval.as_dict()
        data.update(decisive=self.decisive, inconsistency_rate=self.inconsistency_rate, biased=self.biased)
        data["arms"] = list(self.arms)
        return data


def measure_position_bias(
    grades: Iterable[PairJudgement], grader: str = "", *, confidence: float = 0.95
) -> PositionBias:
    """Position bias from pairwise grades (`PairJudgement` records: ``PairJudgement.from_details``).

    Grades that failed, or that carry no recorded judgements, are skipped.
    """
    first = second = ties = judgements = pairs = both = inconsistent = flips = 0
    verdicts = {"a": 0, "b": 0, "tie": 0}
    arms: tuple[str, ...] = ()
    for grade in grades:
        if not grade.ok or not grade.judgements:
            continue
        singles = grade.judgements
        pairs += 1
        arms = arms or grade.arms
        verdict = grade.verdict or _final(singles)
        # a hand-made judgement may lack its winner: counted under None, as it always was
        verdicts[verdict] = verdicts.get(verdict, 0) + 1  # type: ignore[index,arg-type]
        for j in singles:
            judgements += 1
            if j.winner_slot == 1:
                first += 1
            elif j.winner_slot == 2:
                second += 1
            else:
                ties += 1
        if len(singles) >= 2:
            both += 1
            winners = {j.winner for j in singles}
            inconsistent += len(winners) > 1
            flips += winners == {"a", "b"}
    decisive = first + second
    return PositionBias(
        grader=grader,
        pairs=pairs,
        judgements=judgements,
        first_wins=first,
        second_wins=second,
        ties=ties,
        first_win_rate=first / decisive if decisive else None,
        first_win_interval=_wilson(first, decisive, confidence),
        both_orders=both,
        inconsistent=inconsistent,
        flips=flips,
        flip_rate=flips / both if both else None,
        flip_interval=_wilson(flips, both, confidence),
        verdicts=verdicts,
        arms=arms,
    )


def _final(singles: tuple[Judgement, ...]) -> str | None:
    winners = {j.winner for j in singles}
    return winners.pop() if len(winners) == 1 else "tie"


def describe_bias(bias: PositionBias) -> str:
    """One paragraph for people: the first-slot win rate, what it means, and the flip rate."""
    lines = [
        f"{bias.grader}: {bias.pairs} pairs ({' vs '.join(bias.arms) or 'a vs b'}), {bias.judgements} judgements; "
        f"verdicts a {bias.verdicts.get('a', 0)}, b {bias.verdicts.get('b', 0)}, tie {bias.verdicts.get('tie', 0)}"
    ]
    conf = f"{bias.first_win_interval.confidence:.0%}" if bias.first_win_interval else ""
    verdict = {True: "biased towards a slot", False: "no position bias shown", None: "no decisive judgement"}[
        bias.biased
    ]
    lines.append(
        f"  first-slot win rate {_fmt_rate(bias.first_win_rate, bias.first_win_interval)} "
        f"({conf} Wilson; {bias.first_wins} first, {bias.second_wins} second, {bias.ties} ties) — {verdict}"
    )
    if bias.both_orders:
        lines.append(
            f"  both orders: {bias.both_orders} pairs, flip rate {_fmt_rate(bias.flip_rate, bias.flip_interval)}, "
            f"inconsistent {bias.inconsistent} (counted as ties)"
        )
    return "\n".join(lines)


VERBOSITY_MIN_DIFFERENCE = 0.2
"""The default relative length difference for the verbosity audit: a pair counts when its shorter
answer is at most 80% of the longer's characters (``(longer − shorter) / longer ≥ 0.2``)."""


@dataclass(frozen=True)
class VerbosityBias:
    """Whether a pairwise grader prefers the longer answer, over an experiment's latest pair grades.

    Attributes:
        grader: The pairwise grader's name.
        min_difference: The relative length difference a pair needs to count.
        pairs: Pairs whose answers differ by at least that much.
        similar: Pairs left out because their lengths differ less.
        unmeasured: Pairs whose grade recorded no lengths (left out).
        judgements: Single judgements of the counted pairs (both orders when judged so).
        longer_wins: Judgements won by the longer answer.
        shorter_wins: Judgements won by the shorter.
        ties: Judgements that named no winner.
        longer_win_rate: ``longer_wins / (longer_wins + shorter_wins)``; None without a decisive one.
        longer_win_interval: Its Wilson interval (an unbiased judge of equally good answers sits at 0.5).
        longer_first_wins: Of the judgements with the longer answer in slot 1, those it won.
        longer_first_decisive: Judgements with the longer answer in slot 1 that named a winner.
        longer_second_wins: Of those with the longer answer in slot 2, those it won.
        longer_second_decisive: Judgements with the longer answer in slot 2 that named a winner.
    """

    grader: str
    min_difference: float
    pairs: int
    similar: int
    unmeasured: int
    judgements: int
    longer_wins: int
    shorter_wins: int
    ties: int
    longer_win_rate: float | None
    longer_win_interval: Interval | None
    longer_first_wins: int = 0
    longer_first_decisive: int = 0
    longer_second_wins: int = 0
    longer_second_decisive: int = 0

    @property
    def decisive(self) -> int:
        """Judgements that named a winner."""
        return self.longer_wins + self.shorter_wins

    @property
    def biased(self) -> bool | None:
        """True when the longer answer's win rate interval excludes 0.5 (either way: a judge that
        prefers the shorter answer is biased too); None without decisive judgements."""
        if self.longer_win_interval is None:
            return None
        return not self.longer_win_interval.contains(0.5)

    @property
    def prefers(self) -> str | None:
        """``longer`` or ``shorter`` when `biased`, else None."""
        if not self.biased or self.longer_win_rate is None:
            return None
        return "longer" if self.longer_win_rate > 0.5 else "shorter"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        data = asdict(self)
        iv = self.longer_win_interval
        data["longer_win_interval"] = None if iv is None else iv.as_dict()
        data.update(decisive=self.decisive, biased=self.biased, prefers=self.prefers)
        return data


def measure_verbosity_bias(
    grades: Iterable[PairJudgement],
    grader: str = "",
    *,
    min_difference: float = VERBOSITY_MIN_DIFFERENCE,
    confidence: float = 0.95,
) -> VerbosityBias:
    """Verbosity bias from pairwise grades: the longer answer's win rate over pairs whose lengths differ.

    Every single judgement of a counted pair counts (both orders when the pair was judged in both),
    and the rate is also split by the slot the longer answer sat in, so a judge that follows position
    only (the longer answer wins in slot 1, loses in slot 2) is told apart from one that follows length.
    Grades that failed, carry no judgements or recorded no lengths are left out (counted in
    ``unmeasured``).

    Raises:
        ValueError: `min_difference` is not in [0, 1).
    """
    if not 0 <= min_difference < 1:
        raise ValueError(f"min_difference is a relative difference in [0, 1), not {min_difference!r}")
    pairs = similar = unmeasured = judgements = longer = shorter = ties = 0
    slot_wins = {1: 0, 2: 0}
    slot_decisive = {1: 0, 2: 0}
    for grade in grades:
        if not grade.ok or not grade.judgements:
            continue
        if grade.lengths is None:
            unmeasured += 1
            continue
        la, lb = grade.lengths
        if la == lb or (max(la, lb) - min(la, lb)) / max(la, lb) < min_difference:
            similar += 1
            continue
        pairs += 1
        long_letter = "a" if la > lb else "b"
        for j in grade.judgements:
            judgements += 1
            if j.winner_slot is None or len(j.slots) < 2:
                ties += 1
                continue
            slot = j.slots.index(long_letter) + 1 if long_letter in j.slots else None
            won = j.slots[j.winner_slot - 1] == long_letter
            longer += won
            shorter += not won
            if slot is not None:
                slot_decisive[slot] += 1
                slot_wins[slot] += won
    decisive = longer + shorter
    return VerbosityBias(
        grader=grader,
        min_difference=min_difference,
        pairs=pairs,
        similar=similar,
        unmeasured=unmeasured,
        judgements=judgements,
        longer_wins=longer,
        shorter_wins=shorter,
        ties=ties,
        longer_win_rate=longer / decisive if decisive else None,
        longer_win_interval=_wilson(longer, decisive, confidence),
        longer_first_wins=slot_wins[1],
        longer_first_decisive=slot_decisive[1],
        longer_second_wins=slot_wins[2],
        longer_second_decisive=slot_decisive[2],
    )


def describe_verbosity(bias: VerbosityBias) -> str:
    """One paragraph for people: the longer answer's win rate, what it means, and by slot."""
    conf = f"{bias.longer_win_interval.confidence:.0%}" if bias.longer_win_interval else ""
    verdict = {
        None: "no decisive judgement",
        False: "no verbosity bias shown",
        True: f"prefers the {bias.prefers} answer",
    }[bias.biased]
    lines = [
        f"  longer-answer win rate {_fmt_rate(bias.longer_win_rate, bias.longer_win_interval)} ({conf} Wilson; "
        f"{bias.pairs} pairs whose lengths differ by ≥ {bias.min_difference:.0%}, {bias.longer_wins} longer, "
        f"{bias.shorter_wins} shorter, {bias.ties} ties) — {verdict}"
    ]
    by_slot = [
        f"{where} {wins}/{n}"
        for where, wins, n in (
            ("in slot 1", bias.longer_first_wins, bias.longer_first_decisive),
            ("in slot 2", bias.longer_second_wins, bias.longer_second_decisive),
        )
        if n
    ]
    if by_slot:
        lines.append(f"  the longer answer won {', '.join(by_slot)}")
    left = [f"{n} of similar length" for n in (bias.similar,) if n] + [
        f"{n} without recorded lengths" for n in (bias.unmeasured,) if n
    ]
    if left:
        lines.append(f"  left out: {', '.join(left)}")
    return "\n".join(lines)
