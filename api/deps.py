"""Shared services of the API (made once in the lifespan) and their dependency aliases."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import Engine
from temporalio.client import Client

from core.group_commit import GroupCommit
from core.otp import JourneySecrets
from core.secretbox import SecretCipher
from core.settings import Settings
from store import requests as store_requests
from store.orgs import ActiveKey


@dataclass
class Services:
    settings: Settings
    engine: Engine
    cipher: SecretCipher
    temporal: Client | None = None
    # "workflow started" marks of concurrent creations, written together (core.group_commit)
    started_marks: GroupCommit[str] = field(init=False)

    # the keyed operations of the subject's journey (codes, links, page sessions)
    journey: JourneySecrets = field(init=False)

    def __post_init__(self) -> None:
        self.started_marks = GroupCommit(partial(store_requests.mark_workflows_started, self.engine))
        self.journey = JourneySecrets(self.settings.master_key_bytes())


@dataclass(frozen=True)
class Caller:
    """The authenticated organization behind a request and the version it is served in."""

    key: ActiveKey
    api_version: str

    @property
    def organization_id(self) -> str:
        return self.key.organization_id


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


async def get_caller(request: Request) -> Caller:
    caller: Caller = request.scope["state"]["caller"]
    return caller


async def get_temporal(request: Request) -> Client:
    client = (await get_services(request)).temporal
    if client is None:  # pragma: no cover - the lifespan always connects
        raise RuntimeError("Temporal client not connected")
    return client


# The dependencies are async so FastAPI calls them inline instead of through a thread pool.
ServicesDep = Annotated[Services, Depends(get_services)]
CallerDep = Annotated[Caller, Depends(get_caller)]
TemporalDep = Annotated[Client, Depends(get_temporal)]
