"""Make the Inspect AI eval logs in this folder (offline: mockllm/model with scripted replies).

Run with inspect-ai installed:  python make_logs.py OUTDIR
Two runs of the `routing` task, 2 epochs each: task_args skill=False (a naive baseline that answers
"fast" for everything but one case) and skill=True (a system message with the routing rule; its
scripted replies get 3 of 4 cases right in epoch 1 and all 4 in epoch 2). Usage is scripted so no
tokenizer download is needed.
"""

import sys

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, system_message

SAMPLES = [
    Sample(id="FS-0001", input="我老婆刚发的那个位置，导航过去", target="slow"),
    Sample(id="FS-0002", input="把交房租加到待办", target="fast"),
    Sample(id="FS-0003", input="Open the sunroof halfway", target="fast"),
    Sample(
        id="FS-0004",
        input="Plan a route to Shanghai avoiding tolls and find a charger on the way",
        target="slow",
    ),
]
RULE = "Answer fast for one-step device controls, slow for multi-step planning or navigation."


@task
def routing(skill: bool = False):
    solver = [system_message(RULE), generate()] if skill else [generate()]
    return Task(dataset=SAMPLES, solver=solver, scorer=includes())


def replies(answers):
    out = []
    for i, text in enumerate(answers):
        o = ModelOutput.from_content("mockllm/model", text)
        o.usage = ModelUsage(input_tokens=40 + 3 * i, output_tokens=2, total_tokens=42 + 3 * i)
        out.append(o)
    return out


if __name__ == "__main__":
    outdir = sys.argv[1]
    # samples run in order within an epoch here (max_samples=1), epoch by epoch
    baseline = ["fast", "fast", "fast", "slow"] * 2
    skilled = ["slow", "fast", "slow", "slow", "slow", "fast", "fast", "slow"]
    for skill, answers in ((False, baseline), (True, skilled)):
        model = get_model("mockllm/model", custom_outputs=replies(answers))
        eval(
            routing(skill=skill),
            model=model,
            epochs=2,
            max_samples=1,
            log_dir=outdir,
            display="none",
            task_args={"skill": skill},
        )
