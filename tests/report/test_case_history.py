"""The report's regressed and disagreement tables show a case's earlier turns, folded above its input."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from abbench import report
from abbench.compare import compare_arms
from abbench.report._sections._cases import TURN_CHARS, TURNS_SHOWN, history_html
from abbench.review import case_detail, disagreements
from abbench.store import open_store
from tests.multiturn import build_multiturn_store, conversation


class _Histories(HTMLParser):
    """Each table cell holding a folded history: its summary, its turns (role, text), and the text after it."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[dict] = []
        self._at: list[str] = []

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if tag == "details" and "abb-history" in cls:
            self.found.append({"summary": "", "turns": [], "after": "", "open": "open" in dict(attrs)})
            self._at = ["details"]
        elif self._at and tag in ("summary", "div", "b"):
            self._at.append(tag + (" turn" if "abb-turn" in cls else ""))
            if "abb-turn" in cls:
                self.found[-1]["turns"].append(["", ""])

    def handle_endtag(self, tag):
        if self._at and tag == "details":
            self._at = ["after"]
        elif self._at and self._at[-1] != "after" and tag != "span":
            self._at.pop()
        elif tag == "td":
            self._at = []

    def handle_data(self, data):
        if not self._at:
            return
        where, last = self._at[-1], self.found[-1]
        if where == "summary":
            last["summary"] += data
        elif where == "after":
            last["after"] += data
        elif where == "b":
            last["turns"][-1][0] += data
        elif last["turns"]:
            last["turns"][-1][1] += data


def histories(html: str) -> list[dict]:
    parser = _Histories()
    parser.feed(html)
    for h in parser.found:
        h["turns"] = [(role.rstrip(":"), text.strip()) for role, text in h["turns"]]
    return parser.found


@pytest.fixture(scope="module")
def multiturn(tmp_path_factory):
    """`tests.multiturn`'s store, open (read, never changed)."""
    with open_store(build_multiturn_store(tmp_path_factory.mktemp("multiturn") / "store")) as store:
        yield store


def test_regressed_cases_fold_their_history_above_the_input(multiturn):
    c = compare_arms("routing", "a", "b", store=multiturn)
    assert [r.case_id for r in c.regressed] == ["FS-0015"]
    details = {r.case_id: case_detail("routing", r.case_id, store=multiturn) for r in c.regressed}
    html = "".join(report.cases_section(c.regressed, details, "a", "b", total=1, empty="none"))
    (found,) = histories(html)
    assert found["summary"] == "after 2 earlier turns" and not found["open"]  # folded: the table stays short
    assert found["turns"] == [("user", "打电话给李经理"), ("assistant", "通讯录中没有找到李经理")]
    assert found["after"].startswith("那就打他公司前台")


def test_disagreements_fold_each_history_and_a_single_turn_has_none(multiturn):
    listed = disagreements("routing", "gold", store=multiturn, arms=["b"])
    html = "".join(report.disagreements_section(listed, "b", empty="none"))
    assert [d.case_id for d in listed] == ["FS-0015", "FS-0017", "FS-0057"]
    assert [h["after"][:4] for h in histories(html)] == ["那就打他", "导航去第", "行，就按"]
    assert [h["turns"][0][0] for h in histories(html)] == ["user"] * 3
    single = case_detail("routing", "FS-0002", store=multiturn).case
    assert single.turns == () and history_html(single) == ""


def test_a_long_history_shows_its_latest_turns_and_counts_the_rest(multiturn):
    long = next(
        c
        for c in multiturn.datasets.load_cases(multiturn.datasets.get("long").id)
        if c.input.startswith("so,")
    )
    case = case_detail("long", long.case_id, store=multiturn).case
    html = history_html(case)
    (found,) = histories(html)
    assert found["summary"] == "after 12 earlier turns" and TURNS_SHOWN < 12
    assert len(found["turns"]) == TURNS_SHOWN and f"… {12 - TURNS_SHOWN} earlier turns not shown" in html
    assert found["turns"][0][1].startswith(f"turn {12 - TURNS_SHOWN + 1}:")
    assert found["turns"][-1] == ("assistant", conversation()[11]["content"].strip())


def test_a_long_turn_is_cut_saying_how_much(multiturn):
    from abbench.review import CaseView

    text = "这是一段很长的对话。" * 300  # 3,000 characters
    case = CaseView(
        "x", "下一句", None, None, [{"role": "user", "content": text}], None, None, None, None, None
    )
    (found,) = histories(history_html(case))
    role, shown = found["turns"][0]
    kept = shown.split("…")[0]
    assert role == "user" and text.startswith(kept) and len(kept) < TURN_CHARS
    assert re.search(rf"\(\+{len(text) - len(kept):,} characters\)$", shown)


@pytest.mark.slow
def test_the_rendered_report_shows_the_history_in_its_case_tables(multiturn, tmp_path):
    from abbench.report import render_report
    from tests.report.conftest import parse_page

    done = render_report("routing", store=multiturn, out=tmp_path / "report.html")
    page = parse_page(done.html_path.read_text(encoding="utf-8"))
    found = histories(page.html)
    # the regressed table (FS-0015), then the disagreements not listed above it (FS-0017, FS-0057)
    assert [h["after"][:4] for h in found] == ["那就打他", "导航去第", "行，就按"]
    assert all(h["summary"] == "after 2 earlier turns" and len(h["turns"]) == 2 for h in found)


def test_a_turn_is_text_never_markup():
    from abbench.review import CaseView

    hostile = '<img src=x onerror="alert(1)"></details><script>alert(2)</script>'
    case = CaseView(
        "x", "下一句", None, None, [{"role": "user", "content": hostile}], None, None, None, None, None
    )
    page = history_html(case)
    assert "<img" not in page and "<script" not in page and page.count("</details>") == 1
    (found,) = histories(page)
    assert found["turns"] == [("user", hostile)]
