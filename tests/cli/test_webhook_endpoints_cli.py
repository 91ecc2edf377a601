"""``mandatum webhook add|endpoints|remove`` and ``--endpoint`` (issue 34): an organization's
endpoints listed without a secret, one added with its own secrets printed once, another changed by
its id, one removed; an endpoint id is checked where it enters, and another organization's is not
found. Every change is recorded with the operator running the command."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit
from store import webhooks as store
from tests.conftest import MASTER_KEY, new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.cli import operator_shell


@pytest.fixture
def webhook(settings: Settings) -> Any:
    return operator_shell(settings, MASTER_KEY, "desk-ola", "webhook")


def test_endpoints_are_added_changed_listed_and_removed(
    org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings, webhook: Any
) -> None:
    org_id = org.organization_id
    empty = webhook("endpoints", "--org", org_id)
    assert empty.returncode == 0 and "has no webhook endpoint" in empty.stdout
    first = webhook("set", "--org", org_id, "--url", "https://hooks.example.test/a?token=first-tok")
    assert first.returncode == 0, first.stderr
    added = webhook("add", "--org", org_id, "--url", "https://other.example.test/b", "--description", "audit")
    assert added.returncode == 0, added.stderr
    assert (
        "signature secret" in added.stdout and "encryption secret" in added.stdout and "salt" in added.stdout
    )
    listed = json.loads(webhook("endpoints", "--org", org_id, "--json").stdout)
    assert [(e["url"], e["description"], e["enabled"]) for e in listed] == [
        ("https://hooks.example.test/a", None, True),  # its query (a token) is not shown
        ("https://other.example.test/b", "audit", True),
    ]
    oldest, second = (e["id"] for e in listed)
    assert f"endpoint {second} of organization {org_id} added" in added.stdout
    kept = store.get_config(engine, cipher, org_id, second)
    assert kept is not None and kept.signature_secret in added.stdout  # shown this once
    assert kept.signature_secret not in webhook("endpoints", "--org", org_id, "--json").stdout

    # --endpoint picks one; without it the oldest (the organization's one webhook) is meant
    off = webhook("receive", "--org", org_id, "--endpoint", second, "--off")
    assert off.returncode == 0, off.stderr
    shown = json.loads(webhook("show", "--org", org_id, "--json").stdout)
    assert shown["endpoint"] == oldest
    rows = {e.id: e for e in store.endpoint_rows(engine, org_id)}
    assert (rows[oldest].enabled, rows[second].enabled) == (True, False)

    removed = webhook("remove", "--org", org_id, "--endpoint", second)
    assert removed.returncode == 0, removed.stderr
    assert [e.id for e in store.endpoint_rows(engine, org_id)] == [oldest]
    records = [(r.actor, r.data) for r in chain(engine, org_id) if r.type == audit.WEBHOOK_CONFIGURED]
    assert [data.get("endpointId") for _, data in records] == [oldest, second, second, second]
    assert {actor for actor, _ in records} == {"operator:desk-ola"}
    assert records[1][1]["added"] is True and records[3][1]["removed"] is True
    assert records[2][1]["previous"] == {"enabled": True, "eventTypes": None}
    assert all("first-tok" not in json.dumps(data) for _, data in records)


def test_an_endpoint_id_is_checked_and_another_organizations_is_not_found(
    org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings, webhook: Any
) -> None:
    other = new_org(engine, cipher, settings)
    made = webhook("set", "--org", other.organization_id, "--url", "https://hooks.example.test/other")
    assert made.returncode == 0, made.stderr
    [theirs] = store.endpoint_rows(engine, other.organization_id)
    for bad in ("../x", "ABCDEF0123456789abcdef01", "1" * 25, "x\u202e"):
        said = webhook("remove", "--org", org.organization_id, "--endpoint", bad)
        assert said.returncode != 0 and "24 lowercase hexadecimal" in said.stderr
    for command in (
        ("remove", "--org", org.organization_id, "--endpoint", theirs.id),
        ("receive", "--org", org.organization_id, "--endpoint", theirs.id, "--off"),
        ("set", "--org", org.organization_id, "--endpoint", theirs.id, "--url", "https://evil.example.test/"),
    ):
        said = webhook(*command)
        assert said.returncode == 1 and ("not found" in said.stderr or "no webhook" in said.stderr), (
            said.stderr
        )
    after = store.endpoint_rows(engine, other.organization_id)
    assert [(e.id, e.url, e.enabled) for e in after] == [
        (theirs.id, "https://hooks.example.test/other", True)
    ]


def test_a_description_and_the_number_of_endpoints_are_bounded(
    org: Credentials, engine: Engine, webhook: Any
) -> None:
    org_id = org.organization_id
    url = "https://hooks.example.test/in"
    for description, why in (
        ("x" * 201, "at most 200 characters"),
        ("audit\nINJECTED", "must be one line"),
        ("audit \u202egnp.exe", "must be one line"),
    ):
        said = webhook("add", "--org", org_id, "--url", url, "--description", description)
        assert said.returncode == 1 and why in said.stderr, said.stderr
    assert store.endpoint_rows(engine, org_id) == []  # nothing was added
    for n in range(store.ENDPOINTS_AT_MOST):
        made = webhook("add", "--org", org_id, "--url", f"{url}/{n}", "--description", "x" * 200)
        assert made.returncode == 0, made.stderr
    one_more = webhook("add", "--org", org_id, "--url", f"{url}/more")
    assert one_more.returncode == 1 and "at most 10 webhook endpoints" in one_more.stderr
    assert len(store.endpoint_rows(engine, org_id)) == store.ENDPOINTS_AT_MOST
