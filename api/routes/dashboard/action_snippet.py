"""The request example on an action's page: ``POST /request`` pinning the action's newest published
version, as a shell command (curl, signed with openssl) and with the public Python SDK. Both are
run against the live service in ``tests/sdk/test_sdk_action_snippet.py``.

Only the action's own values go in (its URN, its name, its user params' defaults or a sample of
their type); the key and secret are read from the environment, never written into the page.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from policy.params import Param

SAMPLES: dict[str, Any] = {
    "string": "example",
    "number": 100,
    "integer": 1,
    "boolean": True,
    "timestamp": "2030-01-01T00:00:00Z",
    "array<string>": [],
    "array<number>": [],
}
CONTACT = "ana@example.com"


@dataclass(frozen=True)
class Snippets:
    body: dict[str, Any]
    shell: str
    python: str


def user_params(params: list[Param]) -> dict[str, Any]:
    """Each user param the person pins: its default, else a sample of its type to replace."""
    return {p.name: p.default if p.has_default else SAMPLES.get(p.type, "") for p in params}


def request_body(action_id: str, name: str, params: list[Param]) -> dict[str, Any]:
    return {
        "contacts": [CONTACT],
        "securityLevel": "CONTACT",
        "credentials": [
            {"type": "POLICY", "name": name, "action": {"id": action_id, "userParams": user_params(params)}}
        ],
    }


def snippets(base_url: str, action_id: str, name: str, params: list[Param]) -> Snippets:
    body = request_body(action_id, name, params)
    compact = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    url = base_url.rstrip("/") + "/request"
    shell = "\n".join(
        [
            "# MANDATUM_API_KEY and MANDATUM_SECRET: an API key of yours and its signature secret",
            f"BODY={shlex.quote(compact)}",
            "TS=$(date +%s%3N)",
            'SIG=$(printf \'%s.%s\' "$TS" "$BODY" | openssl dgst -sha256 -hmac "$MANDATUM_SECRET" '
            "| awk '{print $NF}')",
            f"curl -sS -X POST {shlex.quote(url)} \\",
            '  -H "Authorization: Bearer $MANDATUM_API_KEY" -H "X-Timestamp: $TS" \\',
            '  -H "X-Signature: $SIG" -H "Content-Type: application/json" --data "$BODY"',
        ]
    )
    params_text = json.dumps(user_params(params), ensure_ascii=False)
    python = "\n".join(
        [
            "import json, os",
            "",
            "from humanos_sdk import HumanosClient, HumanosClientConfig",
            "from humanos_sdk import ActionDto, CredentialDto, GenerateRequestDto, GenerateRequestUserDto",
            "",
            "client = HumanosClient(HumanosClientConfig(",
            f"    base_path={json.dumps(base_url.rstrip('/'))},",
            '    api_key=os.environ["MANDATUM_API_KEY"],',
            '    signature_secret=os.environ["MANDATUM_SECRET"],',
            "))",
            "created = client.requests.create(GenerateRequestDto(",
            f"    users=[GenerateRequestUserDto(contact={json.dumps(CONTACT)})],",
            '    securityLevel="CONTACT",',
            "    credentials=[CredentialDto(",
            f'        type="POLICY", name={json.dumps(name, ensure_ascii=False)},',
            f"        action=ActionDto(id={json.dumps(action_id)}, userParams=json.loads({params_text!r})),",
            "    )],",
            "))",
            "print(created.id)",
        ]
    )
    return Snippets(body, shell, python)
