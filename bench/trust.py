"""Trust-core benchmark: mandate VC and VP sign/verify against raw PyNaCl Ed25519, same run.

``python -m bench.trust [--iterations N]`` measures, after a warm-up, the median and p99
microseconds of: signing a mandate VC, verifying it, creating a VP, verifying a VP (both proofs,
JCS and hashing included), and raw PyNaCl Ed25519 sign and verify of a 64-byte message. The
operations run in interleaved rounds so that a change in the machine's load hits all alike. It
prints a table and the ratio ``VP verify / (2 x raw verify)`` (target <= 3.0), and writes
bench/results/trust-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from nacl.signing import SigningKey

from bench.measure import percentile
from trust.credentials import (
    action_pin,
    digest_sri,
    evidence_entry,
    mandate_credential,
    presentation,
    verify_mandate,
    verify_presentation,
)
from trust.did import Resolver, did_document, key_id
from trust.keys import Ed25519KeyPair

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TARGET_RATIO = 3.0
ROUNDS = 10
SERVICE = "did:web:mandatum.test"
ORG = "did:web:mandatum.test:orgs:6b024f482d684ce25172847f"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def keyed(did: str) -> Ed25519KeyPair:
    pair = Ed25519KeyPair.generate()
    return pair.with_verification_method(key_id(did, pair.public_multikey))


def operations() -> dict[str, Callable[[], Any]]:
    service, org = keyed(SERVICE), keyed(ORG)
    documents = {
        SERVICE: did_document(SERVICE, [service.public_multikey]),
        ORG: did_document(ORG, [org.public_multikey]),
    }
    resolver = Resolver(documents.get)
    action = action_pin(
        "urn:via:action:6f1c",
        "urn:via:action-version:9e2d",
        digest_sri({"rules": ["executionParams.amount <= userParams.maxAmount"]}),
        {"maxAmount": 250, "currencies": ["EUR", "USD"]},
    )
    sign_vc = partial(sign_mandate, service, action)
    vc = sign_vc()
    make_vp = partial(make_presentation, vc, org)
    vp = make_vp()
    raw_key = SigningKey.generate()
    raw_verify_key = raw_key.verify_key
    message = os.urandom(64)
    raw_signature = raw_key.sign(message).signature
    return {
        "raw Ed25519 sign (64 B)": lambda: raw_key.sign(message),
        "raw Ed25519 verify (64 B)": lambda: raw_verify_key.verify(message, raw_signature),
        "mandate VC sign": sign_vc,
        "mandate VC verify": lambda: verify_mandate(vc, resolver, now=NOW),
        "VP create": make_vp,
        "VP verify (VP + VC proofs)": lambda: verify_presentation(
            vp, resolver, challenge="c1f4e0d2a9b84f3e", domain="did:web:verifier.example", now=NOW
        ),
    }


def sign_mandate(service: Ed25519KeyPair, action: dict[str, Any]) -> dict[str, Any]:
    """The measured mandate VC, signed by the service's key."""
    return mandate_credential(
        credential_id="urn:via:credential:2f0c6a1e-8c4b-4d2e-9f3a-6b7c8d9e0f12",
        issuer_key=service,
        context_url="https://mandatum.test/ns/v1",
        organization_did=ORG,
        grantors=["did:web:mandatum.test:subjects:0b8f3f3e-3e0c-4b7e-9a57-0d8f5c0c1a11"],
        scope="payments",
        authorized_dids=[ORG, "did:web:verifier.example"],
        valid_from=NOW,
        valid_until=NOW + timedelta(days=30),
        created=NOW,
        action=action,
        evidences=[evidence_entry("urn:via:evidence:1", b"%PDF-1.7 ...", "https://mandatum.test/evidence/1")],
    )


def make_presentation(vc: dict[str, Any], org: Ed25519KeyPair) -> dict[str, Any]:
    """The measured VP of ``vc``, signed by the organization's key, bound to a verifier."""
    return presentation(
        vc,
        org,
        holder_did=ORG,
        presentation_id="urn:via:presentation:9a1b",
        challenge="c1f4e0d2a9b84f3e",
        domain="did:web:verifier.example",
        created=NOW,
        expires=NOW + timedelta(minutes=5),
    )


def measure(ops: dict[str, Callable[[], Any]], iterations: int) -> dict[str, list[float]]:
    for op in ops.values():  # warm-up
        for _ in range(max(100, iterations // 10)):
            op()
    samples: dict[str, list[float]] = {name: [] for name in ops}
    clock = time.perf_counter_ns
    for _ in range(ROUNDS):
        for name, op in ops.items():
            out = samples[name]
            for _ in range(iterations // ROUNDS):
                start = clock()
                op()
                out.append((clock() - start) / 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()
    samples = measure(operations(), args.iterations)
    rows = {}
    for name, values in samples.items():
        values.sort()
        rows[name] = {
            "count": len(values),
            "median_us": round(percentile(values, 0.5), 1),
            "p99_us": round(percentile(values, 0.99), 1),
        }
    ratio = rows["VP verify (VP + VC proofs)"]["median_us"] / (
        2 * rows["raw Ed25519 verify (64 B)"]["median_us"]
    )
    width = max(len(n) for n in rows)
    print(f"{'operation':<{width}}  {'median µs':>10}  {'p99 µs':>10}")
    for name, row in rows.items():
        print(f"{name:<{width}}  {row['median_us']:>10.1f}  {row['p99_us']:>10.1f}")
    verdict = "meets" if ratio <= TARGET_RATIO else "MISSES"
    print(f"\nVP verify / (2 x raw verify) = {ratio:.2f} (target <= {TARGET_RATIO}: {verdict})")
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS_DIR / f"trust-{stamp}.json"
    out.write_text(
        json.dumps(
            {
                "timestamp": stamp,
                "iterations": args.iterations,
                "python": platform.python_version(),
                "machine": platform.platform(),
                "operations": rows,
                "vp_verify_ratio": round(ratio, 3),
                "target_ratio": TARGET_RATIO,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out}")


if __name__ == "__main__":
    main()
