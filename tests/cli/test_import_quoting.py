"""abbench import --quoting: the note that says quotes were read as text, the read line, the override."""

from __future__ import annotations

import json

NOTE = 'line 284: a quote closes inside its cell ("Wen u miss someone'


def test_import_says_quotes_are_read_as_text_and_why(cli, realdata):
    sms = realdata / "sms_spam" / "SMSSpamCollection"
    suggest = cli("import", sms, "--suggest")
    assert suggest.exit_code == 0 and f"note: {NOTE}" in suggest.output
    preview = cli("import", sms, "--preview", "2")
    assert preview.exit_code == 0 and f"· {NOTE}" in preview.output
    result = cli("import", sms, "--name", "sms")
    assert result.exit_code == 0, result.output
    assert "(5,574 cases from SMSSpamCollection)" in result.output
    assert (
        "read        csv, utf-8 (detected), delimiter '\\t', quotes as text (quoting none)" in result.output
    )
    assert f"· {NOTE}" in result.output
    shown = cli("datasets", "sms")
    assert "quotes as text (quoting none)" in shown.output


def test_quoting_given_on_the_command_line(cli, tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('q,label\n"He said ""hi""",a\nplain,b\n', encoding="utf-8")
    as_text = cli("import", path, "--quoting", "none", "--preview", "1", "--json")
    data = json.loads(as_text.output)
    assert data["read_options"]["quoting"] == "none" and data["cases"][0]["input"] == '"He said ""hi"""'
    as_csv = cli("import", path, "--quoting", "csv", "--json")
    assert json.loads(as_csv.output)["read_options"]["quoting"] == "csv"
    bad = cli("import", path, "--quoting", "text")
    assert bad.exit_code == 2 and "'text' is not one of 'csv', 'none'" in bad.output
