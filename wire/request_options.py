"""Options of a new request beside its subjects and credentials (``CreateRequestIn``): the
``iframe`` object's trusted browser session it may offer (``iframe.cookie``, issue 36;
docs/adr/0019-trusted-browser-session.md). Apart from ``wire.models`` to keep that module small;
the same rules: unknown fields refused, no NUL character."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator

from wire.texts import reject_nul


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        reject_nul(value)
        return value


# The trusted browser session a request may offer its subjects (issue 36, docs/adr/0019-...):
# 1 to 24 hours, refused outside that range (the hosted service clamps; a bad value is a mistake
# the integrator should hear about, not a silently different lifetime)
TRUSTED_SESSION_MIN_SECONDS = 3600
TRUSTED_SESSION_MAX_SECONDS = 86400
TRUSTED_SESSION_DEFAULT_SECONDS = 3600


class IframeCookieIn(_Strict):
    """``iframe.cookie``: opt into a trusted browser session for this request. When ``allow`` is
    true, a subject who confirms their code is given an HttpOnly cookie; on a later request of the
    same organization to the same contact that allows it too, that browser skips the code (never
    an identity check). ``duration`` is the session's lifetime in seconds, 3600 to 86400."""

    allow: StrictBool = Field(
        default=False,
        description="true: a subject who confirms the code may skip it on later requests in the same browser",
    )
    duration: (
        Annotated[StrictInt, Field(ge=TRUSTED_SESSION_MIN_SECONDS, le=TRUSTED_SESSION_MAX_SECONDS)] | None
    ) = Field(
        default=None,
        description="The trusted session's lifetime in seconds, 3600 to 86400 (refused outside it); "
        "default 3600. Used only when allow is true.",
    )

    @field_validator("allow", mode="before")
    @classmethod
    def _null_is_false(cls, value: Any) -> Any:
        """SDKs send absent optional fields as null: that means the default."""
        return False if value is None else value

    @field_validator("duration", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> Any:
        """A whole number of seconds: 7200 or 7200.0 (JSON does not tell them apart; the release's
        model takes a float), never true, "7200" or 7200.5."""
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    @property
    def seconds(self) -> int | None:
        """The session's lifetime when the request allows one, else None."""
        return (self.duration or TRUSTED_SESSION_DEFAULT_SECONDS) if self.allow else None
