"""The client: one method per route, named as the local Python API names the same step."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from collections.abc import Callable, Iterator, Sequence
from email.message import Message
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from abbench import _actions as do
from abbench._utf8 import read_utf8
from abbench.compare import Comparison, MultiComparison
from abbench.dataset import DatasetInfo
from abbench.errors import AbbenchError, Action, UsageError
from abbench.export import ExportResult
from abbench.gate import GateResult, load_gate
from abbench.report import ReportResult
from abbench.runner import Progress, RecordSummary, RunSummary, StopReason
from abbench.snapshot import TakenSnapshot, prepare_snapshot
from abbench.store import Experiment, Failures, Review

_T = TypeVar("_T")

MAX_ANSWER_BYTES = 256 * 1024**2
"""The largest JSON answer a `Client` reads by default (a comparison of 100,000 cases is ~40 MB): a server
that sends more is refused, not held in memory."""
MAX_EVENT_BYTES = 16 * 1024**2
"""The longest line of an experiment's event stream a `Client` reads (one event is a progress, ~1 KB per arm)."""
MAX_DOWNLOAD_BYTES = 8 * 1024**3
"""The largest file (an export, a report) a `Client` writes by default; a larger one is removed."""


class ServerError(AbbenchError):
    """An error answer: `status` (HTTP), `title` and `problem` (the server's problem details), with the
    facts the problem carries (`kind`, `name`, `choices`). Its message is the problem's detail, the
    server's words for what a local store says (what to do worded again for the caller's view)."""

    def __init__(self, status: int, problem: dict[str, Any]):
        title, detail = str(problem.get("title") or "error"), str(problem.get("detail") or "")
        said: list[str | Action] = [detail or f"the server answered {status} ({title})"]
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
        self.title = title
        self.problem = problem
        self.exit_code = 1 if status == 409 else 2


def _tar(name: str, entries: Sequence[Any]) -> bytes:
    """The files read from a skill folder (`abbench.snapshot.prepare_snapshot`'s) as a tar.gz under `name`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for entry in entries:
            member = tarfile.TarInfo(f"{name}/{entry.path}")
            member.size, member.mode = len(entry.data), 0o755 if entry.executable else 0o644
            tf.addfile(member, io.BytesIO(entry.data))
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
        max_answer_bytes: The largest JSON answer read (default `MAX_ANSWER_BYTES`).
        max_download_bytes: The largest file downloaded (default `MAX_DOWNLOAD_BYTES`).

    The key goes to `base_url` only: a redirect is never followed (to another host it would carry the key;
    this API answers none), it is an error.
    """

    def __init__(
        self,
        base_url: str,
        key: str | None = None,
        *,
        actor: str | None = None,
        timeout: float = 120.0,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        max_download_bytes: int = MAX_DOWNLOAD_BYTES,
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
        self.max_answer_bytes = max_answer_bytes
        self.max_download_bytes = max_download_bytes
        self.http = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, follow_redirects=False
        )

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer of a request to ``/api{path}`` (read within `max_answer_bytes`)."""
        with self.http.stream(method, f"/api{path}", **kwargs) as response:
            self._check(method, path, response)
            body = self._read(response, self.max_answer_bytes, f"{method} {path}")
        try:
            return json.loads(body) if body else None
        except (ValueError, RecursionError):  # RecursionError: nested past the json module's depth
            raise _not_abbench(f"{method} {path} answered {body[:200]!r}, not JSON") from None

    def _answer(self, read: Callable[[Any], _T], method: str, path: str, **kwargs: Any) -> _T:
        """The answer of a request to ``/api{path}`` as `read` makes it a record (`_call`'s JSON)."""
        return _record(read, self._call(method, path, **kwargs), f"{method} {path}")

    def _check(self, method: str, path: str, response: httpx.Response) -> None:
        """Raise `ServerError` for an error answer (its problem details) or a redirect (never followed)."""
        if response.status_code >= 400:
            body = self._read(response, 1024**2, f"{method} {path}", cut=True)
            try:
                problem = json.loads(body)
            except ValueError:
                problem = None
            if not isinstance(problem, dict):
                problem = {"title": "error", "detail": body[:500].decode("utf-8", "replace")}
            raise ServerError(response.status_code, problem)
        if response.status_code >= 300 or response.status_code == 204:
            where = response.headers.get("location")
            raise ServerError(
                response.status_code,
                {
                    "title": "unexpected answer",
                    "detail": f"{method} {path} answered {response.status_code}"
                    + (
                        f" (to {where}: not followed, the key goes to {self.http.base_url} only)"
                        if where
                        else ""
                    )
                    + "; check the server URL",
                },
            )

    def _download(self, path: str, params: dict[str, Any], target: Callable[[httpx.Response], Path]) -> Path:
        """Stream ``GET /api{path}`` into the file `target` names from the response, at most
        `max_download_bytes` (a larger one, or one cut short, is removed: never half a file)."""
        with self.http.stream("GET", f"/api{path}", params=params) as r:
            self._check("GET", path, r)
            file = target(r)
            file.parent.mkdir(parents=True, exist_ok=True)
            try:
                with open(file, "wb") as f:
                    size = 0
                    for chunk in r.iter_bytes():
                        size += len(chunk)
                        if size > self.max_download_bytes:
                            raise _too_large(f"GET {path}", self.max_download_bytes)
                        f.write(chunk)
            except BaseException:
                file.unlink(missing_ok=True)
                raise
        return file

    def _read(self, response: httpx.Response, limit: int, what: str, *, cut: bool = False) -> bytes:
        """The body of `response`, at most `limit` bytes (`cut`: the first `limit`; else an error)."""
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > limit:
                if cut:
                    chunks.append(chunk[: limit - (size - len(chunk))])
                    break
                raise _too_large(what, limit)
            chunks.append(chunk)
        return b"".join(chunks)

    # -- datasets and snapshots --------------------------------------------------------------------

    def record_runs(self, experiment: int | str, outcomes: list[dict[str, Any]]) -> RecordSummary:
        """Record outcomes of runs executed elsewhere (`abbench.record_runs`'s outcomes), then grade them."""
        return self._answer(
            RecordSummary.from_dict,
            "POST",
            f"/experiments/{_ref(experiment)}/runs",
            json={"outcomes": outcomes},
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
            return self._answer(
                DatasetInfo.from_dict, "POST", "/datasets", files={"file": (Path(path).name, f)}, data=form
            )

    def list_datasets(self) -> list[DatasetInfo]:
        """The datasets this key's owner holds, oldest first."""
        return self._answer(lambda answer: [DatasetInfo.from_dict(d) for d in answer], "GET", "/datasets")

    def snapshot_skill(self, folder: str | os.PathLike[str], **options: Any) -> TakenSnapshot:
        """Upload a skill folder: the files a local snapshot would hold (read and checked here, with the
        local defaults' limits), sent as a tar.gz; the snapshot the server stored, with its references
        and takings (`TakenSnapshot`; its `folder` None: the server's own)."""
        _local_only(
            "snapshot_skill", options, "the server applies its own limits and reads no repository here"
        )
        prepared = prepare_snapshot(folder)  # read and checked as a local snapshot: the same mistakes told
        name = Path(folder).resolve().name or "skill"
        data = _tar(name, prepared.content.entries)
        return self._answer(
            TakenSnapshot.from_dict, "POST", "/skill-snapshots", files={"file": (f"{name}.tgz", data)}
        )

    def snapshot_git(
        self, url: str, ref: str = "HEAD", path: str | None = None, **limits: Any
    ) -> TakenSnapshot:
        """Snapshot the folder `path` of a git repository at `ref`, cloned by the server.

        The server must reach `url` itself (https or ssh unless it allows more); an unknown ref
        answers 422 naming it, an unreachable repository 502.
        """
        _local_only("snapshot_git", limits, "the server applies its own limits")
        body: dict[str, Any] = {"git": url, "ref": ref}
        if path is not None:
            body["path"] = path
        return self._answer(TakenSnapshot.from_dict, "POST", "/skill-snapshots", json=body)

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
        return self._answer(
            Experiment.from_dict, "POST", "/experiments", content=body, headers={"Content-Type": kind}
        )

    def load_experiment(self, ref: int | str) -> Experiment:
        """The experiment (`abbench.load_experiment`): id, ``#id``, name or ``NAME@<skill version>``."""
        return self._answer(Experiment.from_dict, "GET", f"/experiments/{_ref(ref)}")

    def experiment_status(self, ref: int | str) -> Progress:
        """Where the experiment stands (`abbench.experiment_status`): runs per arm and state, and why it
        paused, stopped or waits."""
        return self._answer(_progress, "GET", f"/experiments/{_ref(ref)}")

    def list_experiments(self, *, include_tries: bool = False) -> list[Experiment]:
        """This owner's experiments, newest first (`abbench.list_experiments`)."""
        return self._answer(
            lambda answer: [Experiment.from_dict(e) for e in answer], "GET", "/experiments",
            params={"tries": include_tries},
        )  # fmt: skip

    def command_handle(self, exp: Experiment) -> str:
        """The shortest text that names `exp` in a command on this server: its name when no other
        experiment of this owner has it, else ``#id``."""
        same = [e for e in self._call("GET", "/experiments", params={"tries": True}) if e["name"] == exp.name]
        return exp.name if len(same) == 1 else f"#{exp.id}"

    def failures(self, ref: int | str, *, limit: int = 10) -> Failures:
        """Its runs that got no verdict, by kind and type, at most `limit` kinds (`store.runs.failures`)."""
        return self._answer(
            Failures.from_dict, "GET", f"/experiments/{_ref(ref)}/failures", params={"limit": limit}
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

    def wait(
        self,
        ref: int | str,
        *,
        timeout: float | None = None,
        poll: float = 1.0,
        observers: Sequence[Any] = (),
    ) -> Progress:
        """Wait until the experiment is over (finished, cancelled, interrupted, or paused with no process
        left to go on), following its events; where it stands then. Each of `observers` is told the
        progress as it moves (`abbench.runner.Observer`: the progress bar of `abbench run`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        path = f"/experiments/{_ref(ref)}/events"
        while True:
            with self.http.stream("GET", f"/api{path}", params={"every": poll}) as events:
                self._check("GET", path, events)
                if not events.headers.get("content-type", "").startswith("text/event-stream"):
                    # asked again, an answer that is no event stream would be asked for forever
                    raise _not_abbench(
                        f"GET {path} answered {events.headers.get('content-type')!r}, not events"
                    )
                for line in _lines(events, MAX_EVENT_BYTES, f"GET {path}"):
                    if line.startswith("event: end"):
                        return self.experiment_status(ref)
                    if line.startswith("data: {") and observers and '"arms"' in line:
                        progress = _record(_progress_event, line[6:], f"GET {path}")
                        for observer in observers:
                            observer.on_progress(progress)
                    if deadline is not None and time.monotonic() > deadline:
                        raise TimeoutError(f"experiment {ref} did not finish within {timeout} s")

    def run_experiment(self, ref: int | str, *, observers: Sequence[Any] = (), **options: Any) -> RunSummary:
        """Run the experiment in the server's pool and wait for it (`abbench.run_experiment`): what this
        call did, counted from where the experiment stood before and after (a run that ran again counts
        once), `elapsed_s` the wait seen here. The pool runs it with its definition's settings: `options`
        (a local run's ``concurrency``, ``executor`` ...) are refused, naming them."""
        _local_only("run_experiment", options, "the server's pool runs it with its definition's settings")
        before = self.experiment_status(ref)
        started = time.monotonic()
        self.start(ref)
        after = self.wait(ref, poll=0.5, observers=observers)
        exp = self.load_experiment(ref)
        return _summary(before, after, time.monotonic() - started, exp)

    def results(self, ref: int | str, **filters: Any) -> dict[str, Any]:
        """A page of runs (filters: arm, state, round (from 1), moved, disagreement, offset, limit)."""
        result: dict[str, Any] = self._call("GET", f"/experiments/{_ref(ref)}/results", params=filters)
        return result

    # -- analysis ----------------------------------------------------------------------------------

    def compare_arms(
        self, ref: int | str, a: str | None = None, b: str | None = None, **settings: Any
    ) -> Comparison:
        """The paired comparison of arm `b` against `a` (`abbench.compare_arms`); `settings` are
        `abbench.compare.CompareOptions`' fields (``grader``, ``outcome``, ``alpha``, ``margin`` ...)."""
        body = {"experiment": str(ref), "a": a, "b": b, **_given(settings)}
        return self._answer(Comparison.from_dict, "POST", "/compare", json=body)

    def compare_experiments(
        self,
        ref_a: int | str,
        ref_b: int | str,
        arm_a: str | None = None,
        arm_b: str | None = None,
        **settings: Any,
    ) -> Comparison:
        """An arm of `ref_b` against an arm of `ref_a` (`abbench.compare_experiments`; 409 when their
        datasets differ); `settings` as `compare_arms`'."""
        body = {"experiment": str(ref_a), "vs": str(ref_b), "a": arm_a, "b": arm_b, **_given(settings)}
        return self._answer(Comparison.from_dict, "POST", "/compare", json=body)

    def compare_all(self, ref: int | str, **settings: Any) -> MultiComparison:
        """Every arm of the experiment: Cochran's Q, then each against the first (`abbench.compare_all`);
        `settings`: ``outcome``, ``confidence``, ``alpha``, ``grader``."""
        body = {"experiment": str(ref), "all": True, **_given(settings)}
        return self._answer(MultiComparison.from_dict, "POST", "/compare", json=body)

    def evaluate_gate(
        self,
        ref: int | str,
        rules: str | os.PathLike[str] | list[dict[str, Any]] | dict[str, Any] | None = None,
        *,
        arms: Sequence[str] | None = None,
        vs: int | str | None = None,
        cluster: str | None = None,
    ) -> GateResult:
        """The gate's outcome (`abbench.evaluate_gate`). `rules`: a list, a dict, or a YAML/JSON gate file
        read here: checked here first (a mistake is told with its line), then sent with its name."""
        source = None
        if isinstance(rules, (str, os.PathLike)):
            load_gate(Path(rules))  # the file's mistakes, said with their lines, before any request
            source = str(rules)
        body = {"rules": _rules(rules), "arms": list(arms) if arms else None, "source": source}
        body.update({"vs": None if vs is None else str(vs), "cluster": cluster})
        return self._answer(GateResult.from_dict, "POST", f"/experiments/{_ref(ref)}/gate", json=body)

    def add_review(
        self, ref: int | str, case_id: str, verdict: str, note: str | None = None, **more: Any
    ) -> Review:
        """Record a review verdict on a case (`abbench.add_review`): the review stored."""
        body = {"case_id": case_id, "verdict": verdict, "note": note, **more}
        return self._answer(Review.from_dict, "POST", f"/experiments/{_ref(ref)}/reviews", json=body)

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
        written: dict[str, Any] = {}

        def target(r: httpx.Response) -> Path:
            header = r.headers.get("x-abbench-export", "")
            written.update(_record(lambda text: dict(json.loads(text)), header, f"GET {r.url.path}"))
            return (
                Path(out) if out is not None else Path.cwd() / _safe_name(written["path"], f"{ref}.{format}")
            )

        path = self._download(f"/experiments/{_ref(ref)}/export", params, target)
        return ExportResult.from_dict({**written, "path": path, "size_bytes": path.stat().st_size})

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
        target = self._download(
            f"/experiments/{_ref(ref)}/report",
            {},
            lambda r: Path(out) if out is not None else Path("reports") / _file_name(r, f"{ref}.html"),
        )
        return _record(
            lambda answer: ReportResult.from_dict(
                {**answer, "grader": grader}, html_path=target.resolve(), notebook_path=None
            ),
            rendered,
            f"POST /experiments/{_ref(ref)}/report",
        )

    def try_input(self, text: str, **options: Any) -> dict[str, Any]:
        """One input now, as a one-case experiment (skill: a snapshot of yours)."""
        result: dict[str, Any] = self._call("POST", "/try", json={"input": text, **options})
        return result


def _local_only(call: str, options: dict[str, Any], why: str) -> None:
    """Refuse options that work on a local store only, naming them (None is not given)."""
    given = [k for k, v in options.items() if v is not None]
    if given:
        raise UsageError(
            f"{call}: {', '.join(f'{k}=' for k in given)} work(s) on a local store only: {why}; drop them, "
            "or call the library on a local store",
            kind="option",
            name=given[0],
            choices=(),
        )


def _given(settings: dict[str, Any]) -> dict[str, Any]:
    """The comparison options set (None: the server's default, as the library's)."""
    return {k: v for k, v in settings.items() if v is not None}


def _too_large(what: str, limit: int) -> ServerError:
    return ServerError(
        502,
        {
            "title": "answer too large",
            "detail": f"{what}: the server sent more than {limit:,} bytes, the most this client reads; "
            "check the server URL, or raise the client's limit (Client(max_answer_bytes=...))",
        },
    )


def _lines(response: httpx.Response, limit: int, what: str) -> Iterator[str]:
    """The lines of an event stream, each at most `limit` characters (a line never ending is an error).

    A line's parts are kept apart until it ends: a server sending one endless line in small pieces is
    read in linear time, not joined and split again piece by piece."""
    pending: list[str] = []
    size = 0
    for text in response.iter_text():
        if "\n" not in text:
            pending.append(text)
            size += len(text)
            if size > limit:
                raise _too_large(what, limit)
            continue
        first, *lines, rest = text.split("\n")
        yield "".join([*pending, first]).rstrip("\r")
        yield from (line.rstrip("\r") for line in lines)
        pending, size = [rest], len(rest)
    if "".join(pending):
        yield "".join(pending)


def _summary(before: Progress, after: Progress, elapsed: float, exp: Experiment) -> RunSummary:
    """What a run in the server's pool did, from the experiment's counts before and after it."""

    def grown(count: Callable[[Progress], int]) -> int:
        return max(0, count(after) - count(before))

    graded = grown(lambda p: p.right + p.wrong + p.scored)
    grading_failed = grown(lambda p: p.grading_failed)
    execution_failed = grown(lambda p: p.execution_failed)
    executed = graded + grading_failed + grown(lambda p: p.counts().get("executed", 0))
    return RunSummary(
        after.experiment, after.experiment_id, after.status, executed, graded,
        execution_failed + grading_failed, grown(lambda p: p.cancelled), elapsed, after,
        execution_failed=execution_failed, grading_failed=grading_failed,
        pause_reason=after.pause_reason, notes=after.notes, stop_reason=StopReason.from_dict(exp.stop_reason),
    )  # fmt: skip


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
    return _safe_name(header.get_filename() or default, default)


def _safe_name(name: str, default: str) -> str:
    """The last part of a file name a server gave (never a folder, ``..`` or a hidden name), else `default`."""
    last = Path(str(name).replace("\\", "/")).name
    return last if last and not last.startswith(".") else Path(default).name


def _progress(answer: dict[str, Any]) -> Progress:
    return Progress.from_dict(answer["progress"])


def _progress_event(data: str) -> Progress:
    """The progress an event's ``data:`` line carries."""
    return Progress.from_dict(json.loads(data))


def _record(read: Callable[[Any], _T], answer: Any, what: str) -> _T:
    """`answer` as `read` makes it a record; one of the wrong shape (a list for a record, a text for a
    number, nested past the interpreter's depth) is a `ServerError` naming the request, not a traceback."""
    try:
        return read(answer)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError) as exc:
        raise _not_abbench(
            f"{what} answered what abbench cannot read ({type(exc).__name__}: {exc})"
        ) from None


def _not_abbench(detail: str) -> ServerError:
    """An answer this client cannot read: most often a URL that is not an abbench server's."""
    return ServerError(
        502, {"title": "not an abbench answer", "detail": f"{detail[:500]}; check the server URL"}
    )
