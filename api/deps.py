"""Shared services of the API (made once in the lifespan) and their dependency aliases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import Engine
from temporalio.client import Client

from core.secretbox import SecretCipher
from core.settings import Settings
from store.orgs import ActiveKey


@dataclass
class Services:
    settings: Settings
    engine: Engine
    cipher: SecretCipher
    temporal: Client | None = None


@dataclass(frozen=True)
class Caller:
    """The authenticated organization behind a request and the version it is served in."""

    key: ActiveKey
    api_version: str

    @property
    def organization_id(self) -> str:
        return self.key.organization_id


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_caller(request: Request) -> Caller:
    caller: Caller = request.scope["state"]["caller"]
    return caller


def get_temporal(request: Request) -> Client:
    client = get_services(request).temporal
    if client is None:  # pragma: no cover - the lifespan always connects
        raise RuntimeError("Temporal client not connected")
    return client


ServicesDep = Annotated[Services, Depends(get_services)]
CallerDep = Annotated[Caller, Depends(get_caller)]
TemporalDep = Annotated[Client, Depends(get_temporal)]
