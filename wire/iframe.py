"""The ``iframe`` member of ``POST /request`` (``wire.models.CreateRequestIn``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from trust.frame_jwe import MAX_KEY_CHARS, BadFrameKey, check_frame_key
from wire.request_options import IframeCookieIn


def _frame_key(value: str) -> str:
    try:
        return check_frame_key(value).spki
    except BadFrameKey as exc:
        raise ValueError(str(exc)) from exc


class IframeIn(BaseModel):
    """The approval page in an iframe (1.2.0's ``GenerateRequestIFrameDto``): ``pubKey``, the
    integrator's P-256 public key (base64 DER SubjectPublicKeyInfo) the page's messages to the
    parent window are encrypted to (``trust.frame_jwe``), kept in one spelling; and ``cookie``, the
    trusted browser session the request offers (``wire.request_options``). Either may be absent."""

    model_config = ConfigDict(extra="forbid")

    pubKey: (
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_KEY_CHARS,
                description=(
                    "Base64 (standard) of a DER SubjectPublicKeyInfo of a P-256 (secp256r1) public key, "
                    "as crypto.subtle.exportKey('spki', ...) gives it. Every message the approval page "
                    "posts to the parent window is then a JWE (ECDH-ES, A256GCM) encrypted to it."
                ),
            ),
            AfterValidator(_frame_key),
        ]
        | None
    ) = None
    cookie: IframeCookieIn | None = None
