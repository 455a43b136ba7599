"""How a judge model is called: one settings object shared by `llm_judge` and `pairwise_judge`.

The judges take their connection settings as keyword options (``model``, ``base_url``,
``timeout_s`` ...; `JudgeOptions` names them all), as experiment definitions write them, and build one
`JudgeSettings` from them — the client, its bounded retries and the response cache's mode — in the
way Inspect's ``GenerateConfig`` is one options object behind many calls. What replies cost is read
into one `JudgeSpend`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from abbench.errors import AgentError, GradingError, UsageError
from abbench.graders._base import GradeResult
from abbench.graders._rubric import is_number
from abbench.llm import check_cache_mode

if TYPE_CHECKING:
    from typing import Unpack

    from abbench.llm import CallCache, ChatClient, ChatResponse

log = logging.getLogger(__name__)


class JudgeOptions(TypedDict, total=False):
    """The keyword options that set how a judge model is called (each one is a `JudgeSettings` field)."""

    model: str | None
    base_url: str | None
    api_key_env: str | None
    timeout_s: float
    retries: int
    backoff_s: float
    temperature: float | None
    max_tokens: int | None
    seed: int | None
    prices: Any
    json_mode: bool
    stream: bool
    cache: str | None


JUDGE_OPTIONS = tuple(JudgeOptions.__annotations__)
"""The names of the judges' connection options, in the order the documentation lists them."""


@dataclass(frozen=True)
class JudgeSettings:
    """How a judge model is called (shared by `llm_judge` and `pairwise_judge`).

    Attributes:
        model: The judge model id.
        base_url: The API root; default ``$OPENAI_BASE_URL`` or the OpenAI API.
        api_key_env: The environment variable holding the key (never the key itself).
        timeout_s: Limit for one request.
        retries: Fresh requests after a timeout, a 429 or a 5xx (Retry-After honoured).
        backoff_s: The first wait before a retry (doubling, with jitter).
        temperature: Sampling temperature (0 by default: judging should not be creative).
        max_tokens: Output limit per request.
        seed: Sent to endpoints that support reproducible sampling.
        prices: Price overrides (see `abbench.llm.price_table`), e.g. ``{input: 0.15, output: 0.6}``.
        json_mode: Ask the endpoint for a JSON object (``response_format``), where it supports it.
        stream: Ask for streamed replies (``stream: true``) and assemble them; a stream cut in the
            middle is a retryable grading failure that keeps the tokens that were reported.
        cache: The response cache for this judge: on (the default: a judge at temperature 0 is a
            fixed function of what it judges, so a re-grade need not pay again), off, read-only or
            refresh; None takes the experiment's ``cache:``, else on.
    """

    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = 60.0
    retries: int = 2
    backoff_s: float = 1.0
    temperature: float | None = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    prices: Any = None
    json_mode: bool = False
    stream: bool = False
    cache: str | None = None
    client: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def build(cls, grader: str, **options: Unpack[JudgeOptions]) -> JudgeSettings:
        """Validate the settings and make the client (its URL, prices and key variable are checked now).

        Raises:
            TypeError: an option is not one of `JUDGE_OPTIONS` (as for any unknown keyword).
            UsageError: a setting is missing or invalid (the message names the grader).
        """
        unknown = sorted(set(options) - set(JUDGE_OPTIONS))
        if unknown:
            raise TypeError(
                f"{grader}: no option {', '.join(map(repr, unknown))}; the judge's connection settings: "
                + ", ".join(JUDGE_OPTIONS)
            )
        if not options.get("model"):
            raise UsageError(
                f"{grader}: a judge needs a model (model: gpt-4o-mini, or any model your endpoint serves)"
            )
        retries = options.get("retries", 2)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise UsageError(f"{grader}: retries must be a whole number ≥ 0, not {retries!r}")
        backoff = options.get("backoff_s", 1.0)
        if not is_number(backoff) or backoff < 0:
            raise UsageError(f"{grader}: backoff_s must be a number of seconds ≥ 0, not {backoff!r}")
        fields: dict[str, Any] = {
            **options,
            "cache": check_cache_mode(options.get("cache"), f"{grader}: cache"),
        }
        settings = cls(**fields)
        return dataclasses.replace(settings, client=settings._client(grader))

    def _client(self, grader: str) -> ChatClient:
        from abbench.llm import ChatClient, RetryPolicy  # httpx loads only when a judge calls a model

        try:
            return ChatClient(
                self.model,
                base_url=self.base_url,
                api_key_env=self.api_key_env,
                timeout_s=self.timeout_s,
                retry=RetryPolicy(
                    max_retries=self.retries, base_delay_s=float(self.backoff_s), retry_timeouts=True
                ),
                prices=self.prices,
                stream=bool(self.stream),
            )
        except UsageError as exc:
            raise UsageError(f"{grader}: {exc}") from None

    def call_cache(self, cache: CallCache | None) -> CallCache | None:
        """`cache` (a run's `abbench.llm.CallCache`) with this judge's mode: its own ``cache``, else the
        experiment's, else on."""
        if cache is None:
            return None
        return dataclasses.replace(cache, mode=self.cache or cache.mode or "on")

    def forget(self, reply: ChatResponse, cache: CallCache | None) -> None:
        """Drop `reply` from the cache (a reply that could not be read is asked again next time)."""
        if cache is not None and reply.cache_key:
            cache.cache.forget(reply.cache_key)

    def _call_options(self) -> dict[str, Any]:
        """What a judge call sends besides its messages (`ask` and `request_body` alike)."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "response_format": {"type": "json_object"} if self.json_mode else None,
        }

    def request_body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """The JSON body `ask` would send with `messages`, without sending anything (``abbench prompt``)."""
        body: dict[str, Any] = self.client.request_body(messages, **self._call_options())
        return body

    async def ask(
        self, grader: str, messages: list[dict[str, str]], cache: CallCache | None = None
    ) -> ChatResponse:
        """One judge request (with the client's bounded retries); returns the `ChatResponse`.

        `cache` is the run's response cache (`abbench.llm.CallCache`), used with `call_cache`'s mode.

        Raises:
            GradingError: the endpoint failed for good; retryable when the failure was (timeouts,
                429, 5xx, dropped connections), with the server's raw reply when there was one.
        """
        log.debug("%s: asking %s at %s", grader, self.model, self.client.base_url)
        try:
            reply: ChatResponse = await self.client.chat(
                messages, **self._call_options(), cache=self.call_cache(cache)
            )
        except AgentError as exc:
            raise GradingError(
                f"the judge call failed ({exc.failure_type}): {exc}",
                raw_output=exc.raw_output,
                retryable=exc.retryable,
                spent=_partial_spend(exc),
            ) from exc
        return reply


def _partial_spend(exc: AgentError) -> dict[str, Any] | None:
    """What a broken stream reported before it broke: its tokens count."""
    partial = getattr(exc, "partial", None)
    if partial is None or not partial.usage_reported:
        return None
    return {
        "judge_model": partial.model,
        "input_tokens": partial.usage.input_tokens,
        "output_tokens": partial.usage.output_tokens,
    }


@dataclass(frozen=True)
class JudgeSpend:
    """What judge replies cost, as the `GradeResult` fields that record it.

    A reply from the response cache spent nothing (no cost, no tokens) and saved its cost.

    Attributes:
        judge_model: The model of the first reply.
        judge_cost: The cost of the replies that were paid for; None when one's cost is unknown.
        input_tokens: Prompt tokens of the paid replies.
        output_tokens: Completion tokens of the paid replies.
        cached: Every reply came from the cache.
        cost_saved: What the cached replies would have cost; None when no reply was cached.
    """

    judge_model: str | None
    judge_cost: float | None
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False
    cost_saved: float | None = None

    @classmethod
    def of(cls, replies: Sequence[ChatResponse]) -> JudgeSpend:
        """What `replies` cost."""
        paid = [r for r in replies if not getattr(r, "cached", False)]
        saved = [r for r in replies if getattr(r, "cached", False)]
        costs = [r.cost for r in paid]
        return cls(
            judge_model=replies[0].model if replies else None,
            judge_cost=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
            input_tokens=sum(r.usage.input_tokens for r in paid),
            output_tokens=sum(r.usage.output_tokens for r in paid),
            cached=bool(saved) and not paid,
            cost_saved=sum(r.cost or 0.0 for r in saved) if saved else None,
        )

    def as_dict(self) -> dict[str, Any]:
        """The fields as `GradingError.spent` carries them (``cached`` only when the cache answered)."""
        out = dataclasses.asdict(self)
        if self.cost_saved is None:
            del out["cached"], out["cost_saved"]
        return out

    def result(self, **fields: Any) -> GradeResult:
        """A `GradeResult` with these costs (its fields of the same names) and `fields`."""
        return GradeResult(**dataclasses.asdict(self), **fields)
