"""A Python client of `abbench serve` with the local API's names: `Client(base_url, key)`.

    >>> from abbench.client import Client                        # doctest: +SKIP
    >>> c = Client("http://127.0.0.1:8750", key=os.environ["ABBENCH_KEY"], actor="ci/job-42")
    >>> ds = c.import_dataset("cases.csv", mapping="mapping.yaml", name="demo")   # a DatasetInfo
    >>> exp = c.create_experiment("experiment.yaml"); c.start(exp.id); c.wait(exp.id).done
    >>> c.evaluate_gate(exp.id).outcome

Where the library has a typed record, the answer is that record, read by its ``from_dict``
(`DatasetInfo`, `TakenSnapshot`, `Experiment`, `Progress`, `RunSummary`, `Failures`, `Comparison`,
`MultiComparison`, `GateResult`, `Review`, `RecordSummary`, `ExportResult`, `ReportResult`), so
`Client` satisfies the CLI's backend protocol beside the local store; other answers (results pages,
tries, retries) are the server's JSON (dicts). An error answer raises `ServerError` with the server's
problem details (what, where, what to do) and its HTTP status. What it reads is bounded and a redirect
is never followed (the key goes to `base_url` only).
"""

from __future__ import annotations

from abbench import _lazy
from abbench.client._client import Client, ServerError

__all__ = ["Client", "ServerError"]

__dir__ = _lazy.listing(__all__)
