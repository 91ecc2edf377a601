"""Real processes to kill: the API and ``python -m worker`` stacks of the durability tests
(fixture ``stack``),
and the issuing worker told to crash at a given point."""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest_asyncio
from google.protobuf.duration_pb2 import Duration
from google.protobuf.field_mask_pb2 import FieldMask
from sqlalchemy import Engine, func
from sqlmodel import col, select
from temporalio.api.activity.v1 import ActivityOptions
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import ResetStickyTaskQueueRequest, UpdateActivityOptionsRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from cli.devstack import publish_example_action
from core.secretbox import SecretCipher
from core.settings import Environment, Settings
from store import audit, orgs
from store.db import make_engine, migrate, read_session
from store.tables import StatusList
from tests.support.api_client import Credentials
from tests.support.workflow import asked_again
from workflows.ids import (
    ActivityNames,
)

ROOT = Path(__file__).resolve().parents[2]  # the project


MASTER_KEY = base64.b64encode(secrets.token_bytes(32)).decode()


@dataclass
class Stack:
    """A fresh SQLite database, task queue and organization, shared by the API process and the test."""

    url: str
    engine: Engine
    queue: str
    var_dir: Path
    org: Credentials
    client: Client

    @property
    def settings(self) -> Settings:
        """What the stack's processes read from their environment, for in-process workers."""
        return Settings(
            environment=Environment.TEST,
            database_url=self.url,
            master_key=MASTER_KEY,
            var_dir=self.var_dir,
            task_queue=self.queue,
        )


@pytest_asyncio.fixture
async def stack(dev_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[Stack]:
    url = f"sqlite:///{tmp_path / 'mandatum.db'}"
    migrate(url)
    engine = make_engine(url)
    cipher = SecretCipher(base64.b64decode(MASTER_KEY))
    audit.use_service_key(
        engine,
        cipher,
        Settings(
            environment=Environment.TEST, database_url=url, master_key=MASTER_KEY, var_dir=tmp_path / "var"
        ),
    )
    org, key = orgs.create_organization(engine, cipher, "Crash Co")
    publish_example_action(engine, org.id)
    creds = Credentials(org.id, key.key_id, key.api_key, key.signature_secret, "")
    try:
        yield Stack(
            url, engine, f"mandatum-crash-{uuid.uuid4().hex[:8]}", tmp_path / "var", creds, dev_env.client
        )
    finally:
        engine.dispose()


class WorkerProcess:
    """``python -m worker`` as operators run it: the worker and its reconciler."""

    def __init__(self, stack: Stack, name: str) -> None:
        self.log = stack.var_dir.parent / f"worker-{name}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MANDATUM_") and k != "DATABASE_URL"}
        env.update(
            {
                "MANDATUM_DATABASE_URL": stack.url,
                "MANDATUM_MASTER_KEY": MASTER_KEY,
                "MANDATUM_TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
                "MANDATUM_TASK_QUEUE": stack.queue,
                "MANDATUM_VAR_DIR": str(stack.var_dir),
                "MANDATUM_ENVIRONMENT": "test",
                "MANDATUM_RECONCILE_INTERVAL": "PT0.2S",
                "MANDATUM_RECONCILE_GRACE": "PT0S",
            }
        )
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "worker"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


PUBLIC_URL = "https://crash.mandatum.test"


class IssuingWorker(WorkerProcess):
    """``python -m worker`` as in test_durability, optionally told to crash at ``crash_at``; the
    public URL is fixed so that the test knows the issuer DID the worker signs with."""

    def __init__(self, stack: Stack, name: str, crash_at: str | None = None) -> None:
        self.log = stack.var_dir.parent / f"worker-{name}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MANDATUM_") and k != "DATABASE_URL"}
        env.update(
            MANDATUM_DATABASE_URL=stack.url,
            MANDATUM_MASTER_KEY=MASTER_KEY,
            MANDATUM_TEMPORAL_ADDRESS=stack.client.service_client.config.target_host,
            MANDATUM_TASK_QUEUE=stack.queue,
            MANDATUM_VAR_DIR=str(stack.var_dir),
            MANDATUM_ENVIRONMENT="test",
            MANDATUM_PUBLIC_URL=PUBLIC_URL,
        )
        if crash_at:
            env["MANDATUM_CRASH_AT"] = crash_at
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "worker"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
            )

    async def exit_code(self, seconds: float) -> int | None:
        for _ in range(int(seconds * 20)):
            if self.proc.poll() is not None:
                return self.proc.returncode
            await asyncio.sleep(0.05)
        return None


def worker_settings(stack: Stack) -> Settings:
    """The settings the worker processes run with (same database, key and issuer DID)."""
    return Settings(
        environment=Environment.TEST,
        database_url=stack.url,
        master_key=MASTER_KEY,
        var_dir=stack.var_dir,
        task_queue=stack.queue,
        public_url=PUBLIC_URL,
    )


def allocated(engine: Engine) -> int:
    """Status list entries handed out so far, over every list of the stack's database."""
    with read_session(engine) as session:
        return int(session.exec(select(func.coalesce(func.sum(col(StatusList.allocated)), 0))).one())


async def retry_now(
    stack: Stack, handle: WorkflowHandle[Any, Any], activity_type: str | None = ActivityNames.ISSUE_CREDENTIAL
) -> None:
    """Shorten the waits a dead worker leaves behind, as an operator could; nothing else changes.

    The server learns of the lost attempt only when its start-to-close timeout (30 s) expires, and
    sends the workflow's next task to the dead worker's sticky queue until that times out (10 s):
    correct, but slow for a test. So the attempt's timeout becomes 2 s and the stickiness is reset.
    ``activity_type=None`` when what died was a local activity: no activity is pending then.
    """
    ns, execution = stack.client.namespace, WorkflowExecution(workflow_id=handle.id)
    service = stack.client.workflow_service
    await asked_again(
        lambda: service.reset_sticky_task_queue(
            ResetStickyTaskQueueRequest(namespace=ns, execution=execution)
        )
    )
    if activity_type is None:
        return
    await asked_again(
        lambda: service.update_activity_options(
            UpdateActivityOptionsRequest(
                namespace=ns,
                execution=execution,
                type=activity_type,
                activity_options=ActivityOptions(start_to_close_timeout=Duration(seconds=2)),
                update_mask=FieldMask(paths=["start_to_close_timeout"]),
            )
        )
    )
