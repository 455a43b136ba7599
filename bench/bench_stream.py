"""Benchmark of reading streamed chat completions: per-chunk SSE parsing cost.

Run ``python bench/bench_stream.py`` (``make bench`` runs every bench). It parses ``--replies``
streamed replies (default 1,000) of ``--chunks`` chunks each (default 2,000: text deltas and, in
every tenth reply, a tool call whose arguments are split over the chunks), each chunk shaped like
the OpenAI API's (id, object, created, model, system_fingerprint, choices with index, delta,
logprobs and finish_reason), with keep-alive comments, the usage chunk and ``[DONE]``. The bytes
are fed to `abbench.llm._stream.StreamAssembler` in 16 KiB pieces, as a socket delivers them, and
every assembled reply is checked against the text it was made from. The target is at least 50 MB/s
of SSE per second of the process's CPU time (the wall-clock rate is printed too: on a shared machine
it says more about the neighbours); the figure is the best and the median of a few repeats. ``--http`` also times one reply read over real HTTP from the scripted server, for scale.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from abbench.llm import ChatClient
from abbench.llm._stream import StreamAssembler
from abbench.testing import Reply, ScriptedOpenAIServer

TARGET_MB_S = 50.0
PIECE = 16 * 1024
VARIANTS = 10


def make_reply(n: int, chunks: int) -> tuple[bytes, str, str]:
    """One streamed reply as SSE bytes, with the text and tool arguments it carries."""
    head = {
        "id": f"chatcmpl-bench{n:04d}",
        "object": "chat.completion.chunk",
        "created": 1_790_000_000 + n,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0ba0d124f1",
    }
    words = ["路线", " fast", " slow", " energy", " 数据", ' "', "reason", "\\n", " the", " skill"]
    tool = n % 10 == 0
    events, text, args = [], [], []

    def chunk(delta, finish=None):
        body = {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        events.append(b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n")

    chunk({"role": "assistant", "content": ""})
    if tool:
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": ""},
                    }
                ]
            }
        )
    for i in range(chunks - 3):
        piece = words[(i * 7 + n) % len(words)]
        if tool:
            args.append(piece)
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        else:
            text.append(piece)
            chunk({"content": piece})
        if i % 500 == 0:
            events.append(b": keep-alive\n\n")
    chunk({}, "tool_calls" if tool else "stop")
    usage = {"prompt_tokens": 1200, "completion_tokens": chunks, "total_tokens": 1200 + chunks}
    events.append(b"data: " + json.dumps({**head, "choices": [], "usage": usage}).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return b"".join(events), "".join(text), "".join(args)


def parse(body: bytes) -> StreamAssembler:
    sse = StreamAssembler()
    for i in range(0, len(body), PIECE):
        sse.feed(body[i : i + PIECE])
    sse.close()
    return sse


def once(replies: list[tuple[bytes, str, str]], count: int) -> tuple[float, float, int]:
    total = 0
    started, cpu = time.perf_counter(), time.process_time()
    for n in range(count):
        body, text, args = replies[n % len(replies)]
        sse = parse(body)
        got_args = sse.tool_calls[0][2] if sse.tool_calls else ""
        if not (sse.done and (sse.content or "") == text and got_args == args and sse.usage):
            raise SystemExit(f"reply {n} was assembled wrongly")
        total += len(body)
    return time.perf_counter() - started, time.process_time() - cpu, total


async def over_http(chunks: int) -> float:
    text = "x" * chunks
    with ScriptedOpenAIServer([Reply.text(text, chunk_chars=1, usage=(10, chunks))]) as server:
        client = ChatClient(
            "m", base_url=server.base_url, stream=True, prices={"m": {"input": 0, "output": 0}}
        )
        started = time.perf_counter()
        reply = await client.chat([{"role": "user", "content": "hi"}])
        elapsed = time.perf_counter() - started
    assert reply.content == text
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replies", type=int, default=1000)
    ap.add_argument("--chunks", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--http", action="store_true", help="also time one reply over real HTTP")
    args = ap.parse_args()
    replies = [make_reply(n, args.chunks) for n in range(VARIANTS)]
    rates, cpu_rates, seconds, cpus = [], [], [], []
    for _ in range(args.repeats):
        elapsed, cpu, total = once(replies, args.replies)
        seconds.append(elapsed)
        cpus.append(cpu)
        rates.append(total / 1e6 / elapsed)
        cpu_rates.append(total / 1e6 / cpu)
    best, median = max(cpu_rates), statistics.median(cpu_rates)
    print(
        f"parsed {args.replies:,} streamed replies × {args.chunks:,} chunks "
        f"({total / 1e6:,.0f} MB of SSE, {args.replies * args.chunks:,} chunks) in {min(seconds):.2f} s wall, "
        f"{min(cpus):.2f} s CPU"
    )
    # CPU time: what parsing costs this process, whatever else the shared machine is running
    print(
        f"SSE parsing per CPU second: best {best:.1f} MB/s, median {median:.1f} MB/s "
        f"(target ≥ {TARGET_MB_S:g} MB/s); per wall second: best {max(rates):.1f} MB/s"
    )
    print(f"per chunk: {min(cpus) / (args.replies * args.chunks) * 1e6:.2f} µs of CPU")
    if args.http:
        elapsed = asyncio.run(over_http(args.chunks))
        print(f"one {args.chunks:,}-chunk reply over HTTP from the scripted server: {elapsed * 1000:.0f} ms")
    if best < TARGET_MB_S:
        print("below the target")
        sys.exit(1)


if __name__ == "__main__":
    main()
