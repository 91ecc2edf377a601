"""The journey's pure parts: codes, hashes, links and page sessions (core.otp); the texts of the
four languages (core.i18n); the development outbox (adapters.delivery); allowed iframe origins."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from adapters.delivery import Message, Outbox, Undeliverable, transport_for
from core import i18n
from core.otp import SESSION_LIFETIME_SECONDS, JourneySecrets, mask_contact
from core.settings import Settings
from store.orgs import check_frame_origin
from tests.support.journey_helpers import _spellings_of

SECRETS = JourneySecrets(b"k" * 32)
REQUEST, SUBJECT = "6b03d9f084ec72fed9b96715", "4e487b20-6a5a-4e0d-9d73-c172efcb2ce9"


def test_codes_are_six_digits_new_for_each_send_and_the_same_on_a_retry() -> None:
    codes = [SECRETS.code_for(REQUEST, SUBJECT, n) for n in range(1, 2001)]
    assert all(re.fullmatch(r"[0-9]{6}", c) for c in codes)
    assert len(set(codes)) > 1990  # each send has its own code: not a counter or a constant
    assert {c[0] for c in codes} == set(string.digits)  # spread over the digits, leading zeros kept
    assert SECRETS.code_for(REQUEST, SUBJECT, 7) == codes[6]  # a retried send: the same code
    assert SECRETS.code_for(REQUEST, "11111111-2222-4333-8444-555555555555", 7) != codes[6]
    assert JourneySecrets(b"j" * 32).code_for(REQUEST, SUBJECT, 7) != codes[6]  # keyed


def test_the_code_hash_is_keyed_and_bound_to_request_and_subject() -> None:
    h = SECRETS.code_hash(REQUEST, SUBJECT, "123456")
    assert "123456" not in h and len(h) == 43
    assert SECRETS.code_hash(REQUEST, SUBJECT, "123 456") == h
    assert SECRETS.code_hash(REQUEST, SUBJECT, "123-456") == h
    assert SECRETS.code_hash(REQUEST, SUBJECT, "123457") != h
    assert SECRETS.code_hash("6b03d9f084ec72fed9b96716", SUBJECT, "123456") != h
    assert JourneySecrets(b"j" * 32).code_hash(REQUEST, SUBJECT, "123456") != h  # another key


def test_a_link_names_its_subject_and_cannot_be_forged() -> None:
    token = SECRETS.link_token(REQUEST, SUBJECT)
    assert re.fullmatch(r"[A-Za-z0-9_-]{59}", token)
    target = SECRETS.parse_link_token(token)
    assert target is not None and (target.request_id, target.subject_id) == (REQUEST, SUBJECT)
    assert SECRETS.link_token(REQUEST, SUBJECT) == token  # the same link on every resend
    for bad in (
        token[:-1] + ("A" if token[-1] != "A" else "B"),
        token[:-2],
        token + "A",
        "",
        "!" * 59,
        "A" * 500,
        JourneySecrets(b"j" * 32).link_token(REQUEST, SUBJECT),
    ):
        assert SECRETS.parse_link_token(bad) is None, bad


def test_a_link_token_has_exactly_one_spelling() -> None:
    tokens = [SECRETS.link_token(REQUEST, f"4e487b20-6a5a-4e0d-9d73-c172efcb2c{n:02x}") for n in range(40)]
    with_dash = next(t for t in tokens if "-" in t or "_" in t)  # so the + and / spelling differs
    for token in {tokens[0], with_dash}:
        assert SECRETS.parse_link_token(token) is not None
        for other in _spellings_of(token):
            assert other != token
            assert SECRETS.parse_link_token(other) is None, other


def test_page_sessions_expire_and_belong_to_one_link() -> None:
    token = SECRETS.link_token(REQUEST, SUBJECT)
    other = SECRETS.link_token(REQUEST, "11111111-2222-4333-8444-555555555555")
    session = SECRETS.session_for(token, now=1_000_000)
    assert SECRETS.session_valid(token, session, now=1_000_000 + SESSION_LIFETIME_SECONDS)
    assert not SECRETS.session_valid(token, session, now=1_000_001 + SESSION_LIFETIME_SECONDS)
    assert not SECRETS.session_valid(other, session, now=1_000_000)
    assert not SECRETS.session_valid(token, session.replace(".", ".x"), now=1_000_000)
    for bad in (None, "", "abc", "1000000.", "x.y", "9" * 200):
        assert not SECRETS.session_valid(token, bad, now=1_000_000)
    issued, mac = session.split(".", 1)  # the same time spelled otherwise is not the session
    arabic = "".join(chr(0x660 + int(d)) for d in issued)
    for other in (f"0{issued}.{mac}", f"+{issued}.{mac}", f"{arabic}.{mac}", f" {issued}.{mac}"):
        assert not SECRETS.session_valid(token, other, now=1_000_000), other


def test_contacts_are_masked_on_the_page() -> None:
    assert mask_contact("ana@example.com") == "a\u2022\u2022\u2022@example.com"
    assert mask_contact("+351912345678").endswith("5678") and "91234" not in mask_contact("+351912345678")


def test_every_language_has_every_text_with_the_same_placeholders() -> None:
    fields = re.compile(r"{(\w+)}")
    english = i18n.CATALOG["ENG"]
    assert set(i18n.CATALOG) == set(i18n.LANGUAGES)
    for language, texts in i18n.CATALOG.items():
        assert set(texts) == set(english), language
        for key, value in texts.items():
            assert set(fields.findall(value)) == set(fields.findall(english[key])), (language, key)
            if language != "ENG" and key not in ("action", "document_heading"):
                assert value != english[key], f"{language}.{key} is not translated"
    assert i18n.text("XXX", "continue") == "Continue"  # unknown languages fall back to ENG


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


@pytest.mark.parametrize(
    ("origin", "loopback", "expected"),
    [
        ("https://app.example.com", False, "https://app.example.com"),
        ("HTTPS://App.Example.com:8443/", False, "https://app.example.com:8443"),
        ("http://localhost:5173", True, "http://localhost:5173"),
        ("http://127.0.0.1:8080", True, "http://127.0.0.1:8080"),
    ],
)
def test_allowed_frame_origins(origin: str, loopback: bool, expected: str) -> None:
    assert check_frame_origin(origin, loopback) == expected


@pytest.mark.parametrize(
    "origin",
    [
        "http://app.example.com",
        "http://localhost:5173",
        "https://app.example.com/path",
        "app.example.com",
        "https://user@app.example.com",
        "https://app.example.com?x=1",
        "javascript:alert(1)",
        "https://",
        "https://app.example.com:99999",
        "*",
    ],
)
def test_refused_frame_origins(origin: str) -> None:
    with pytest.raises(ValueError):
        check_frame_origin(origin, allow_loopback_http=False)
