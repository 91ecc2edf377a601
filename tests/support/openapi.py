"""The OpenAPI document as a test oracle: real answers checked against it (the status is documented,
the body valid against its schema in the OpenAPI 3.1 dialect, the headers present and valid), and
a recorder of the answers that become the document's examples."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
from openapi_schema_validator import OAS31Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from api.openapi import EXAMPLES_FILE
from tests.support.api_client import SignedClient

DOCUMENT_URI = "urn:mandatum:openapi"
JSON_MEDIA = ("application/json", "application/did+json", "application/ld+json", "application/vc")


def pointer(*parts: str) -> str:
    """A JSON pointer to ``parts`` (RFC 6901: ``~`` and ``/`` escaped)."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


class Oracle:
    """Checks values and answers against one OpenAPI document."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        resource = Resource.from_contents(document, default_specification=DRAFT202012)
        self.registry: Registry[Any] = Registry().with_resource(DOCUMENT_URI, resource)

    def problems(self, value: Any, *location: str) -> list[str]:
        """Why ``value`` is not valid against the schema at ``location`` in the document."""
        validator = OAS31Validator(
            {"$ref": f"{DOCUMENT_URI}#{pointer(*location)}"},
            registry=self.registry,
            format_checker=OAS31Validator.FORMAT_CHECKER,
        )
        return [
            f"{'/'.join(map(str, e.absolute_path)) or '(body)'}: {e.message}"
            for e in validator.iter_errors(value)
        ]

    def operation(self, method: str, template: str) -> dict[str, Any]:
        found: dict[str, Any] = self.document["paths"][template][method.lower()]
        return found

    def answer_problems(self, method: str, template: str, response: httpx.Response) -> list[str]:
        """Why ``response`` is not an answer the document allows for this operation."""
        operation = self.operation(method, template)
        status = str(response.status_code)
        documented = operation["responses"].get(status)
        if documented is None:
            return [f"status {status} is not documented: {response.text[:300]}"]
        problems: list[str] = []
        at = ("paths", template, method.lower(), "responses", status)
        content = documented.get("content", {})
        media = response.headers.get("content-type", "").split(";")[0].strip()
        if not content:
            if response.content:
                problems.append(f"a body where none is documented: {response.text[:200]}")
        elif media not in content:
            problems.append(f"content type {media!r} is not one of {sorted(content)}")
        elif "schema" in content[media]:
            body = response.json() if media in JSON_MEDIA else response.text
            problems += self.problems(body, *at, "content", media, "schema")
        for name, header in documented.get("headers", {}).items():
            value = response.headers.get(name)
            if value is None:
                if header.get("required"):
                    problems.append(f"required header {name} is missing")
                continue
            problems += [f"header {name}: {p}" for p in self.problems(value, *at, "headers", name, "schema")]
        return problems


@dataclass
class Recorder:
    """Calls the API as ``api``, checks each answer against the document, and keeps what the
    document's examples are made of: per operation, its parameters, request body and answers."""

    api: SignedClient
    oracle: Oracle
    examples: dict[str, Any] = field(default_factory=dict)
    answered: set[tuple[str, int]] = field(default_factory=set)

    async def call(
        self,
        method: str,
        template: str,
        *,
        path: dict[str, str] | None = None,
        body: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        example: bool = True,
        raw: bytes | None = None,
        **sign: Any,
    ) -> httpx.Response:
        """One call, its answer checked. Unless ``example=False`` the answer becomes the example of its
        status, and a success's parameters and body the examples of the operation's."""
        url = template.format(**{k: quote(v, safe="") for k, v in (path or {}).items()})
        response = await self.api.request(method, url, body, raw=raw, params=params, headers=headers, **sign)
        problems = self.oracle.answer_problems(method, template, response)
        assert not problems, f"{method} {template} -> {response.status_code}: {problems}"
        operation_id = self.oracle.operation(method, template)["operationId"]
        self.answered.add((operation_id, response.status_code))
        if example:
            recorded = self.examples.setdefault(operation_id, {"parameters": {}, "responses": {}})
            if response.status_code < 300:
                recorded["parameters"].update({**(path or {}), **(params or {}), **(headers or {})})
                if body is not None:
                    recorded["request"] = body
            media = response.headers.get("content-type", "").split(";")[0].strip()
            if response.content:
                recorded["responses"][str(response.status_code)] = (
                    response.json() if media in JSON_MEDIA else response.text
                )
        return response

    def write(self) -> None:
        """The recorded examples replace the document's of the same operations."""
        write_examples(self.examples)


def write_examples(examples: dict[str, Any]) -> None:
    """``examples`` replace the document's under the same keys (``api/openapi_examples.json``)."""
    kept = json.loads(EXAMPLES_FILE.read_text(encoding="utf-8")) if EXAMPLES_FILE.is_file() else {}
    merged = {**kept, **examples}
    ordered = {key: merged[key] for key in sorted(merged)}
    EXAMPLES_FILE.write_text(json.dumps(ordered, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
