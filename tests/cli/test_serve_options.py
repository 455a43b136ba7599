"""`abbench serve`'s options become the server's settings, each the field it names."""

from __future__ import annotations

import dataclasses

import abbench.server
from abbench.server import EndpointRule, ServerSettings


def test_every_option_reaches_its_setting(cli, monkeypatch):
    served: list[ServerSettings] = []
    monkeypatch.setattr(abbench.server, "serve", lambda settings, host, port: served.append(settings))
    monkeypatch.setattr("abbench.cli._serve._signals_to_uvicorn", lambda: None)  # the test's own signals
    given = {
        "--workers": 3, "--max-request-mb": 7, "--max-document-mb": 2, "--rate": 61, "--agent": "openai",
        "--key-env": "K=https://api.example.com/v1", "--endpoint": "http://127.0.0.1:*", "--per-owner": 5,
        "--runner-nice": 0, "--git-scheme": "file", "--git-timeout": 9.5, "--git-credentials": "github.com/o",
        "--request-workers": 4, "--request-cpu": 31.0, "--request-memory-mb": 512, "--request-timeout": 45.0,
        "--max-runs": 99, "--max-inflight": 2,
    }  # fmt: skip
    result = cli("serve", *[str(a) for pair in given.items() for a in pair], "--allow-judges")
    assert result.exit_code == 0, result.output
    (settings,) = served
    assert settings == ServerSettings(
        store=settings.store, workers=3, max_request_bytes=7 * 1024 * 1024, max_document_bytes=2 * 1024 * 1024,
        rate_per_minute=61, agents=frozenset({"openai", "external"}), allow_judges=True,
        endpoints=(EndpointRule.parse("http://127.0.0.1:*"), EndpointRule.parse("K=https://api.example.com/v1")),
        per_owner_running=5, runner_nice=0, git_schemes=frozenset({"file"}), git_timeout=9.5,
        git_credentials=("github.com/o",), request_workers=4, request_cpu_s=31.0, request_memory_mb=512,
        request_timeout_s=45.0, max_runs=99, max_inflight=2,
    )  # fmt: skip
    defaults = {
        f.name: f.default for f in dataclasses.fields(ServerSettings) if f.name not in ("store", "agents")
    }
    plain = []
    monkeypatch.setattr(abbench.server, "serve", lambda settings, host, port: plain.append(settings))
    assert cli("serve").exit_code == 0
    assert {k: getattr(plain[0], k) for k in defaults} == defaults  # the options' defaults are the settings'
