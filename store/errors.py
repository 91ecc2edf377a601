"""What the store refuses with, shared by its modules (none of them imports another for it)."""

from __future__ import annotations


class NotFound(LookupError):
    """The organization, key, event or other row named does not exist."""
