"""Hostile input through a real `abbench serve` (issue 36, items 1–3): a pattern that backtracks, an
alias bomb, a workbook bomb — each answered at once (a refusal, or the import), the server alive and
answering another caller, nothing stored by a refusal."""

from __future__ import annotations

import json
import threading

import httpx

from tests.test_regex import CATASTROPHIC, HOSTILE_TEXT
from tests.test_yaml import alias_bomb

# A bound only for the code before the fix, whose request never ended: the test then fails instead of
# hanging. It asserts nothing about speed.
NEVER = 300


def _other_caller_answers(server, key) -> None:
    r = httpx.get(f"{server.url}/api/datasets", headers={"Authorization": f"Bearer {key}"}, timeout=NEVER)
    assert r.status_code == 200


def _upload(server, key, name: str, data: bytes, **form):
    return httpx.post(
        f"{server.url}/api/datasets",
        headers={"Authorization": f"Bearer {key}"},
        files={"file": (name, data)},
        data=form,
        timeout=NEVER,
    )


def test_a_mapping_pattern_that_backtracks_does_not_hang_the_server(live):
    server, keys = live
    csv = f"id,query,label\n1,{HOSTILE_TEXT},fast\n2,aaa,slow\n".encode()

    def mapping(pattern: str) -> str:
        fields = {"case_id": "id", "input": {"column": "query", "match": pattern}, "expected": "label"}
        return json.dumps({"fields": fields})

    answered: dict[str, httpx.Response] = {}
    hostile = threading.Thread(
        target=lambda: answered.update(
            r=_upload(server, keys["alice"], "h.csv", csv, mapping=mapping(CATASTROPHIC))
        )
    )
    hostile.start()
    _other_caller_answers(server, keys["bob"])
    hostile.join()
    r = answered["r"]
    assert r.status_code == 422, r.text
    assert "finds nothing" in r.text and "line 2" in r.text
    refused = _upload(
        server,
        keys["alice"],
        "b.csv",
        csv,
        mapping=mapping(r"(a)\1"),
    )
    assert refused.status_code == 422 and "backreference" in refused.text, refused.text
    _other_caller_answers(server, keys["bob"])


def test_a_skill_with_an_alias_bomb_in_its_front_matter_is_answered_at_once(live):
    import io
    import zipfile

    server, keys = live
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("skill/SKILL.md", "---\nname: bomb\n" + alias_bomb(7) + "---\n# Body\n")
    answered: dict[str, httpx.Response] = {}
    post = lambda: answered.update(  # noqa: E731
        r=httpx.post(
            f"{server.url}/api/skill-snapshots",
            headers={"Authorization": f"Bearer {keys['alice']}"},
            files={"file": ("skill.zip", buf.getvalue())},
            timeout=NEVER,
        )
    )
    hostile = threading.Thread(target=post)
    hostile.start()
    _other_caller_answers(server, keys["bob"])
    hostile.join()
    r = answered["r"]
    assert r.status_code == 201, r.text
    assert any("front matter is refused" in w and "alias bomb" in w for w in r.json()["warnings"]), r.json()


def test_workbook_bombs_are_answered_and_the_server_keeps_serving(live, tmp_path):
    from tests.dataset.crafted import sheet_xml, write_book
    from tests.dataset.test_hostile_xlsx import XXE, far_cell_book

    server, keys = live
    far = far_cell_book(tmp_path / "far.xlsx").read_bytes()
    cells = {r: {"A": ("raw", f'<c r="A{r}" t="s"><v>0</v></c>')} for r in range(1, 2001)}
    bomb = write_book(tmp_path / "bomb.xlsx", sheet_xml(cells), shared=["x" * 10_000_000]).read_bytes()
    xxe = write_book(
        tmp_path / "xxe.xlsx",
        sheet_xml(
            {1: {"A": "query"}, 2: {"A": ("raw", '<c r="A2" t="inlineStr"><is><t>&xxe;</t></is></c>')}},
            prolog=XXE,
        ),
    ).read_bytes()
    answered: dict[str, httpx.Response] = {}

    def hostile() -> None:
        # before: the first aborted the server (SIGABRT: a 549 GB allocation), the second asked ~20 GB
        answered["far"] = _upload(server, keys["alice"], "far.xlsx", far, skip_invalid="true")
        answered["bomb"] = _upload(server, keys["alice"], "bomb.xlsx", bomb)
        answered["xxe"] = _upload(server, keys["alice"], "xxe.xlsx", xxe)

    caller = threading.Thread(target=hostile)
    caller.start()
    _other_caller_answers(server, keys["bob"])
    caller.join()
    assert answered["far"].status_code == 201, answered["far"].text
    assert answered["far"].json()["n_cases"] == 2
    assert answered["bomb"].status_code == 422 and "xl/sharedStrings.xml expands" in answered["bomb"].text
    assert answered["xxe"].status_code == 422 and "declares a DTD" in answered["xxe"].text
    assert server.proc.poll() is None
    _other_caller_answers(server, keys["bob"])
