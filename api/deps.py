"""Shared services of the API (made once in the lifespan) and their dependency aliases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from temporalio.client import Client

from api.responses import path_param
from core.actors import Actor
from services import requests as request_service
from services.access import ActiveKey, SignatureUse
from services.context import Context
from services.requests import RequestBundle
from wire import patterns


@dataclass(frozen=True)
class Caller:
    """The authenticated organization behind a request and the version it is served in."""

    key: ActiveKey
    api_version: str
    # the signature still to be recorded against replays, by the operation's own write
    # transaction (``api.auth.DEFERRED_SIGNATURE``); None when the middleware recorded it
    signature: SignatureUse | None = None

    @property
    def organization_id(self) -> str:
        return self.key.organization_id

    @property
    def actor(self) -> Actor:
        """Who the calls of this key are recorded as: ``apiKey:<keyId>``."""
        return Actor.api_key(self.key.key_id)


async def get_context(request: Request) -> Context:
    ctx: Context = request.app.state.ctx
    return ctx


async def get_caller(request: Request) -> Caller:
    caller: Caller = request.scope["state"]["caller"]
    return caller


async def get_temporal(request: Request) -> Client:
    client = (await get_context(request)).temporal
    if client is None:  # pragma: no cover - the lifespan always connects
        raise RuntimeError("Temporal client not connected")
    return client


# The dependencies are async so FastAPI calls them inline instead of through a thread pool.
ContextDep = Annotated[Context, Depends(get_context)]
CallerDep = Annotated[Caller, Depends(get_caller)]
TemporalDep = Annotated[Client, Depends(get_temporal)]


RequestId = Annotated[str, path_param(patterns.OBJECT_ID, "The request id: 24 lower-case hex characters")]


async def get_request_bundle(requestId: RequestId, caller: CallerDep, ctx: ContextDep) -> RequestBundle:
    """The caller's request named in the path: 400 for a malformed id, 404 for none of theirs."""
    return await request_service.get(ctx, caller.organization_id, requestId)


RequestDep = Annotated[RequestBundle, Depends(get_request_bundle)]
