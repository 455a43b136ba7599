"""An offline promptfoo python provider for abbench's import test: routes a request fast or slow."""

SLOW_WORDS = ("导航", "route", "plan", "charger", "位置")


def call_api(prompt, options, context):
    style = (options.get("config") or {}).get("style", "naive")
    query = context["vars"]["query"]
    slow = style != "naive" and any(w in query.lower() for w in SLOW_WORDS)
    answer = "slow" if slow else "fast"
    return {
        "output": answer,
        "tokenUsage": {"total": len(prompt) // 4 + 1, "prompt": len(prompt) // 4, "completion": 1},
    }
