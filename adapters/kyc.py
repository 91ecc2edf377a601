"""Identity verification providers (KYC) behind one small interface (CONTRACT 8).

A check is started from the approval page: the service stores a ``kyc_check`` row and sends the
subject to ``provider.start_url(check, return_url)``. The provider reports the outcome by calling
``orchestration.identity.complete_check`` (the development provider does it from its own page; a real one
would call a callback route that checks its signature and then does the same), and sends the subject back to
``return_url``. So a provider is only a place to send the subject and a way to report back; the
request workflow waits for the report through its ``record_identity`` update. The return URL names
the page and the check and nothing that lets its holder decide: it opens the page only in the
browser that started the check, once (``api.routes.journey.return_from_identity_check``).
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlencode, urlsplit

from core.settings import Settings
from store.tables import KycCheck


class KycProvider(Protocol):
    name: str
    origin: str  # where start_url leads (the approval page's forms may redirect there)

    def start_url(self, check: KycCheck, return_url: str, language: str) -> str:
        """Where to send the subject to be checked."""


class DevelopmentProvider:
    """A page of our own (``/dev/kyc/<checkId>``) that simulates the document and selfie checks,
    each of which can be made to fail. Development and tests only."""

    name = "development"

    def __init__(self, public_url: str) -> None:
        self._base = public_url.rstrip("/")
        parts = urlsplit(self._base)
        self.origin = f"{parts.scheme}://{parts.netloc}"

    def start_url(self, check: KycCheck, return_url: str, language: str) -> str:
        return f"{self._base}/dev/kyc/{check.id}?{urlencode({'return': return_url, 'lang': language})}"


def provider_for(settings: Settings) -> KycProvider | None:
    """The configured provider; None when platform KYC is not available."""
    if settings.kyc_provider == "development":
        return DevelopmentProvider(settings.public_url)
    return None
