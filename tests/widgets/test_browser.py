"""The notebooks in a real browser: JupyterLab on 127.0.0.1 in Debian's headless Chromium via Playwright.

Opens 02_run on a run started by `abbench run` in another process, pauses, resumes and cancels it from
the notebook (the cancelled experiment must read grey and incomplete); then starts the demo run (the
builtin agent with simulated latency), pauses it and checks that progress stops, resumes it to 100 %,
then opens 04_review and saves a review, which must land in the store; in 03_results, a gate file chosen
in the widget gives the verdict `abbench gate --rules` and the report rendered from the widget give.
A screenshot of each notebook is written under reports/.
"""

from __future__ import annotations

import html
import re
import shutil
import time
from pathlib import Path

import pytest

from abbench.gate import evaluate_gate
from abbench.review import REVIEW_VERDICTS, disagreements, reviews
from abbench.store import open_store
from tests.browser import HANG_MS, chromium, offline_page, require_chromium
from tests.conftest import DEMO, REPO, start_run
from tests.widgets.demo import build_demo_store, build_priced_demo
from tests.widgets.lab import VIEWPORT, lab_page, parameterized

REPORTS = REPO / "reports"
DONE = re.compile(r"([\d,]+)/([\d,]+) done \((\d+) %\)")

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _status(page) -> tuple[str, int, int]:
    """The run-control status line ("#1 name: running · 75/540 done (14 %) ..."): (text, done, total).

    Read without waiting, so a caller polls it; ("", -1, -1) while the widget shows none.
    """
    for text in page.locator(".widget-html-content").all_inner_texts():
        m = DONE.search(text)
        if text.startswith("#") and m:
            return text, int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))
    return "", -1, -1


def _button(page, name: str):
    """An ipywidgets button by its exact label (JupyterLab's own toolbar has "Restart ..." buttons)."""
    return page.locator("button.widget-button").filter(has_text=re.compile(rf"^\s*{re.escape(name)}\s*$"))


def _wait(condition, timeout: float, what: str, step: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _flow(page, lab, store_dir: Path, seen: dict) -> None:
    """The person's steps in 02_run, checked against the page and the store."""
    lab.open(page, "02_run.ipynb")
    # The widget's static copy (for exported pages) is in the page but hidden where the widget draws.
    copy = page.locator(".abbench-static")
    assert copy.count() == 1 and not copy.is_visible()
    _button(page, "Start").click()
    _wait(lambda: _status(page)[1] > 0, 30, "the first runs")
    _button(page, "Pause").click()
    text = _wait(
        lambda: (t := _status(page)[0]) and "paused" in t and " 0 running" in t and t,
        60,
        "the pause (runs in flight finish)",
    )
    _, done_at_pause, total = _status(page)
    seen["paused"] = text

    def started(store, exp_id):  # runs ever moved to running (every one of them has finished now)
        return store.query_one(
            "SELECT COUNT(*) FROM run_events e JOIN runs r ON r.id = e.run_id "
            "WHERE r.experiment_id=? AND e.to_state='running'",
            (exp_id,),
        )[0]

    with open_store(store_dir) as store:
        exp = store.experiments.all()[0]
        assert exp.status == "paused"
        stored_done = sum(c["pass"] + c["fail"] + c["cancelled"] for c in store.runs.counts(exp.id).values())
        started_at_pause = started(store, exp.id)
    assert stored_done == done_at_pause < total
    # nothing moved while the page showed the pause: no run started, the count did not change
    _, done_later, _ = _status(page)
    with open_store(store_dir) as store:
        assert started(store, exp.id) == started_at_pause, "a run started while paused"
    assert done_later == done_at_pause, "progress moved while paused"
    _button(page, "Resume").click()
    final = _wait(
        lambda: (t := _status(page)[0]) and "(100 %)" in t and "finished" in t and t,
        180,
        "the run to finish",
    )
    seen["finished"] = final
    page.screenshot(path=str(REPORTS / "widgets-run.png"), full_page=True)
    assert total == 3 * 60 * 3

    # 04_review: open the first gold disagreement, write a note, say the model is right
    lab.open(page, "04_review.ipynb")
    cases = page.locator(
        ".widget-select select[size]"
    ).first  # the review's list (the All-cases Open list follows)
    _wait(lambda: cases.locator("option").count() > 0, 60, "the list of disagreements")
    first = cases.locator("option").first.inner_text()
    case_id = re.split(r"\s", first, maxsplit=1)[0]  # ipywidgets renders spaces as no-break spaces
    cases.select_option(index=0)
    _wait(
        lambda: any(
            t.startswith(f"Case {case_id}") for t in page.locator(".widget-html-content").all_inner_texts()
        ),
        30,
        "the case",
    )
    page.locator(".widget-textarea textarea").fill("the model is right: 两个任务")
    page.locator(".widget-textarea textarea").blur()
    _button(page, "2 · model is right").click()
    saved = _wait(
        lambda: next(
            (t for t in page.locator(".abbench-ok").all_inner_texts() if t.startswith(f"saved {case_id}:")),
            None,
        ),
        30,
        "the review to be saved",
    )
    seen["review"] = f"{case_id}: {saved}"
    page.screenshot(path=str(REPORTS / "widgets-review.png"), full_page=True)
    with open_store(store_dir) as store:
        exp = store.experiments.all()[0]
        (review,) = reviews(exp.id, store=store)
    assert (review.case_id, review.verdict, review.note) == (
        case_id,
        "model_correct",
        "the model is right: 两个任务",
    )


def test_run_pause_resume_and_review_in_jupyterlab(lab, tmp_path):
    started = time.monotonic()
    store_dir = build_demo_store(tmp_path / "store", run=False)
    started_elsewhere: list = []  # (process, gate) of the run started as from a terminal

    def start_elsewhere():
        started_elsewhere.extend(_start_elsewhere(store_dir, tmp_path / "gate"))
        return started_elsewhere[1]

    parameterized(
        REPO / "notebooks" / "02_run.ipynb",
        lab.root / "02_run.ipynb",
        store_path=str(store_dir),
        definition=str(DEMO / "experiment.yaml"),
        latency_ms=150,
        cases=60,
        rounds=3,
    )
    parameterized(
        REPO / "notebooks" / "04_review.ipynb", lab.root / "04_review.ipynb", store_path=str(store_dir)
    )
    REPORTS.mkdir(exist_ok=True)
    seen: dict[str, object] = {}
    # Only the JupyterLab server may be reached: anything else would not work offline.
    with chromium() as browser, lab_page(browser, lab, REPORTS / "widgets-failure.png") as page:
        try:
            _elsewhere_flow(page, lab, start_elsewhere, seen)
            proc = started_elsewhere[0]
            _, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err
            _flow(page, lab, store_dir, seen)
        except BaseException:
            print("texts:", [t[:120] for t in page.locator(".widget-html-content").all_inner_texts()])
            print("run widget:", _state(page))
            raise
        finally:
            if started_elsewhere and started_elsewhere[0].poll() is None:
                started_elsewhere[0].kill()
    seen["seconds"] = round(time.monotonic() - started, 1)
    print(f"browser test: {seen}")


def test_review_ten_cases_by_keyboard_alone(lab, demo_store_copy):
    """04_review in JupyterLab driven by keys only: j opens the first case, 1–5 give verdicts and move on,
    n and Esc write a note, u undoes; the store holds exactly what was meant and no cell changed type."""
    from tests.widgets import review_keys as rk

    with open_store(demo_store_copy) as store:
        listed = len(disagreements("demo", "gold", store=store))
    parameterized(
        REPO / "notebooks" / "04_review.ipynb",
        lab.root / "04_review.ipynb",
        store_path=str(demo_store_copy),
        experiment="demo",
    )
    REPORTS.mkdir(exist_ok=True)
    with chromium() as browser, lab_page(browser, lab, REPORTS / "widgets-review-keys-failure.png") as page:
        lab.open(page, "04_review.ipynb")
        page.wait_for_selector(".abbench-keys-on", timeout=HANG_MS)  # the widget took the focus
        cells = page.evaluate(rk.CELL_TYPES)
        seen, times = [], []
        first, _ = rk.press(page, "j")
        seen.append(first)
        for n, key in enumerate("1234512345"):
            if n == 1:  # a note on the second case, by keyboard: n, type, Esc
                page.keyboard.press("n")
                page.keyboard.type("gold says fast: 两个任务")
                page.keyboard.press("Escape")
                _wait(lambda: page.evaluate(rk.KEYS_ON), 30, "the keys back after Esc")
            case, seconds = rk.press(page, key)
            times.append(seconds)
            if n == 4:  # undo the fifth verdict: back on that case, then give another one
                back, _ = rk.press(page, "u")
                assert back == seen[-1]
                case, _ = rk.press(page, "1")
            seen.append(case)
        last = f"saved {seen[9]}: case → {REVIEW_VERDICTS[4]}; now {seen[10]}"
        _wait(lambda: last in page.locator(".abbench-ok").all_inner_texts(), 30, "the last save's line")
        page.evaluate("() => document.querySelector('.abbench-keys-root').scrollIntoView()")
        page.screenshot(path=str(REPORTS / "widgets-review-keys.png"))
        progress = page.locator(".abbench-keys-root .widget-html-content b").all_inner_texts()
        assert f"10 of {listed} reviewed" in progress, progress
        assert page.evaluate(rk.CELL_TYPES) == cells  # no key reached JupyterLab (1 = "heading 1")
    reviewed = seen[:10]
    with open_store(demo_store_copy) as store:
        exp = store.experiments.get("demo")
        latest = reviews(exp.id, store=store)
        history = reviews(exp.id, store=store, latest=False)
    verdicts = dict(zip("12345", REVIEW_VERDICTS, strict=True))
    meant = [verdicts[k] for k in "1234112345"]  # the fifth was undone and given as 1
    assert [(r.case_id, r.verdict) for r in latest] == list(zip(reviewed, meant, strict=True))
    assert len(history) == 10 and len(set(reviewed)) == 10  # the undone verdict left no trace
    assert latest[1].note == "gold says fast: 两个任务" and all(
        r.note is None for i, r in enumerate(latest) if i != 1
    )
    print(f"seconds from a verdict key to the next case: {[round(t, 2) for t in times]}")


def _messy_cases(path: Path) -> Path:
    """The demo's cases.csv with problems of three kinds on many rows: blank queries, repeated ids and
    25 misspelt routes (the trial's report had one row per such value, ~3,000 px tall)."""
    import csv
    import io

    rows = list(csv.reader((DEMO / "cases.csv").read_text(encoding="utf-8-sig").splitlines()))
    header, body = rows[0], rows[1:]
    query, route, case_id = header.index("query"), header.index("route"), header.index("case_id")
    for i, row in enumerate(body):
        if i % 9 == 4:
            row[query] = ""
        elif i % 7 == 3:
            row[route] = f"route-{i % 25}"
        elif i % 13 == 6:
            row[case_id] = body[0][case_id]
    out = io.StringIO()
    csv.writer(out).writerows([header, *body])
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def test_the_import_report_is_grouped_under_one_screen(tmp_path):
    """The mapping widget's report on a file with ~120 invalid rows of three kinds and 25 misspelt labels,
    drawn by Chromium at the width of a notebook's output: one row per kind, the real outcome (refused,
    nothing stored), all within 600 px; "show all" scrolls in its own box. No JupyterLab: the widget's HTML
    and CSS are what it shows there (the JupyterLab flow costs a minute here, for nothing this needs)."""
    from abbench.widgets import MappingWidget
    from abbench.widgets._base import STYLE

    require_chromium()
    data = _messy_cases(tmp_path / "messy.csv")
    with open_store(tmp_path / "store") as store:
        widget = MappingWidget(store, path=data, mapping=DEMO / "mapping-csv.yaml")
        widget.check_button.click()
        widget.import_button.click()
        assert "was not imported" in widget.errors.message
        assert store.datasets.all() == []  # refused: nothing stored
    page_html = (
        f"<html><body style='font-family:sans-serif; font-size:13px'>{STYLE}"
        f"<div id='report' style='width:1000px'>{widget.report_html.value}</div>"
        f"<div id='errors' style='width:1000px'>{widget.errors.value}</div></body></html>"
    )
    REPORTS.mkdir(exist_ok=True)
    with (
        chromium() as browser,
        offline_page(browser, viewport=VIEWPORT) as (page, network, errors),
    ):
        page.set_content(page_html)
        report = page.locator("#report")
        outcome = report.locator("b").first.inner_text()
        assert re.fullmatch(
            r"import refused: \d+ errors in 3 kinds on \d+ of 401 rows; nothing stored", outcome
        )
        assert report.locator("tbody tr").count() == 3  # one row per kind, not one per value
        assert "(+21 more values)" in report.inner_text()
        height = report.bounding_box()["height"]
        page.screenshot(path=str(REPORTS / "widgets-import-report.png"), clip=report.bounding_box())
        assert height <= 600, f"the report is {height:.0f} px tall"
        report.locator("summary").click()  # "show all": every row, in a box that scrolls by itself
        folded = report.locator(".abbench-report-all")
        _wait(lambda: folded.is_visible(), 30, "the folded list")
        assert folded.bounding_box()["height"] <= 330
        assert folded.evaluate("e => e.scrollHeight > e.clientHeight")  # more than it shows: it scrolls
        assert report.bounding_box()["height"] <= height + 340
        page.screenshot(path=str(REPORTS / "widgets-import-report-all.png"), clip=report.bounding_box())
        refusal = page.locator("#errors")
        assert outcome in refusal.inner_text() and refusal.bounding_box()["height"] < 120
        assert network.blocked == [] and errors == []
    print(f"import report: {height:.0f} px; outcome: {outcome}")


def _verdict(page_html: str) -> str:
    """The report's verdict banner as people read it: ``v2 vs v1: PASS WITH WARNINGS``."""
    banner = re.search(r'<div class="abb-verdict">(.*?)</div>', page_html, re.S)
    assert banner, "the report has no verdict banner"
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", banner.group(1)))).strip()


def test_a_gate_file_chosen_in_03_results_gives_the_reports_verdict(lab, tmp_path):
    """03_results: choose a gate file in the Decision tab; the widget decides as `evaluate_gate` with that
    file does, says which rules decided, and Render report writes a page with the same verdict. The widget
    and that page on a 390 px phone are screenshot into reports/."""
    store_dir = build_priced_demo(tmp_path / "store", cases=150)
    gate_file = shutil.copy(DEMO / "gate.yaml", lab.root / "release-gate.yaml")  # found next to the notebook
    out_dir = tmp_path / "out"
    parameterized(
        REPO / "notebooks" / "03_results.ipynb",
        lab.root / "03_results.ipynb",
        store_path=str(store_dir),
        experiment="demo-routing",
        reports_dir=str(out_dir),
    )
    with open_store(store_dir) as store:
        expected = evaluate_gate("demo-routing", gate_file, store=store)
    assert expected.outcome == "pass with warnings"  # the cost warning, as on the full demo
    REPORTS.mkdir(exist_ok=True)
    with chromium() as browser:
        with lab_page(browser, lab, REPORTS / "widgets-results-failure.png") as page:
            lab.open(page, "03_results.ipynb")
            texts = page.locator(".widget-html-content")
            # Before: the experiment's own (it has none, so abbench's defaults) — four rules, not seven.
            _wait(
                lambda: any("rules: abbench's defaults" in t for t in texts.all_inner_texts()),
                60,
                "the rules",
            )
            page.locator(".widget-tab .lm-TabBar-tab").filter(has_text="Decision").click()
            picker = page.locator(".widget-dropdown").filter(has_text="Gate").locator("select")
            picker.select_option(label="file: release-gate.yaml")
            headline = f"{expected.pair_text}: gate {expected.outcome.upper()} — {expected.coverage.text}"
            # The headline and the line naming its rules are one element: both change together.
            _wait(
                lambda: any(
                    t.startswith(headline) and "rules: release-gate.yaml" in t
                    for t in texts.all_inner_texts()
                ),
                60,
                "the headline under the chosen gate",
            )
            decision = _wait(
                lambda: next((t for t in texts.all_inner_texts() if "Rules (release-gate.yaml)" in t), None),
                60,
                "the decision's rules from the chosen gate",
            )
            words = " ".join(decision.split())
            for rule in expected.rules:
                assert " ".join(rule.rule.name.split()) in words, (rule.rule.name, words[-1500:])
            page.locator(".abbench-results").first.evaluate("e => e.scrollIntoView()")
            page.locator(".jp-OutputArea-output:has(.abbench-results)").first.screenshot(
                path=str(REPORTS / "widgets-results.png")
            )
            _button(page, "Render report").click()
            _wait(
                lambda: any("written in" in t for t in page.locator(".abbench-ok").all_inner_texts()),
                180,
                "the report to be written",
            )
            assert page.locator(".abbench-error").count() == 0
        report = out_dir / "demo-routing.html"
        page_html = report.read_text(encoding="utf-8")
        assert _verdict(page_html) == f"{expected.pair_text}: {expected.outcome.upper()}"
        assert "release-gate.yaml" in page_html  # the page names the rules it applied, as the widget did
        # The same page on a phone: it never scrolls sideways, and it is screenshot to be looked at.
        with offline_page(browser, viewport={"width": 390, "height": 844}, is_mobile=True) as (
            phone,
            network,
            errors,
        ):
            phone.goto(report.as_uri(), wait_until="load")
            phone.wait_for_function(
                "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.querySelector('svg.main-svg'))",
                timeout=HANG_MS,
            )
            widths = phone.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            assert widths[0] <= widths[1], widths
            phone.screenshot(path=str(REPORTS / "report-demo-phone.png"), full_page=True)
            assert network.blocked == [] and errors == [], (network.blocked, errors)


def _state(page) -> dict:
    """The run widget as the page shows it, read at once: chooser line, status line, enabled buttons."""
    return page.evaluate(
        """() => {
        const text = e => e.innerText.replace(/\u00a0/g, ' ');  // ipywidgets writes no-break spaces
        const sel = [...document.querySelectorAll('.widget-dropdown select')]
            .find(s => [...s.options].some(o => text(o).includes('new experiment')));
        const status = document.querySelector('.abbench-status');
        const enabled = name => {
            const b = [...document.querySelectorAll('button.widget-button')]
                .find(b => b.innerText.trim() === name);
            return !!b && !b.disabled;
        };
        const grey = document.querySelector('.abbench-bar .abbench-seg-cancelled');
        const badge = status && status.querySelector('.abbench-phase');
        return {
            label: sel && sel.selectedIndex >= 0 ? text(sel.options[sel.selectedIndex]) : '',
            status: status ? text(status) : '',
            badge: badge ? getComputedStyle(badge).backgroundColor : '',
            cancelled: grey ? getComputedStyle(grey).backgroundColor : '',
            pause: enabled('Pause'), resume: enabled('Resume'), cancel: enabled('Cancel'),
        };
    }"""
    )


def _showing(page, phase: str) -> dict | None:
    """The state when the whole widget shows `phase` (the chooser's line and the status line agree)."""
    s = _state(page)
    agree = f" · {phase} · " in s["label"] and f": {phase} · " in s["status"]
    return s if agree else None


GATED = {"agent": "python", "function": "tests.blocking:gated"}


def _start_elsewhere(store_dir: Path, gate_dir: Path):
    """An experiment of 40 runs started by `abbench run` in a child process, its agents held at a gate
    (three answer, then two wait in flight): ``(process, gate)``."""

    from abbench.runner import create_experiment
    from tests.blocking import Gate

    gate = Gate(gate_dir, allowed=3)
    with open_store(store_dir) as store:
        exp = create_experiment(
            {
                "name": "from-the-terminal",
                "dataset": "demo",
                "concurrency": 2,
                "cases": {"limit": 40},
                "arms": {"a": {**GATED, **gate.params}},
            },
            store=store,
        )
    proc = start_run(store_dir, exp.id)
    gate.wait_arrived(5)
    return proc, gate


def _elsewhere_flow(page, lab, start, seen: dict) -> None:
    """02_run lists the terminal's run once it starts (no Reload), follows it, pauses, resumes and
    cancels it (after confirming): each state shows in the list and the panel at once, and the
    cancelled experiment reads grey and incomplete; *Run the cancelled runs* runs them here."""
    lab.open(page, "02_run.ipynb")
    chooser = page.locator(".widget-dropdown select").filter(has_text="new experiment")
    assert not any("from-the-terminal" in t for t in chooser.locator("option").all_inner_texts())
    gate = start()  # `abbench run` in a terminal, after the notebook was opened
    options = _wait(
        lambda: (
            (t := chooser.locator("option").all_inner_texts())
            and any("from-the-terminal" in o for o in t)
            and t
        ),
        60,
        "the terminal's experiment in the list, without Reload",
    )
    # Chosen by its place, not its label: the label carries the run's status, which the terminal's run moves
    # on (created → running) between the read above and the choice, and a label read before never matches.
    chooser.select_option(index=next(i for i, t in enumerate(options) if "from-the-terminal" in t))
    # Three runs answered before the two held ones arrived, but the child may not have written the third yet:
    # wait for the widget to show what the store will hold, then check all of it. The status line and the
    # buttons arrive in separate widget messages: a page read between them sees the new line, old buttons.
    s = _wait(
        lambda: (r := _showing(page, "running")) and "3/40 done" in r["status"] and r["pause"] and r,
        60,
        "the run from the terminal",
    )
    assert s["pause"] and not s["resume"] and "3/40 done" in s["status"], s
    _button(page, "Pause").click()
    _wait(lambda: _showing(page, "paused"), 60, "the terminal's run to pause")
    gate.allow(5)  # the two in flight finish; none starts while paused
    s = _wait(
        lambda: (t := _showing(page, "paused")) and "5/40 done" in t["status"] and t,
        60,
        "the runs in flight to finish",
    )
    assert s["resume"] and not s["pause"] and s["cancel"], s
    seen["elsewhere paused"] = s["status"]
    page.screenshot(path=str(REPORTS / "widgets-run-elsewhere-paused.png"))
    assert gate.arrived() == 5
    _button(page, "Resume").click()
    _wait(lambda: _showing(page, "running"), 60, "the terminal's run to resume")
    gate.allow(7)
    _wait(lambda: (t := _showing(page, "running")) and "7/40 done" in t["status"], 60, "two more answers")
    _button(page, "Cancel").click()
    # it asks first, naming what stops; nothing is cancelled until confirmed
    question = page.locator(".widget-html-content").filter(has_text="Cancel #")
    _wait(lambda: "2 running and 31 pending runs stop" in question.inner_text(), 30, "the question")
    page.screenshot(path=str(REPORTS / "widgets-run-cancel-asked.png"))
    assert _showing(page, "running")
    _button(page, "Cancel 33 runs").click()
    # The bar and the status line arrive in separate widget messages: wait for the bar's grey segment too.
    s = _wait(lambda: (t := _showing(page, "cancelled")) and t["cancelled"] and t, 60, "the cancel")
    seen["elsewhere cancelled"] = s["status"]
    page.screenshot(path=str(REPORTS / "widgets-run-cancelled.png"))
    assert "cancelled · incomplete: 33 of 40 runs never ran · 7/40 done (18 %)" in s["status"], s
    assert s["cancelled"] == "rgb(157, 157, 157)" and s["badge"] == "rgb(236, 236, 236)", s
    assert not (s["pause"] or s["resume"] or s["cancel"]), s
    # undone from the widget: the 33 run here (the gate let go), as `abbench retry --cancelled` would
    gate.open()
    _button(page, "Run the 33 cancelled runs").click()
    s = _wait(
        lambda: (t := _showing(page, "finished")) and "40/40 done" in t["status"] and t, 120, "the re-run"
    )
    seen["elsewhere re-run"] = s["status"]
