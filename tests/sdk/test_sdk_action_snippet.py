"""The request example an action's dashboard page shows (``api/routes/dashboard/action_snippet.py``,
issue 34) works as shown: the shell command (curl, signed with openssl) and the Python example
with the public SDK's release 1.2.0, unchanged, each create a request pinning the action against
the live service, with the key and secret from the environment."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from typing import Any

import pytest

from api.routes.dashboard.action_snippet import CONTACT, snippets
from cli.devstack import EXAMPLE_ACTION_ID
from store import actions as action_store
from tests.support.live_stack import LiveStack
from tests.support.sdk import RELEASE_120, Sdk, new_org, only, read_request

pytestmark = only(RELEASE_120)


def _example(live: LiveStack, org_id: str) -> Any:
    view = action_store.get_action(live.engine, org_id, EXAMPLE_ACTION_ID)
    assert view is not None
    newest = view.versions[-1]
    spec = action_store.spec_of(newest)
    return snippets(live.url, EXAMPLE_ACTION_ID, view.action.name, spec.user_params), spec, newest


async def _pinned(live: LiveStack, creds: Any, request_id: str, params: dict[str, Any]) -> None:
    record = await read_request(live, creds, request_id)
    assert [s["contact"] for s in record["subjects"]] == [CONTACT]
    [credential] = record["credentials"]
    assert credential["action"]["id"] == EXAMPLE_ACTION_ID
    assert credential["action"]["userParams"] == params


async def test_the_python_example_creates_the_request(sdk: Sdk, live: LiveStack) -> None:
    creds = new_org(live, sdk.release)
    example, _, _ = _example(live, creds.organization_id)
    assert "MANDATUM_SECRET" in example.python and creds.secret not in example.python
    namespace: dict[str, Any] = {}
    env = {"MANDATUM_API_KEY": creds.api_key, "MANDATUM_SECRET": creds.secret}

    def run() -> None:
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            exec(compile(example.python, "<action example>", "exec"), namespace)  # noqa: S102 (the page's own text)
        finally:
            os.environ.clear()
            os.environ.update(saved)

    await asyncio.to_thread(run)
    await _pinned(
        live,
        creds,
        namespace["created"].id,
        example.body["credentials"][0]["action"]["userParams"],
    )


async def test_the_curl_example_creates_the_request(sdk: Sdk, live: LiveStack) -> None:
    missing = [tool for tool in ("bash", "curl", "openssl") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the shell example needs {', '.join(missing)} on the machine")
    creds = new_org(live, sdk.release)
    example, _, _ = _example(live, creds.organization_id)
    env = {**os.environ, "MANDATUM_API_KEY": creds.api_key, "MANDATUM_SECRET": creds.secret}
    done = await asyncio.to_thread(
        subprocess.run, ["bash", "-c", example.shell], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    created = answer.get("data", answer)  # the organization's pinned version's shape
    await _pinned(live, creds, created["id"], example.body["credentials"][0]["action"]["userParams"])
