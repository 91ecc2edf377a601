"""A member's one-time recovery codes (issue 30, item 7): ten of them, made when the second factor
is turned on (or on demand, in place of the old ones), shown once, each standing in once for a
TOTP code.

- **A code** is 80 random bits (``secrets``), written as 16 characters of the base32 alphabet in
  four groups (``ABCD-EFGH-JKLM-NPQR``); typed in any case, with or without the dashes and spaces.
- **Kept as a keyed hash**: HMAC-SHA256 of the member's id and the code under an HKDF sub-key of the
  master key, never Argon2. A code has 80 random bits, so a slow hash adds nothing against
  guessing (2^80 tries are out of reach at any speed), while it would make every try cost up to
  ten Argon2 hashes of 64 MiB on the login's few hashing threads, a lever for anyone to slow every
  login down. The key means that a copy of the database alone cannot even test a guess; the
  member's id in the message binds a code to its member. The guesses themselves are throttled
  as a login's (``services.login_throttle``).
- Never logged, never in an audit record (which says how many remain), never in a URL.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from functools import lru_cache

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from services.context import Context

COUNT = 10
CODE_BYTES = 10  # 80 bits: 16 base32 characters, no padding
FORM_RE = re.compile(r"[A-Z2-7]{16}")
_SEPARATORS_RE = re.compile(r"[\s-]")


def new_codes() -> list[str]:
    """Ten fresh codes as they are shown: four groups of four characters."""
    return [_grouped(base64.b32encode(secrets.token_bytes(CODE_BYTES)).decode()) for _ in range(COUNT)]


def _grouped(code: str) -> str:
    return "-".join(code[i : i + 4] for i in range(0, len(code), 4))


def typed_form(raw: str) -> str | None:
    """The code a member typed as it is hashed (upper case, no dashes or spaces); None for text
    that cannot be a code."""
    if len(raw) > 40:
        return None
    code = _SEPARATORS_RE.sub("", raw).upper()
    return code if FORM_RE.fullmatch(code) else None


@lru_cache(maxsize=4)
def _key(master_key: bytes) -> bytes:
    info = b"mandatum recovery codes v1"
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(master_key)


def code_hash(ctx: Context, member_id: str, code: str) -> str:
    """What is stored of a code (``code`` as shown or typed, already in ``typed_form``)."""
    plain = typed_form(code) or code
    message = f"{member_id}:{plain}".encode()
    return hmac.new(_key(ctx.settings.master_key_bytes()), message, hashlib.sha256).hexdigest()


def hashes_of(ctx: Context, member_id: str, codes: list[str]) -> list[str]:
    return [code_hash(ctx, member_id, code) for code in codes]
