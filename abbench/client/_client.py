"""The client: one method per route, named as the local Python API names the same step."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from collections.abc import Sequence
from email.message import Message
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from abbench import _actions as do
from abbench._utf8 import read_utf8
from abbench.dataset import DatasetInfo
from abbench.errors import AbbenchError, Action, UsageError
from abbench.export import ExportResult
from abbench.report import ReportResult
from abbench.runner import Progress, RecordSummary
from abbench.store import Experiment, Failures, Review

_FINAL = ("finished", "cancelled")


class ServerError(AbbenchError):
    """An error answer: `status` (HTTP) and `problem` (the server's problem details), with the facts
    the problem carries (`kind`, `name`, `choices`)."""

    def __init__(self, status: int, problem: dict[str, Any]):
        said: list[str | Action] = [
            f"{problem.get('title', 'error')} ({status}): {problem.get('detail', '')}"
        ]
        hint = problem.get("hint")
        if isinstance(hint, dict) and all(isinstance(hint.get(k), str) for k in ("python", "cli", "http")):
            # the server worded what to do as a request to it: word it back for the caller's view
            action = Action(hint["python"], hint["cli"], hint["http"])
            before, found, after = str(said[0]).partition(action.http or "")
            said = [before, action, after] if found else said
        super().__init__(
            *said,
            kind=problem.get("kind"),
            name=problem.get("name"),
            choices=problem.get("choices") or (),
        )
        self.status = status
        self.problem = problem
        self.exit_code = 1 if status == 409 else 2


def _tar(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink():
                tf.add(path, arcname=f"{folder.name}/{path.relative_to(folder).as_posix()}")
    return buf.getvalue()


def _ref(ref: int | str) -> str:
    """An experiment's id or name as a path segment; an empty one is refused before any request."""
    text = str(ref).strip()
    if not text:
        raise UsageError(
            "no experiment given: pass its id or name (`Client.create_experiment` returns the id)"
        )
    return quote(text, safe="")


class Client:
    """A client of an abbench server.

    Args:
        base_url: The server (``http://127.0.0.1:8750``).
        key: An API key (``abk_...``; default $ABBENCH_KEY).
        actor: Who or what is asking (sent as X-Abbench-Actor, recorded on the runs it starts).
        timeout: Seconds per request.
    """

    def __init__(
        self, base_url: str, key: str | None = None, *, actor: str | None = None, timeout: float = 120.0
    ):
        key = key or os.environ.get("ABBENCH_KEY")
        if not key:
            raise AbbenchError(
                "no API key: pass key= or set $ABBENCH_KEY (the server's operator makes one with `",
                do.create_key(),
                "`)",
            )
        headers = {"Authorization": f"Bearer {key}"}
        if actor:
            headers["X-Abbench-Actor"] = actor
        self.http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, f"/api{path}", **kwargs)
        if response.status_code >= 400:
            try:
                problem = response.json()
            except ValueError:
                problem = {"title": "error", "detail": response.text[:500]}
            raise ServerError(response.status_code, problem)
        if response.status_code >= 300:  # a redirect is never an answer of this API (a path gone wrong)
            raise ServerError(
                response.status_code,
                {"title": "unexpected answer", "detail": f"{method} {path} answered {response.status_code}"},
            )
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response

    # -- datasets and snapshots --------------------------------------------------------------------

    def record_runs(self, experiment: int | str, outcomes: list[dict[str, Any]]) -> RecordSummary:
        """Record outcomes of runs executed elsewhere (`abbench.record_runs`'s outcomes), then grade them."""
        return RecordSummary.from_dict(
            self._call("POST", f"/experiments/{_ref(experiment)}/runs", json={"outcomes": outcomes})
        )

    def import_dataset(
        self,
        path: str | os.PathLike[str],
        mapping: str | os.PathLike[str] | dict[str, Any] | None = None,
        **options: Any,
    ) -> DatasetInfo:
        """Upload a data file with its mapping (a dict, a .yaml/.json profile file, or a saved name); the
        dataset imported (`abbench.import_dataset`), its paths and id the server's own left out.

        `options` are `abbench.import_dataset`'s: ``name``, ``recipe``, ``splits`` (a list),
        ``skip_invalid`` and the read options (`abbench.dataset.ReadOptions`: ``format``, ``sheet``,
        ``header_row``, ``encoding``, ``delimiter``, ``quoting``).
        """
        splits = options.pop("splits", None) or ()
        form: dict[str, Any] = {k: str(v) for k, v in options.items() if v is not None and v is not False}
        if splits:
            form["split"] = [str(s) for s in splits]
        if isinstance(mapping, dict):
            form["mapping"] = json.dumps(mapping, ensure_ascii=False)
        elif mapping is not None and Path(mapping).is_file():
            form["mapping"] = read_utf8(mapping)
        elif mapping is not None:
            form["mapping"] = str(mapping)
        with open(path, "rb") as f:
            answer = self._call("POST", "/datasets", files={"file": (Path(path).name, f)}, data=form)
        return DatasetInfo.from_dict(answer)

    def list_datasets(self) -> list[DatasetInfo]:
        """The datasets this key's owner holds, oldest first."""
        return [DatasetInfo.from_dict(d) for d in self._call("GET", "/datasets")]

    def snapshot_skill(self, folder: str | os.PathLike[str]) -> dict[str, Any]:
        """Upload a skill folder (sent as a tar.gz of its plain files)."""
        folder = Path(folder)
        data = _tar(folder)
        result: dict[str, Any] = self._call(
            "POST", "/skill-snapshots", files={"file": (f"{folder.name}.tgz", data)}
        )
        return result

    def snapshot_git(self, url: str, ref: str = "HEAD", path: str | None = None) -> dict[str, Any]:
        """Snapshot the folder `path` of a git repository at `ref`, cloned by the server.

        The server must reach `url` itself (https or ssh unless it allows more); an unknown ref
        answers 422 naming it, an unreachable repository 502.
        """
        body: dict[str, Any] = {"git": url, "ref": ref}
        if path is not None:
            body["path"] = path
        result: dict[str, Any] = self._call("POST", "/skill-snapshots", json=body)
        return result

    # -- experiments -------------------------------------------------------------------------------

    def create_experiment(
        self, definition: str | os.PathLike[str] | dict[str, Any], *, reuse: bool = False
    ) -> Experiment:
        """Create an experiment from a definition (a dict, or a YAML/JSON file naming uploaded data).
        A server always creates a new one: ``reuse=True`` (the stored experiment of that identity)
        is refused."""
        if reuse:
            raise UsageError("reuse=True works on a local store; a server creates a new experiment each time")
        if isinstance(definition, dict):
            body, kind = json.dumps(definition, ensure_ascii=False).encode(), "application/json"
        else:
            body, kind = read_utf8(definition).encode(), "application/yaml"
        return _experiment(self._call("POST", "/experiments", content=body, headers={"Content-Type": kind}))

    def load_experiment(self, ref: int | str) -> Experiment:
        """The experiment (`abbench.load_experiment`): id, ``#id``, name or ``NAME@<skill version>``."""
        return _experiment(self._call("GET", f"/experiments/{_ref(ref)}"))

    def experiment_status(self, ref: int | str) -> Progress:
        """Where the experiment stands (`abbench.experiment_status`): runs per arm and state, and why it
        paused, stopped or waits."""
        return _progress(self._call("GET", f"/experiments/{_ref(ref)}"))

    def list_experiments(self, *, include_tries: bool = False) -> list[Experiment]:
        """This owner's experiments, newest first (`abbench.list_experiments`)."""
        return [_experiment(e) for e in self._call("GET", "/experiments", params={"tries": include_tries})]

    def command_handle(self, exp: Experiment) -> str:
        """The shortest text that names `exp` in a command on this server: its name when no other
        experiment of this owner has it, else ``#id``."""
        same = [e for e in self._call("GET", "/experiments", params={"tries": True}) if e["name"] == exp.name]
        return exp.name if len(same) == 1 else f"#{exp.id}"

    def failures(self, ref: int | str, *, limit: int = 10) -> Failures:
        """Its runs that got no verdict, by kind and type, at most `limit` kinds (`store.runs.failures`)."""
        return Failures.from_dict(
            self._call("GET", f"/experiments/{_ref(ref)}/failures", params={"limit": limit})
        )

    def _control(self, ref: int | str, action: str, **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = self._call(
            "POST",
            f"/experiments/{_ref(ref)}/{action}",
            params={k: v for k, v in params.items() if v is not None},
        )
        return result

    def start(self, ref: int | str) -> bool:
        """Run the experiment in the server's pool: True if the pool took it now, False if it held it already."""
        return bool(self._control(ref, "start")["queued"])

    def pause_experiment(self, ref: int | str) -> bool:
        """Pause it: runs in flight finish (`abbench.pause_experiment`). True if a process runs it."""
        return bool(self._control(ref, "pause")["runner_alive"])

    def resume_experiment(self, ref: int | str, *, budget: float | None = None) -> bool:
        """Resume it, optionally with a higher cost limit (`abbench.resume_experiment`). True if a
        process goes on with it: the one that holds it, or one the server's pool starts now."""
        answer = self._control(ref, "resume", budget=budget)
        return bool(answer["runner_alive"] or answer.get("queued"))

    def cancel_experiment(self, ref: int | str) -> int | None:
        """Cancel it (`abbench.cancel_experiment`): how many pending runs were cancelled, None when a
        process runs it (it cancels them)."""
        cancelled: int | None = self._control(ref, "cancel").get("cancelled_runs")
        return cancelled

    def retry(
        self,
        ref: int | str,
        *,
        failed: bool = False,
        execution_failed: bool = False,
        grading_failed: bool = False,
        cancelled: bool = False,
    ) -> dict[str, Any]:
        """Retry runs: execution failures and cancelled runs run again, grading failures are re-graded
        from their stored answers (``failed``: both kinds of failure)."""
        return self._control(
            ref,
            "retry",
            failed=failed or None,
            execution_failed=execution_failed or None,
            grading_failed=grading_failed or None,
            cancelled=cancelled or None,
        )

    def regrade(self, ref: int | str, *, failed: bool = False) -> dict[str, Any]:
        """Grade again from the stored executions."""
        return self._control(ref, "regrade", failed=failed or None)

    def wait(self, ref: int | str, *, timeout: float | None = None, poll: float = 1.0) -> Progress:
        """Wait until the experiment is finished or cancelled (following its events); where it stands then."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self.http.stream(
                "GET", f"/api/experiments/{_ref(ref)}/events", params={"every": poll}
            ) as events:
                if events.status_code >= 400:
                    events.read()
                    raise ServerError(events.status_code, events.json())
                for line in events.iter_lines():
                    if line.startswith("event: end"):
                        return self.experiment_status(ref)
                    if deadline is not None and time.monotonic() > deadline:
                        raise TimeoutError(f"experiment {ref} did not finish within {timeout} s")

    def results(self, ref: int | str, **filters: Any) -> dict[str, Any]:
        """A page of runs (filters: arm, state, round (from 1), moved, disagreement, offset, limit)."""
        result: dict[str, Any] = self._call("GET", f"/experiments/{_ref(ref)}/results", params=filters)
        return result

    # -- analysis ----------------------------------------------------------------------------------

    def compare_arms(
        self, ref: int | str, a: str | None = None, b: str | None = None, *, grader: str | None = None
    ) -> dict[str, Any]:
        """The paired comparison of arm `b` against `a` (as `grader` alone graded the runs, when named)."""
        body = {"experiment": str(ref), "a": a, "b": b, "grader": grader}
        result: dict[str, Any] = self._call("POST", "/compare", json=body)
        return result

    def compare_experiments(
        self,
        ref_a: int | str,
        ref_b: int | str,
        arm_a: str | None = None,
        arm_b: str | None = None,
        *,
        grader: str | None = None,
    ) -> dict[str, Any]:
        """An arm of `ref_b` against an arm of `ref_a` (409 when their datasets differ; as `grader` alone
        graded the runs, when named)."""
        body = {"experiment": str(ref_a), "vs": str(ref_b), "a": arm_a, "b": arm_b, "grader": grader}
        result: dict[str, Any] = self._call("POST", "/compare", json=body)
        return result

    def evaluate_gate(
        self,
        ref: int | str,
        rules: str | os.PathLike[str] | list[dict[str, Any]] | dict[str, Any] | None = None,
        *,
        arms: list[str] | None = None,
    ) -> dict[str, Any]:
        """The gate's outcome (rules: a list, a dict, or a YAML/JSON gate file)."""
        result: dict[str, Any] = self._call(
            "POST", f"/experiments/{_ref(ref)}/gate", json={"rules": _rules(rules), "arms": arms}
        )
        return result

    def add_review(
        self, ref: int | str, case_id: str, verdict: str, note: str | None = None, **more: Any
    ) -> Review:
        """Record a review verdict on a case (`abbench.add_review`): the review stored."""
        body = {"case_id": case_id, "verdict": verdict, "note": note, **more}
        return Review.from_dict(self._call("POST", f"/experiments/{_ref(ref)}/reviews", json=body))

    def export(
        self,
        ref: int | str,
        what: str = "runs",
        format: str | None = None,
        out: str | os.PathLike[str] | None = None,
        *,
        arms: tuple[str, str] | None = None,
        vs: int | str | None = None,
    ) -> ExportResult:
        """Download an export (`abbench.export`) to `out`, streamed: by default the server's file name
        (``<experiment>-<what>.<format>``) in the working folder; `format` by default from `out`'s
        suffix, else csv; `arms` and `vs` for the comparison export."""
        if format is None:
            suffix = Path(out).suffix.lower().lstrip(".") if out is not None else ""
            format = {"xls": "xlsx", "json": "jsonl", "ndjson": "jsonl"}.get(suffix, suffix) or "csv"
        params: dict[str, Any] = {"what": what, "format": format}
        if arms:
            params["arms"] = list(arms)
        if vs is not None:
            params["vs"] = str(vs)
        with self.http.stream("GET", f"/api/experiments/{_ref(ref)}/export", params=params) as r:
            if r.status_code >= 400:
                r.read()
                raise ServerError(r.status_code, r.json())
            written = json.loads(r.headers["x-abbench-export"])
            target = Path(out) if out is not None else Path.cwd() / Path(written["path"]).name
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as f:
                for chunk in r.iter_bytes():
                    f.write(chunk)
        return ExportResult.from_dict({**written, "path": target, "size_bytes": target.stat().st_size})

    def render_report(
        self,
        ref: int | str,
        out: str | os.PathLike[str] | None = None,
        *,
        gate: str | os.PathLike[str] | list[dict[str, Any]] | dict[str, Any] | None = None,
        arms: Sequence[str] | None = None,
        vs: int | str | None = None,
        grader: str | None = None,
        title: str | None = None,
        progress: bool = False,
    ) -> ReportResult:
        """Render the report on the server (`abbench.render_report`) and download the page to `out`
        (default ``reports/<the server's file name>``): its `ReportResult`, `notebook_path` None (the
        server keeps the notebook). `gate`: rules, a gate file's content, or a YAML/JSON gate file read
        here; the figures as `grader` alone graded the runs, when named. A server names the page's title
        itself (`title` is refused) and shows no progress here (`progress` is ignored)."""
        if title is not None:
            raise UsageError("title= works on a local store; a server titles the page after the experiment")
        body: dict[str, Any] = {"rules": _rules(gate), "arms": list(arms) if arms else None}
        if vs is not None:
            body["vs"] = str(vs)
        if grader is not None:
            body["grader"] = grader
        rendered = self._call("POST", f"/experiments/{_ref(ref)}/report", json=body)
        response = self._call("GET", f"/experiments/{_ref(ref)}/report")
        target = Path(out) if out is not None else Path("reports") / _file_name(response, f"{ref}.html")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(response.content)
        return ReportResult.from_dict(
            {**rendered, "grader": grader}, html_path=target.resolve(), notebook_path=None
        )

    def try_input(self, text: str, **options: Any) -> dict[str, Any]:
        """One input now, as a one-case experiment (skill: a snapshot of yours)."""
        result: dict[str, Any] = self._call("POST", "/try", json={"input": text, **options})
        return result


def _rules(rules: Any) -> Any:
    """A gate's rules as sent: a YAML/JSON gate file is read here (the server reads no file of yours)."""
    if isinstance(rules, (str, os.PathLike)):
        from abbench._yaml import load_yaml  # PyYAML loads only for rules read from a file

        return load_yaml(read_utf8(rules))
    return rules


def _file_name(response: httpx.Response, default: str) -> str:
    """The file name a download's Content-Disposition gives (RFC 6266, ``filename*`` too), else `default`."""
    header = Message()
    header["content-disposition"] = response.headers.get("content-disposition", "")
    return Path(header.get_filename() or default).name or default


def _experiment(answer: dict[str, Any]) -> Experiment:
    return Experiment.from_dict(answer)


def _progress(answer: dict[str, Any]) -> Progress:
    return Progress.from_dict(answer["progress"])
