"""The integrator's side of the iframe's encrypted messages (``iframe.pubKey``): a P-256 key pair
as a browser makes one, the public key as 1.2.0 sends it, and the messages a page posted."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat
from joserfc.jwk import ECKey

from trust.frame_jwe import decrypt_from_frame


@dataclass(frozen=True)
class FrameKeyPair:
    private: ec.EllipticCurvePrivateKey

    @property
    def spki(self) -> str:
        """The public key as ``crypto.subtle.exportKey("spki", ...)`` base64-encoded gives it."""
        der = self.private.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
        return base64.b64encode(der).decode()

    @property
    def jwk(self) -> ECKey:
        der = self.private.private_bytes(Encoding.DER, PrivateFormat.PKCS8, NoEncryption())
        return ECKey.import_key(der)

    def private_jwk(self) -> dict[str, Any]:
        """The private key as a JWK, what a parent page imports with ``crypto.subtle.importKey``."""
        return dict(self.jwk.as_dict(private=True))

    def open(self, jwe: str) -> Any:
        return decrypt_from_frame(jwe, self.jwk)


def new_key_pair(curve: ec.EllipticCurve | None = None) -> FrameKeyPair:
    return FrameKeyPair(ec.generate_private_key(curve or ec.SECP256R1()))


def posted(html: str) -> list[Any]:
    """What the iframe's last page posts to the parent (its ``mandatum-event`` data), [] for none."""
    if 'id="mandatum-event"' not in html:
        return []
    data = html.split('id="mandatum-event"', 1)[1].split(">", 1)[1].split("</script>", 1)[0]
    return list(json.loads(data)["payloads"])
