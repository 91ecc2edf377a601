"""What bench/verify.py prepares before any clock runs (the organization, issued mandates, signed
requests as bytes), and how it reads the answers and the CPU afterwards.

Mandates are issued the honest way, as an integrator and its subjects would: a signed
``POST /request`` over HTTP, then the subject's code read from the development outbox and entered
on the approval page, and the acceptance sent from it, after which the worker's issuance activity
signs the mandate. It takes a fraction of a second per mandate, and a handful suffices: a VP is
single-use, a mandate is not, so the VPs are spread over the mandates round-robin.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from api.signing import sign
from bench.measure import Measurement, percentile
from bench.verify_load import Outcome
from cli.devstack import EXAMPLE_ACTION_ID, publish_example_action
from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit, orgs, presentations
from store.db import make_engine
from trust.did import web_organization_did

PAYEES = ["ACME Property Ltd", "Harbour Lettings"]
USER_PARAMS = {"maxAmount": 2500, "payees": PAYEES}
LINK_RE = re.compile(r"/r/[A-Za-z0-9_-]+")
CODE_RE = re.compile(r"^([0-9]{6})$", re.MULTILINE)  # the e-mail has the code on a line of its own
SESSION_RE = re.compile(r'name="session" value="([^"]+)"')
# both rules pass: 950 <= 2500, and the payee is listed
EXECUTION_PARAMS = {"amount": 950, "payee": PAYEES[0]}
VP_MINUTES = 30  # the organization's VP lifetime (CONTRACT 5 allows 1 to 60): preparation + run fit


@dataclass(frozen=True)
class Caller:
    organization_id: str
    did: str
    api_key: str
    secret: str


def create_organization(settings: Settings, name: str = "Verify benchmark") -> Caller:
    """An organization whose request rate cannot get in the way, with the example action."""
    engine = make_engine(settings.sqlalchemy_url)
    cipher = SecretCipher(settings.master_key_bytes())
    audit.use_service_key(engine, cipher, settings)  # the settings change is an audit record
    try:
        org, key = orgs.create_organization(
            engine,
            cipher,
            name,
            request_rate_per_minute=1_000_000,
        )
        publish_example_action(engine, org.id)
        presentations.set_presentation_minutes(engine, org.id, VP_MINUTES, actor="operator:bench")
    finally:
        engine.dispose()
    return Caller(
        org.id, web_organization_did(settings.public_url, org.id), key.api_key, key.signature_secret
    )


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class Signer:
    """HTTP/1.1 requests as bytes, signed (CONTRACT 1) for ``host`` (``127.0.0.1:<port>``).

    Timestamps strictly increase, one millisecond per request from the current time on, so that
    even identical bodies (every ``GET /me``, every presentation request) carry distinct
    signatures: each passes the replay guard as a first use, as distinct real calls would. A batch
    of n requests runs up to n ms ahead of the clock, well inside the 5-minute window.
    """

    def __init__(self, caller: Caller, host: str) -> None:
        self.caller, self.host = caller, host
        self._ms = 0

    def timestamp(self) -> str:
        self._ms = max(self._ms + 1, int(time.time() * 1000))
        return str(self._ms)

    def request(self, method: str, path: str, body: bytes = b"") -> bytes:
        timestamp = self.timestamp()
        lines = [
            f"{method} {path} HTTP/1.1",
            f"Host: {self.host}",
            f"Authorization: Bearer {self.caller.api_key}",
            f"X-Timestamp: {timestamp}",
            f"X-Signature: {sign(self.caller.secret, timestamp, body)}",
        ]
        if body or method not in ("GET", "HEAD"):
            lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

    def headers(self, body: bytes = b"") -> dict[str, str]:
        """The same signing, as headers for httpx (the setup calls)."""
        timestamp = self.timestamp()
        return {
            "Authorization": f"Bearer {self.caller.api_key}",
            "X-Timestamp": timestamp,
            "X-Signature": sign(self.caller.secret, timestamp, body),
            "Content-Type": "application/json",
        }

    def me(self, n: int) -> list[bytes]:
        return [self.request("GET", "/me") for _ in range(n)]

    def presentations(self, mandate_ids: list[str], n: int) -> list[bytes]:
        """``n`` presentation requests, round-robin over the mandates, bound to the caller."""
        body = compact({"targetVerifier": self.caller.did})
        paths = [f"/credential/{quote(m, safe='')}/presentation" for m in mandate_ids]
        return [self.request("POST", paths[i % len(paths)], body) for i in range(n)]

    def verifications(
        self, presentations: list[dict[str, Any]], execution: dict[str, Any] = EXECUTION_PARAMS
    ) -> list[bytes]:
        return [
            self.request(
                "POST",
                "/credential/verify",
                compact({"presentation": vp, "executionParams": execution}),
            )
            for vp in presentations
        ]


# --- mandates ---------------------------------------------------------------------------------


RENT: dict[str, Any] = {
    "type": "POLICY",
    "name": "Rent payments",
    "scope": "payments",
    "action": {"id": EXAMPLE_ACTION_ID, "userParams": USER_PARAMS},
}


def request_body(
    i: int, run: str, label: str = "verify", credential: dict[str, Any] = RENT
) -> dict[str, Any]:
    return {
        "contacts": [f"{label}-{run}-{i}@example.com"],
        "securityLevel": "CONTACT",
        "name": f"{label.capitalize()} bench {run} #{i}",
        "credentials": [credential],
    }


async def _code_message(http: httpx.AsyncClient, contact: str) -> str:
    """The text of the message the worker left in the development outbox for ``contact``."""
    for _ in range(200):
        listed = await http.get("/dev/outbox.json", params={"to": contact})
        if listed.status_code == 200 and listed.json()["data"]:
            return str(listed.json()["data"][0]["text"])
        await asyncio.sleep(0.05)
    raise RuntimeError(f"no code for {contact} in the development outbox")


@dataclass(frozen=True)
class Journey:
    """A subject on the approval page with the code confirmed: one decision away."""

    request_id: str
    credential_id: str
    link: str  # /r/<token>
    session: str  # the page's session after the code


async def open_journey(
    http: httpx.AsyncClient,
    signer: Signer,
    i: int,
    run: str,
    label: str = "verify",
    credential: dict[str, Any] = RENT,
) -> Journey:
    """A request over the API, its subject's code read from the development outbox and entered
    on the approval page: everything but the decision."""
    body = compact(request_body(i, run, label, credential))
    created = await http.post("/request", content=body, headers=signer.headers(body))
    if created.status_code != 201:
        raise RuntimeError(f"POST /request: {created.status_code} {created.text[:300]}")
    request = created.json()["data"]
    text = await _code_message(http, request["subjects"][0]["contact"])
    link, code = LINK_RE.search(text), CODE_RE.search(text)
    if link is None or code is None:
        raise RuntimeError(f"no link or code in the message: {text!r}")
    confirmed = await http.post(f"{link.group(0)}/otp", data={"code": code.group(1)})
    session = SESSION_RE.search(confirmed.text)
    if session is None:
        raise RuntimeError(f"the code was not accepted: {confirmed.status_code} {confirmed.text[:300]}")
    return Journey(request["id"], request["credentials"][0]["id"], link.group(0), session.group(1))


async def decide(http: httpx.AsyncClient, journey: Journey, choice: str = "accept") -> httpx.Response:
    """The subject's decision: the approval page's form post (its answer, raised unless 200 or 303)."""
    decided = await http.post(
        f"{journey.link}/decide",
        data={"session": journey.session, f"decision-{journey.credential_id}": choice},
    )
    if decided.status_code not in (200, 303):
        raise RuntimeError(f"the decision was refused: {decided.status_code} {decided.text[:300]}")
    return decided


async def issue_mandate(
    http: httpx.AsyncClient,
    temporal: Any,
    signer: Signer,
    i: int,
    run: str,
    credential: dict[str, Any] = RENT,
) -> str:
    """A request over the API, accepted by its subject on the approval page (the code from the
    development outbox, then the decision): the mandate URN."""
    journey = await open_journey(http, signer, i, run, credential=credential)
    await decide(http, journey)
    for _ in range(100):  # issued by the decision's update: normally already there
        got = await http.get(f"/request/{journey.request_id}", headers=signer.headers())
        cred = got.json()["credentials"][0]
        if cred["status"] == "ACTIVE":
            return str(cred["id"])
        await asyncio.sleep(0.1)
    raise RuntimeError(f"credential {journey.credential_id} of request {journey.request_id} was not issued")


async def issue_mandates(
    http: httpx.AsyncClient, temporal: Any, signer: Signer, n: int, credential: dict[str, Any] = RENT
) -> list[str]:
    run = f"{int(time.time())}-{signer.caller.organization_id[-6:]}"
    return list(
        await asyncio.gather(*(issue_mandate(http, temporal, signer, i, run, credential) for i in range(n)))
    )


# --- reading the answers ----------------------------------------------------------------------


def error_text(status: int, body: bytes) -> str:
    try:
        parsed = json.loads(body)
    except ValueError:
        return f"{status} {body[:120]!r}"
    if isinstance(parsed, dict):
        detail = parsed.get("reason") or parsed.get("message")
        return f"{status} {detail}"
    return f"{status} {body[:120]!r}"


def presentations_of(statuses: dict[int, int], bodies: dict[int, bytes]) -> tuple[list[Any], Counter[str]]:
    """The VPs of the 200 answers, in request order, and a count of what the others said."""
    found, problems = [], Counter[str]()
    for i in sorted(statuses):
        if statuses[i] == 200:
            found.append(json.loads(bodies[i])["data"]["presentation"])
        else:
            problems[error_text(statuses[i], bodies.get(i, b""))] += 1
    return found, problems


def verdicts(statuses: dict[int, int], bodies: dict[int, bytes]) -> Counter[str]:
    """``allow`` for each 200 whose decision is allow; anything else by status and reason."""
    seen = Counter[str]()
    for i, status in statuses.items():
        body = bodies.get(i, b"")
        if status == 200:
            decision = json.loads(body).get("decision")
            seen["allow" if decision == "allow" else f"200 decision={decision!r}"] += 1
        else:
            seen[error_text(status, body)] += 1
    return seen


def not_allowed(out: Outcome) -> tuple[int, dict[str, int]]:
    seen = verdicts(out.statuses, out.bodies)
    return sum(n for k, n in seen.items() if k != "allow"), {k: n for k, n in seen.items() if k != "allow"}


@dataclass
class Series:
    """One kind of call over its rounds."""

    name: str
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    errors: int = 0
    exhausted: int = 0  # rounds that used up their prepared requests before their time was up
    cpu: dict[str, float] = field(default_factory=dict)

    def add(self, out: Outcome, cpu: dict[str, float], errors: int, prepared: int) -> None:
        self.latencies += out.latencies
        self.seconds += out.seconds
        self.errors += errors + out.transport_errors
        self.exhausted += out.sent == prepared
        for name, value in cpu.items():
            self.cpu[name] = self.cpu.get(name, 0.0) + value

    def result(self) -> Measurement:
        n, ordered = len(self.latencies), sorted(self.latencies)
        return Measurement(
            self.name,
            n,
            round(self.seconds, 3),
            n / self.seconds,
            percentile(ordered, 0.5) * 1000,
            percentile(ordered, 0.99) * 1000,
            self.errors,
            {k: round(1000 * v / max(n, 1), 3) for k, v in self.cpu.items()},
        )


def machine_cpu_seconds() -> float:
    """Busy CPU time of the whole machine, every process (Linux /proc/stat; 0 elsewhere)."""
    try:
        fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    """CPU of the children this process has waited for (the load generator's runs)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime
