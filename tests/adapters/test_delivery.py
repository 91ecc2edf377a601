"""adapters.delivery: the development outbox, and a channel the service does not offer."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.delivery import Message, Outbox, Undeliverable, transport_for
from core.settings import Settings


def test_the_outbox_lists_newest_first_and_filters(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "outbox")
    assert box.entries() == []
    box.send(Message("email", "ana@example.com", "First", "one"))
    box.send(Message("sms", "+351912345678", "", "two"))
    box.send(Message("email", "ana@example.com", "Third", "three"))
    assert [e.text for e in box.entries()] == ["three", "two", "one"]
    assert [e.text for e in box.entries("ANA@example.com")] == ["three", "one"]
    assert [e.text for e in box.entries(limit=1)] == ["three"]
    (tmp_path / "outbox" / "garbage.json").write_text("{not json")
    assert len(box.entries()) == 3  # a broken file is skipped, not fatal
    assert not list((tmp_path / "outbox").glob(".*.tmp"))  # written atomically


def test_a_channel_the_service_does_not_offer_is_undeliverable(tmp_path: Path) -> None:
    settings = Settings(var_dir=tmp_path, sms_transport="none")
    with pytest.raises(Undeliverable) as refused:
        transport_for(settings, "sms").send(Message("sms", "+351912345678", "", "123456"))
    assert refused.value.code == "UNDELIVERABLE"
    assert isinstance(transport_for(settings, "email"), Outbox)
