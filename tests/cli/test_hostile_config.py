"""Hostile files a person hands abbench besides data (issue 36, items 3 and 16): an alias bomb in a
skill's front matter, a mapping profile, a definition or a gate file is refused before it is walked; a
file that is not UTF-8 is exit 2 with the byte, its line and "save it as UTF-8" — never a traceback."""

from __future__ import annotations

import pytest

from abbench.errors import ExperimentError, ImportFailed, MappingError, UsageError
from abbench.store import open_store
from tests.test_yaml import alias_bomb

CSV = "id,query,label\n1,打开空调,fast\n2,导航回家,slow\n"
# "中文" in GBK: what an editor in a Chinese locale saves. 0xd6 is the first byte of 中.
GBK_MAPPING = "name: 中文\nfields: {case_id: id, input: query, expected: label}\n".encode("gbk")


def _counts(store_dir):
    with open_store(store_dir) as s:
        return tuple(
            s.query_one(f"SELECT COUNT(*) FROM {t}")[0] for t in ("datasets", "mapping_profiles", "cases")
        )


def test_a_skill_front_matter_alias_bomb_is_refused_with_its_line_and_the_skill_still_reads(tmp_path):
    from abbench.snapshot import prepare_snapshot

    skill = tmp_path / "skill"
    skill.mkdir()
    # on the code before: the JSON round-trip of the front matter expanded it (531,441 "lol"s here; a
    # level more for each 9x, 16 GB at nine levels)
    (skill / "SKILL.md").write_text(
        "---\nname: bomb\n" + alias_bomb(7) + "---\n# Body\ntext\n", encoding="utf-8"
    )
    prepared = prepare_snapshot(skill)
    assert prepared.info.front_matter == {}
    warning = next(w for w in prepared.warnings if "front matter is refused" in w)
    assert "line 10, column 14" in warning and "*l6" in warning and "an alias bomb" in warning


def test_a_mapping_profile_alias_bomb_is_refused_by_the_cli_before_anything_is_stored(cli, tmp_path):
    data = tmp_path / "cases.csv"
    data.write_text(CSV, encoding="utf-8")
    assert cli("import", data, "--name", "seed").exit_code == 0
    before = _counts(cli.store_dir)
    mapping = tmp_path / "m.yaml"
    mapping.write_text(
        alias_bomb(7, key="label_map") + "fields: {case_id: id, input: query, expected: label}\n",
        encoding="utf-8",
    )
    result = cli("import", data, "--mapping", mapping)
    assert result.exit_code == 2, result.output
    assert "line 8, column 12" in result.output and "an alias bomb" in result.output
    assert "Traceback" not in result.output
    assert _counts(cli.store_dir) == before


def test_a_definition_alias_bomb_is_refused_by_the_cli(cli, tmp_path):
    definition = tmp_path / "x.yaml"
    definition.write_text(
        "name: x\ndataset: nothing\narms: {a: {agent: builtin}}\n" + alias_bomb(7, key="description"),
        encoding="utf-8",
    )
    result = cli("create", definition)
    assert result.exit_code == 2, result.output
    assert "line 11, column 14" in result.output and "an alias bomb" in result.output


def test_a_gate_file_alias_bomb_is_refused(tmp_path):
    from abbench.gate import read_gate_file

    gate = tmp_path / "gate.yaml"
    gate.write_text(alias_bomb(7, key="bomb") + "rules: [{metric: accuracy, op: '>=', value: 0.5}]\n")
    with pytest.raises(UsageError, match=r"gate.yaml, line 8, column 7: .*an alias bomb"):
        read_gate_file(gate)


# -- not UTF-8 ------------------------------------------------------------------------------------


def test_a_mapping_that_is_not_utf8_is_exit_2_with_the_byte_its_line_and_what_to_do(cli, tmp_path):
    data = tmp_path / "cases.csv"
    data.write_text(CSV, encoding="utf-8")
    (tmp_path / "m.yaml").write_bytes(GBK_MAPPING)
    result = cli("import", data, "--mapping", tmp_path / "m.yaml")
    assert result.exit_code == 2, result.output
    assert "m.yaml is not UTF-8 (byte 0xd6 at line 1, column 7): save it as UTF-8." in result.output
    assert "GBK/GB18030" in result.output
    assert "Traceback" not in result.output and "UnicodeDecodeError" not in result.output


def test_a_definition_that_is_not_utf8_is_exit_2(cli, tmp_path):
    definition = tmp_path / "x.yaml"
    definition.write_bytes("name: x\ndescription: 中文\n".encode("gbk"))
    result = cli("create", definition)
    assert result.exit_code == 2, result.output
    assert "x.yaml is not UTF-8 (byte 0xd6 at line 2, column 14): save it as UTF-8" in result.output


@pytest.mark.parametrize(
    ("name", "read", "error"),
    [
        ("gate.yaml", "abbench.gate:read_gate_file", UsageError),
        ("m.yaml", "abbench.dataset:MappingProfile.from_file", MappingError),
        ("x.yaml", "abbench.runner:load_spec", ExperimentError),
        ("table.json", "abbench.dataset._readers:load_json_file", ImportFailed),
        ("prices.yaml", "abbench.llm:load_prices", UsageError),
    ],
)
def test_every_file_a_person_writes_is_refused_when_not_utf8(tmp_path, name, read, error):
    import importlib

    module, _, attr = read.partition(":")
    fn = importlib.import_module(module)
    for part in attr.split("."):
        fn = getattr(fn, part)
    path = tmp_path / name
    path.write_bytes("# 中文\nrules: []\n".encode("gbk"))
    with pytest.raises(
        error, match=rf"{name} is not UTF-8 \(byte 0xd6 at line 1, column 3\): save it as UTF-8"
    ):
        fn(path)


def test_a_utf16_file_is_named_as_such(tmp_path):
    from abbench.gate import read_gate_file

    path = tmp_path / "gate.yaml"
    path.write_bytes("rules: []\n".encode("utf-16"))
    with pytest.raises(UsageError, match=r"is UTF-16 .* not UTF-8: save it as UTF-8"):
        read_gate_file(path)


def test_a_file_with_a_utf8_byte_order_mark_reads(tmp_path):
    from abbench.gate import read_gate_file

    path = tmp_path / "gate.yaml"
    path.write_text("rules: [{metric: accuracy, op: '>=', value: 0.5}]\n", encoding="utf-8-sig")
    assert read_gate_file(path)[0] == [{"metric": "accuracy", "op": ">=", "value": 0.5}]
