"""The server's import form takes ``quoting`` (csv or none), refuses another value, and keeps it with the
dataset so that a mapping previewed on the stored file reads it the same way."""

from __future__ import annotations

import json

import pytest

from abbench.client import ServerError

MAPPING = {"fields": {"input": "q", "expected": "label"}}
RFC = b'q,label\n"He said ""hi""",a\nplain,b\n'


def test_the_form_takes_quoting_and_the_stored_file_is_read_the_same_way(alice, tmp_path, realdata):
    sms = alice.import_dataset(
        realdata / "sms_spam" / "SMSSpamCollection", {"fields": {"input": "SMS", "expected": "Label"}}
    )
    assert sms.n_cases == 5574 and sms.read_options["quoting"] == "none"  # detected on the server
    path = tmp_path / "q.csv"
    path.write_bytes(RFC)
    info = alice.import_dataset(path, MAPPING, name="quotes-as-text", quoting="none")
    assert info.read_options["quoting"] == "none"
    peek = alice._call(
        "POST", f"/datasets/{info.fingerprint}/mapping", data={"mapping": json.dumps(MAPPING), "n": "1"}
    )
    assert peek["cases"][0]["input"] == '"He said ""hi"""'


def test_the_form_refuses_another_quoting(alice):
    with pytest.raises(ServerError) as refused:
        alice._call("POST", "/datasets", files={"file": ("q.csv", RFC)}, data={"quoting": "text"})
    assert refused.value.status == 422 and "quoting" in json.dumps(refused.value.problem)
