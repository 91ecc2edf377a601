"""(being built: issue 4)"""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["credentials"])
