"""What the server tests upload to ``/datasets``: the demo's cases.csv with its mapping profile."""

from __future__ import annotations

import json

import httpx
import yaml

from tests.conftest import DEMO

DEMO_MAPPING = yaml.safe_load((DEMO / "mapping-csv.yaml").read_text(encoding="utf-8"))
"""The demo's mapping profile for cases.csv, as a request sends it (json-dumped)."""


def demo_csv() -> dict:
    """The demo's cases.csv as the ``files`` of an upload to ``/datasets``."""
    return {"file": ("cases.csv", (DEMO / "cases.csv").read_bytes())}


def upload_demo(client: httpx.Client, name: str) -> str:
    """Upload the demo's cases with their mapping as dataset `name` through `client`; its fingerprint."""
    upload = client.post(
        "/datasets", files=demo_csv(), data={"name": name, "mapping": json.dumps(DEMO_MAPPING)}
    )
    assert upload.status_code == 201, upload.text
    return upload.json()["fingerprint"]
