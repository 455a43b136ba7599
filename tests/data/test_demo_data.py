"""The demo dataset: realistic, the same cases in CSV and XLSX, byte-stable, documented."""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml
from openpyxl import load_workbook

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"
CSV_HEADER = ["case_id", "query", "route", "domain", "history", "vehicle_state", "request_id"]
XLSX_HEADER = ["用例ID", "用户query", "人工标签", "垂域", "历史对话", "车辆状态", "请求ID"]


def read_csv() -> list[dict[str, str]]:
    with open(DEMO / "cases.csv", encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f))


def read_xlsx() -> tuple[list, list[list]]:
    wb = load_workbook(DEMO / "cases.xlsx", read_only=True)
    ws = wb["评测集"]
    rows = [list(r) for r in ws.iter_rows(values_only=True)]
    wb.close()
    return rows[0], rows[1:]


@pytest.fixture(scope="module")
def generator():
    """data/demo/make_demo_data.py, imported as a module."""
    spec = importlib.util.spec_from_file_location("make_demo_data", DEMO / "make_demo_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_csv_is_utf8_with_bom_and_has_the_documented_columns():
    raw = (DEMO / "cases.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    with open(DEMO / "cases.csv", encoding="utf-8-sig", newline="") as f:
        assert next(csv.reader(f)) == CSV_HEADER


def test_cases_are_many_varied_and_roughly_balanced():
    rows = read_csv()
    assert len(rows) >= 300
    assert len({r["case_id"] for r in rows}) == len(rows)
    assert len({r["query"] for r in rows}) == len(rows)
    labels = Counter(r["route"].strip().lower() for r in rows)
    assert set(labels) == {"fast", "slow"}
    assert 0.45 <= labels["fast"] / len(rows) <= 0.65
    by_domain: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        by_domain[r["domain"]][r["route"].strip().lower()] += 1
    assert {"地图导航", "车控", "媒体", "电话", "天气", "闲聊"} <= set(by_domain)
    shares = {d: c["fast"] / sum(c.values()) for d, c in by_domain.items()}
    assert all(0 < s < 1 for s in shares.values())  # every domain has both routes
    assert max(shares.values()) - min(shares.values()) >= 0.25  # domains differ


def test_label_spellings_vary_a_little_as_in_real_sheets():
    spellings = Counter(r["route"] for r in read_csv())
    variants = {s: n for s, n in spellings.items() if s not in ("fast", "slow")}
    assert len(variants) >= 3 and 5 <= sum(variants.values()) <= 20
    assert all(s.strip().lower() in ("fast", "slow") for s in variants)


def test_history_context_and_request_ids_are_well_formed():
    rows = read_csv()
    with_history = [r for r in rows if r["history"]]
    with_state = [r for r in rows if r["vehicle_state"]]
    assert len(with_history) >= 10 and len(with_state) >= 30
    for r in with_history:
        turns = json.loads(r["history"])
        assert isinstance(turns, list) and turns
        assert all(set(t) == {"role", "content"} and t["role"] in ("user", "assistant") for t in turns)
    for r in with_state:
        state = json.loads(r["vehicle_state"])
        assert isinstance(state, dict) and "speed_kmh" in state
    ids = [r["request_id"] for r in rows if r["request_id"]]
    assert len(ids) >= 0.8 * len(rows) and len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"2024\d{4}-[0-9a-f]{4}-[0-9a-f]{12}", i) for i in ids)


def test_queries_read_like_real_speech():
    queries = [r["query"] for r in read_csv()]
    assert sum(bool(re.search(r"[A-Za-z]{2,}", q)) for q in queries) >= 10  # brand names, mixed language
    assert sum(bool(re.search(r"\d", q)) for q in queries) >= 15  # numbers
    assert sum(len(q) >= 20 for q in queries) >= 40 and sum(len(q) <= 4 for q in queries) >= 15
    for typo in ("导行", "空掉", "天汽", "有撒"):
        assert any(typo in q for q in queries), typo


def test_xlsx_holds_the_same_cases_under_chinese_headers():
    header_rows, rows = read_xlsx()
    assert header_rows[0].startswith("车载助手快慢系统路由评测集")  # a title row above the header
    assert rows[0] == XLSX_HEADER
    zh = {"快": "fast", "慢": "slow"}
    from_xlsx = {
        r[0]: (r[1], zh[r[2].strip()], r[3], r[4] or "", r[5] or "", r[6] or "")
        for r in rows[1:]
        if r[0] is not None
    }
    from_csv = {
        r["case_id"]: (
            r["query"],
            r["route"].strip().lower(),
            r["domain"],
            r["history"],
            r["vehicle_state"],
            r["request_id"],
        )
        for r in read_csv()
    }
    assert from_xlsx == from_csv
    assert any(r[2] != r[2].strip() for r in rows[1:])  # a few labels carry a stray space
    wb = load_workbook(DEMO / "cases.xlsx", read_only=True)
    assert wb.sheetnames == ["评测集", "标注说明"]
    wb.close()


def zip_members(path: Path) -> list[tuple[str, tuple, bytes]]:
    with zipfile.ZipFile(path) as z:
        return [(i.filename, i.date_time, z.read(i.filename)) for i in z.infolist()]


def test_the_generator_is_byte_stable(generator, tmp_path):
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        rows = generator.build_rows()
        generator.write_csv(rows, tmp_path / run / "cases.csv")
        generator.write_xlsx(rows, tmp_path / run / "cases.xlsx")
    for name in ("cases.csv", "cases.xlsx"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert (tmp_path / "a" / "cases.csv").read_bytes() == (DEMO / "cases.csv").read_bytes()
    # the committed XLSX holds exactly what the generator writes (compressed bytes may differ by zlib build)
    assert zip_members(tmp_path / "a" / "cases.xlsx") == zip_members(DEMO / "cases.xlsx")


def test_readme_lists_every_deliberately_ambiguous_or_wrong_label(generator):
    readme = (DEMO / "README.md").read_text(encoding="utf-8")
    noted = [r for r in generator.build_rows() if r["note"]]
    assert 5 <= len(noted) <= 15
    for r in noted:
        assert r["case_id"] in readme and r["query"] in readme, r["case_id"]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_both_skill_versions_have_front_matter_and_per_domain_knowledge(version):
    folder = DEMO / "skills" / f"fast-slow-routing-{version}"
    text = (folder / "SKILL.md").read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---")[1])
    assert front["name"] == "fast-slow-routing" and front["description"]
    assert str(front["version"]).startswith(version[1])
    assert front["labels"] == {"fast": ["快系统"], "slow": ["慢系统"]}
    assert "版本说明" in text and "## 输出格式" in text
    knowledge = sorted(p.stem for p in (folder / "knowledge").glob("*.md"))
    assert len(knowledge) >= 7
    for stem in knowledge:
        body = (folder / "knowledge" / f"{stem}.md").read_text(encoding="utf-8")
        assert (
            body.startswith(f"# {stem}\n") and "## 快系统能做" in body and "## 快系统不能做（→ slow）" in body
        )


def test_v2_covers_every_domain_of_the_dataset_and_v1_does_not():
    domains = {r["domain"] for r in read_csv()}
    v1 = {p.stem for p in (DEMO / "skills" / "fast-slow-routing-v1" / "knowledge").glob("*.md")}
    v2 = {p.stem for p in (DEMO / "skills" / "fast-slow-routing-v2" / "knowledge").glob("*.md")}
    assert v2 == domains and v1 < v2
