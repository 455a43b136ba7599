"""Rendering report notebooks: papermill runs the notebook in a fresh kernel, nbconvert makes the page."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import abbench
from abbench._files import claimed_temp, publish, sweep_stale
from abbench.errors import AbbenchError, ComparisonRefused, ReportError, UsageError
from abbench.report._display import SUMMARY_MIMETYPE
from abbench.report._html import TEMPLATES, notebook_to_html
from abbench.report._secrets import find_secrets
from abbench.store import open_store

if TYPE_CHECKING:
    from abbench.store import Experiment, Store

log = logging.getLogger(__name__)

KERNEL_NAME = "python3"
"""The kernel reports run in. A fresh machine has no other; ``make`` registers this one in the venv."""

EXPERIMENT_TEMPLATE = TEMPLATES / "experiment.ipynb"
"""The report notebook for one experiment (or two experiments, or two arms of one)."""

DEFAULT_OUT_DIR = Path("reports")


@dataclass(frozen=True)
class ReportResult:
    """A rendered report.

    Attributes:
        html_path: The self-contained page.
        notebook_path: The executed notebook, kept beside it (open it in JupyterLab to dig further); None
            for a page rendered on a server and downloaded (the server keeps the notebook).
        size_bytes: The page's size.
        seconds: Wall time: kernel, notebook and export.
        experiment: The experiment reported on (``#id name``).
        title: The page's title.
        figures: How many figures the page draws.
        execute_seconds: Of `seconds`, the time papermill took (kernel start included).
        decision: The gate's outcome (``pass``, ``pass with warnings``, ``block``, ``incomplete`` or
            ``inconclusive``), or None when there is no decision (see `refusal` and `nothing_ran`).
        headline: The comparison's verdict in words, or why there is none.
        refusal: Why the page holds no decision when the pair is not named (three or more arms), else None.
        nothing_ran: True when no run has executed: the page says so at the top and shows no verdict.
        coverage: ``decided on 462 of 1,203 runs per arm`` (None without a decision).
        pair: ``v2 vs v1``: the pair decided on (None without a decision).
        grader: The grader whose grades alone the page's figures are (``grader=``), else None.
    """

    html_path: Path
    notebook_path: Path | None
    size_bytes: int
    seconds: float
    experiment: str = ""
    title: str = ""
    figures: int = 0
    execute_seconds: float = 0.0
    decision: str | None = None
    headline: str | None = None
    refusal: str | None = None
    nothing_ran: bool = False
    coverage: str | None = None
    pair: str | None = None
    grader: str | None = None

    @property
    def verdict_line(self) -> str | None:
        """``v2 vs v1: PASS WITH WARNINGS (decided on 1,203 of 1,203 runs per arm)``, or None."""
        if not self.decision:
            return None
        return (
            (f"{self.pair}: " if self.pair else "")
            + self.decision.upper()
            + (f" ({self.coverage})" if self.coverage else "")
        )

    @property
    def passed(self) -> bool:
        """Whether the page's decision is a pass (``pass`` or ``pass with warnings``)."""
        from abbench.gate import GateOutcome  # here: the process that renders needs no metrics or scipy

        return self.decision in (GateOutcome.PASS, GateOutcome.PASS_WITH_WARNINGS)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the caller should be told beside "wrote ...": nothing ran, or no decision (and why)."""
        out = []
        if self.nothing_ran:
            out.append(f"{self.experiment}: nothing has run yet; the page shows no verdict")
        if self.refusal:
            out.append(f"{self.experiment}: no decision: {self.refusal}")
        return tuple(out)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "decision": self.decision,
            "headline": self.headline,
            "refusal": self.refusal,
            "nothing_ran": self.nothing_ran,
            "coverage": self.coverage,
            "pair": self.pair,
            "html_path": str(self.html_path),
            "notebook_path": str(self.notebook_path) if self.notebook_path is not None else None,
            "size_bytes": self.size_bytes,
            "seconds": round(self.seconds, 2),
            "execute_seconds": round(self.execute_seconds, 2),
            "experiment": self.experiment,
            "title": self.title,
            "figures": self.figures,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **paths: Path | None) -> ReportResult:
        """The result `as_dict` wrote; `paths` (``html_path``, ``notebook_path``) where the page was
        downloaded to (a server keeps its notebook: None then) and `grader` when the page is one grader's."""
        given = {**data, **paths}
        notebook = given.get("notebook_path")
        return cls(
            html_path=Path(given["html_path"]),
            notebook_path=Path(notebook) if notebook is not None else None,
            size_bytes=int(given["size_bytes"]),
            seconds=float(given.get("seconds") or 0.0),
            experiment=str(given.get("experiment") or ""),
            title=str(given.get("title") or ""),
            figures=int(given.get("figures") or 0),
            execute_seconds=float(given.get("execute_seconds") or 0.0),
            grader=given.get("grader"),
            **_decision_of(given),
        )


def _decision_of(summary: Mapping[str, Any]) -> dict[str, Any]:
    """`ReportResult`'s fields about the decision, as a summary gives them (the page's, or `as_dict`'s)."""
    said = {k: summary.get(k) for k in ("decision", "headline", "refusal", "coverage", "pair")}
    return {**said, "nothing_ran": bool(summary.get("nothing_ran"))}


@dataclass(frozen=True)
class ReportFailure:
    """A report of a batch that could not be rendered: which experiment, and why."""

    experiment: str
    error: str

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"experiment": self.experiment, "error": self.error}


@dataclass(frozen=True)
class ReportBatch:
    """What `render_reports` did: the reports written and the ones that failed (the rest still ran)."""

    results: tuple[ReportResult, ...] = ()
    failures: tuple[ReportFailure, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        """Whether every report was written."""
        return not self.failures

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "results": [r.as_dict() for r in self.results],
            "failures": [f.as_dict() for f in self.failures],
        }


def _stem(name: str) -> str:
    stem = re.sub(r"[\\/:*?\"<>|\s]+", "-", name).strip("-.")
    return stem[:120] or "report"


def _kernel_env() -> dict[str, str]:
    """The kernel's environment: this process's, with tqdm off and this abbench first on the path.

    The kernel imports the same abbench that renders (a source checkout, a work tree), not whatever
    the kernel's interpreter would find first.
    """
    env = dict(os.environ)
    root = str(Path(abbench.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    env["TQDM_DISABLE"] = "1"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # silences a debugger warning on frozen modules
    env.setdefault("MPLBACKEND", "agg")
    return env


def _kernel_manager_class(env: dict[str, str], stderr: IO[str]) -> type[Any]:
    from jupyter_client.manager import AsyncKernelManager

    class ReportKernelManager(AsyncKernelManager):
        """Starts the report kernel with the report's environment and its stderr captured to a file
        (papermill has no option for either; the kernel's chatter does not belong on the caller's terminal)."""

        async def _async_start_kernel(self, **kw: Any) -> None:
            kw["env"] = {**env, **(kw.get("env") or {})}
            kw.setdefault("stderr", stderr)
            return await super()._async_start_kernel(**kw)

        start_kernel = _async_start_kernel

    return ReportKernelManager


def _tail(f: IO[str], n: int = 1500) -> str:
    f.flush()
    f.seek(0)
    text = f.read()
    return text[-n:].strip()


@contextlib.contextmanager
def _without_iri_syntax() -> Iterator[None]:
    """Import papermill (and nbformat, and its jsonschema) without jsonschema's optional IRI syntax check.

    jsonschema imports ``rfc3987_syntax`` when it is installed (Jupyter's server pulls it in), and that
    module builds some forty lark grammars at import: 1-3 s of every report, for the ``iri`` format,
    which no notebook schema uses. While papermill is imported the module reads as missing, so
    jsonschema leaves that one format check out; anything importing it afterwards gets it as usual.
    Nothing changes when jsonschema is already loaded.
    """
    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        yield
        return
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # `import` raises ImportError
    try:
        yield
    finally:
        if "rfc3987_syntax" in sys.modules and sys.modules["rfc3987_syntax"] is None:
            del sys.modules["rfc3987_syntax"]


def _execute(
    template: Path, output: Path, parameters: dict[str, Any], *, progress: bool, timeout: float
) -> None:
    try:
        with _without_iri_syntax():
            import papermill
        from jupyter_client.kernelspec import NoSuchKernel
        from papermill.exceptions import PapermillExecutionError
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ReportError(
            f"rendering reports needs papermill, nbconvert and ipykernel ({exc.name} is missing); "
            "install them with: pip install 'abbench[notebook]'"
        ) from exc
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as kernel_log:
        try:
            papermill.execute_notebook(
                str(template),
                str(output),
                parameters=parameters,
                kernel_name=KERNEL_NAME,
                progress_bar=progress,
                log_output=False,
                cwd=str(output.parent),
                execution_timeout=timeout,
                # saved when done (and when a cell fails), not after every cell: 72 writes of a page
                # growing to megabytes of figures cost 2.6 s of CPU at 100,000 cases
                request_save_on_cell_execute=False,
                kernel_manager_class=_kernel_manager_class(_kernel_env(), kernel_log),
            )
        except NoSuchKernel as exc:
            raise ReportError(
                f"no Jupyter kernel named {KERNEL_NAME!r}: install one where abbench runs with "
                "`python -m ipykernel install --sys-prefix --name python3` (make does this)"
            ) from exc
        except PapermillExecutionError as exc:
            raise ReportError(
                f"the report notebook failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}; "
                f"the executed notebook with the full traceback is {output}"
            ) from None
        except AbbenchError:
            raise
        except Exception as exc:  # the kernel died or timed out: its stderr says why
            log_text = _tail(kernel_log)
            raise ReportError(
                f"the report kernel stopped: {type(exc).__name__}: {exc}"
                + (f"; the kernel said: {log_text}" if log_text else "")
            ) from exc
        log.debug("report kernel stderr: %s", _tail(kernel_log))


def _summary(nb: Any) -> dict[str, Any]:
    """What the notebook left for the caller (`_display.summary`): the decision and the headline."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {}).get(SUMMARY_MIMETYPE)
            if isinstance(data, dict):
                return data
    return {}


def _refuse_secrets(*texts: str) -> list[str]:
    found: set[str] = set()
    for text in texts:
        found.update(find_secrets(text))
    return sorted(found)


def render_report(
    experiment: Experiment | int | str,
    *,
    vs: Experiment | int | str | None = None,
    arms: Sequence[str] | None = None,
    gate: str | os.PathLike[str] | list[dict[str, Any]] | None = None,
    out: str | os.PathLike[str] | None = None,
    title: str | None = None,
    store: Store | str | os.PathLike[str] | None = None,
    template: str | os.PathLike[str] | None = None,
    progress: bool = False,
    timeout: float = 900.0,
    grader: str | None = None,
) -> ReportResult:
    """Render an experiment's report: a self-contained HTML page, with the executed notebook beside it.

    The report notebook runs in a fresh ``python3`` kernel (papermill), reading everything from the
    store; nbconvert then writes one page with the code hidden, plotly.js inlined once and no
    external URL, so it opens offline. Every string from data, models or judges is escaped. The page
    is refused (and nothing is left behind) if it holds the value of an environment variable named
    like a key, token or secret.

    Args:
        experiment: The experiment: id, ``#id``, name, or an `Experiment`.
        vs: A baseline experiment on the same dataset: this experiment's last arm is compared against
            its last arm (or the two `arms` named, baseline's first), instead of this experiment's arms.
        arms: The two arms to compare, baseline first (default: the gate file's baseline/candidate, else
            the experiment's ``decision:``, else its two arms; with three or more arms and no pair named,
            the page holds no decision and says how to name one). With `vs`: the baseline experiment's arm,
            then this experiment's.
        gate: A gate file (YAML/JSON) or a list of rules; default the experiment's own gate.
        out: The HTML file (default ``reports/<experiment>.html``); the notebook is written beside it
            with the suffix ``.ipynb``.
        title: The page title (default from the experiment's name).
        store: A `Store`, a store folder, or None for $ABBENCH_STORE / ./.abbench.
        template: Another report notebook with the same parameters (default `EXPERIMENT_TEMPLATE`).
        progress: Show papermill's progress bar (off for batches and in tests).
        timeout: Seconds any one cell may run.
        grader: The page's figures (arms, comparison) as this grader alone graded the runs, said at its
            top; the decision stays the gate's, on the runs' verdicts. Default path and title name it.

    Example:
        >>> r = render_report("routing-v2", out="reports/routing-v2.html")   # doctest: +SKIP
        >>> r.html_path, r.size_bytes, round(r.seconds, 1)                    # doctest: +SKIP
        (PosixPath('reports/routing-v2.html'), 4981234, 6.2)

    Raises:
        NotFoundError: no such experiment, or no such arm.
        UsageError: not exactly two arms, a missing gate file, a `grader` the experiment lacks.
        ComparisonRefused: `vs` ran on another dataset.
        ReportError: the notebook failed (the message names the cell and where the executed notebook
            is), no ``python3`` kernel, or a secret in the output.
    """
    started = time.perf_counter()
    s = open_store(store)
    exp, other, arms = _chosen(s, experiment, vs, arms, grader)
    html_path = _page_path(exp, other, arms, out, grader)
    nb_path = html_path.with_suffix(".ipynb")
    title = title if title is not None else _default_title(exp, other, arms, grader)
    parameters = _parameters(s, exp, other, arms, gate, title, grader)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    template_path = Path(template) if template is not None else EXPERIMENT_TEMPLATE
    if not template_path.is_file():
        raise UsageError(f"report notebook {template_path} does not exist")
    written = _write_page(
        template_path, parameters, html_path, nb_path, title=title, progress=progress, timeout=timeout
    )
    result = _result(written, exp, title, html_path, nb_path, seconds=time.perf_counter() - started)
    result = replace(result, grader=grader)
    log.info(
        "wrote %s (%d bytes, %d figures) in %.1f s",
        html_path,
        result.size_bytes,
        result.figures,
        result.seconds,
    )
    return result


def _result(
    written: _Written, exp: Experiment, title: str, html_path: Path, nb_path: Path, *, seconds: float
) -> ReportResult:
    """What a render made, with the headline the notebook left (`_summary`)."""
    return ReportResult(
        html_path=html_path,
        notebook_path=nb_path,
        size_bytes=html_path.stat().st_size,
        seconds=seconds,
        experiment=exp.ref,
        title=title,
        figures=written.page.count('class="plotly-graph-div"'),
        execute_seconds=written.execute_seconds,
        **_decision_of(_summary(written.notebook)),
    )


def _chosen(
    s: Store, experiment: Any, vs: Any, arms: Sequence[str] | None, grader: str | None = None
) -> tuple[Experiment, Experiment | None, list[str] | None]:
    """The experiment, the baseline experiment (`vs`) and the two arms named, each checked to exist (and
    `grader` to be a grader of both experiments: refused before a kernel starts, listing the graders)."""
    from abbench.metrics import check_grader  # here: the process that renders needs no metrics or scipy

    exp = s.experiments.get(experiment)
    other = None
    if grader is not None:
        check_grader(exp, grader, s)
    if vs is not None:
        other = s.experiments.get(vs)
        if other.dataset != exp.dataset:
            # Refused before a kernel starts: a page comparing different cases would mislead.
            raise ComparisonRefused(
                f"experiment {exp.name!r} ran on dataset {exp.dataset} and {other.name!r} on {other.dataset}: "
                "a paired comparison needs both on the same cases (the same fingerprint)"
            )
        if grader is not None:
            check_grader(other, grader, s)
    if arms is None:
        return exp, other, None
    pair = list(arms)
    if len(pair) != 2:
        raise UsageError(f"arms takes two arm names, control first; got {len(pair)}: {pair}")
    if other is not None:
        other.arm(pair[0])  # NotFoundError listing the arms
        exp.arm(pair[1])
    else:
        for name in pair:
            exp.arm(name)
    return exp, other, pair


def _parameters(
    s: Store,
    exp: Experiment,
    other: Experiment | None,
    arms: list[str] | None,
    gate: str | os.PathLike[str] | list[dict[str, Any]] | None,
    title: str,
    grader: str | None = None,
) -> dict[str, Any]:
    """The report notebook's parameters (its ``parameters`` cell): ids and paths, never objects. `grader`
    only when named: another template with the older parameters still renders."""
    return {
        "store": str(s.path),
        "experiment": exp.id,
        "vs": other.id if other is not None else None,
        "arms": arms,
        "gate": _gate_parameter(gate),
        "title": title,
    } | ({"grader": grader} if grader is not None else {})


def _gate_parameter(gate: str | os.PathLike[str] | list[dict[str, Any]] | None) -> Any:
    """The gate as the notebook's parameter: a gate file's absolute path, or the rules themselves."""
    if gate is None:
        return None
    if isinstance(gate, (str, os.PathLike)):
        gate_path = Path(gate).expanduser()
        if not gate_path.is_file():
            raise UsageError(f"gate file {gate_path} does not exist")
        return str(gate_path.resolve())
    return list(gate)


def _page_path(
    exp: Experiment,
    other: Experiment | None,
    arms: list[str] | None,
    out: str | os.PathLike[str] | None,
    grader: str | None = None,
) -> Path:
    """Where the page goes: `out` (with ``.html`` added if it lacks it), else named after what it compares
    (and the grader whose figures it shows)."""
    name = exp.name + (f"-vs-{other.name}" if other is not None else "")
    if arms:
        name += f"-{arms[0]}-vs-{arms[1]}"
    if grader is not None:
        name += f"-by-{grader}"
    html_path = Path(out).expanduser() if out is not None else DEFAULT_OUT_DIR / f"{_stem(name)}.html"
    if html_path.suffix.lower() not in (".html", ".htm"):
        html_path = html_path.with_name(html_path.name + ".html")
    return html_path.resolve()


def _default_title(
    exp: Experiment, other: Experiment | None, arms: list[str] | None, grader: str | None = None
) -> str:
    title = exp.name + (f" vs {other.name}" if other is not None else "")
    if arms:
        title += f": {arms[1]} vs {arms[0]}"
    if grader is not None:
        title += f" (graded by {grader} alone)"
    return title


@dataclass(frozen=True)
class _Written:
    """A page written: its HTML, the executed notebook, and the seconds the notebook ran."""

    page: str
    notebook: Any
    execute_seconds: float


def _write_page(
    template: Path,
    parameters: dict[str, Any],
    html_path: Path,
    nb_path: Path,
    *,
    title: str,
    progress: bool,
    timeout: float,
) -> _Written:
    """Execute the notebook, convert it, refuse secrets, and move the page and the notebook into place.

    Both are written to temporary files first, so a failure leaves nothing half-written (a failed
    notebook is kept for whoever debugs it, unless it holds a secret).
    """
    # what a killed render left here (never another live render's notebook), then this one's
    sweep_stale(html_path.parent, f".{nb_path.stem}.*.ipynb")
    sweep_stale(html_path.parent, f".{html_path.stem}.*.html")
    held, tmp_nb = claimed_temp(html_path.parent, prefix=f".{nb_path.stem}.", suffix=".ipynb")
    try:
        t0 = time.perf_counter()
        try:
            _execute(template, tmp_nb, parameters, progress=progress, timeout=timeout)
        except ReportError:
            if tmp_nb.exists() and not _refuse_secrets(tmp_nb.read_text(encoding="utf-8")):
                os.replace(tmp_nb, nb_path)
            raise
        execute_s = time.perf_counter() - t0
        import nbformat

        nb_text = tmp_nb.read_text(encoding="utf-8")
        executed = nbformat.reads(nb_text, as_version=4)
        page = notebook_to_html(executed, title=title)
        leaked = _refuse_secrets(page, nb_text)
        if leaked:
            raise ReportError(
                f"refusing to write {html_path}: the report holds the value of ${', $'.join(leaked)}; "
                "remove it from the data (or unset the variable) and render again — nothing was written"
            )
        fd, tmp_page = claimed_temp(html_path.parent, prefix=f".{html_path.stem}.", suffix=".html")
        try:  # held (locked) until it is in place
            with tmp_page.open("w", encoding="utf-8", newline="\n") as f:
                f.write(page)
            # pages and notebooks are made to be shared: not the private mode of a temporary file
            publish(tmp_page, html_path)
        except BaseException:
            tmp_page.unlink(missing_ok=True)
            raise
        finally:
            os.close(fd)
        publish(tmp_nb, nb_path)
    finally:
        with contextlib.suppress(OSError):
            tmp_nb.unlink()
        os.close(held)
    return _Written(page, executed, execute_s)


def render_reports(
    *,
    since: str | date | None = None,
    experiments: Sequence[Any] | None = None,
    out_dir: str | os.PathLike[str] = DEFAULT_OUT_DIR,
    store: Store | str | os.PathLike[str] | None = None,
    gate: str | os.PathLike[str] | None = None,
    timeout: float = 900.0,
) -> ReportBatch:
    """Render one report per experiment, for nightly batches; a failing report does not stop the rest.

    Each page is ``<out_dir>/<experiment>.html`` (with ``-<id>`` added when two experiments share a
    name). Progress bars are off.

    Args:
        since: Every experiment created on or after this date (ISO ``2026-11-01``, or a `date`).
        experiments: These experiments (ids, names or `Experiment`s) instead.
        out_dir: The folder for the pages and notebooks.
        store: A `Store`, a store folder, or None for $ABBENCH_STORE / ./.abbench.
        gate: A gate file applied to every report (default: each experiment's own gate).
        timeout: Seconds any one cell may run.

    Raises:
        UsageError: neither or both of `since` and `experiments`, or a malformed date.
    """
    if (since is None) == (experiments is None):
        raise UsageError("give since=DATE (every experiment since then) or experiments=[...], one of the two")
    s = open_store(store)
    if since is not None:
        text = since.isoformat() if isinstance(since, date) else str(since).strip()
        try:
            date.fromisoformat(text[:10])
        except ValueError:
            raise UsageError(f"{since!r} is not a date; write it as YYYY-MM-DD, e.g. 2026-11-01") from None
        chosen = list(reversed(s.experiments.all(since=text)))
    else:
        chosen = [s.experiments.get(e) for e in experiments or ()]
    names = [e.name for e in chosen]
    out = Path(out_dir)
    results, failures = [], []
    for exp in chosen:
        stem = _stem(exp.name) + (f"-{exp.id}" if names.count(exp.name) > 1 else "")
        try:
            results.append(
                render_report(
                    exp, out=out / f"{stem}.html", store=s, gate=gate, progress=False, timeout=timeout
                )
            )
        except AbbenchError as exc:
            log.warning("report for %s failed: %s", exp.ref, exc)
            failures.append(ReportFailure(exp.ref, str(exc)))
    return ReportBatch(tuple(results), tuple(failures))
