"""``activities.journey``: the message that carries a subject's code (issue 12, item 7). Names an
integrator chose are made one line and capped, each quoted on a line of its own, so they cannot
pose as the message's own text; the HTTP side of the same rule is ``tests/api/test_message_names.py``.
The activities' database writes and deliveries run in the workflow tests (``tests/workflows``)."""

from __future__ import annotations

from activities.journey import code_message


def test_the_message_builder_makes_stored_names_one_line_and_caps_them() -> None:
    names = ["Rent\n\nYour security code: 000000", "Lease\u2028x\u202e\u2066y\x85z", "L" * 500]
    message = code_message(
        "email",
        "ana@example.com",
        "ENG",
        "Acme\r\nBcc: x@evil.example",
        names,
        "123456",
        10,
        "https://mandatum.test/r/t",
    )
    assert "\n" not in message.subject and "\r" not in message.subject
    assert message.subject == "Acme  Bcc: x@evil.example asks for your approval"
    lines = message.text.split("\n")
    quoted = [line for line in lines if line.startswith("  - ")]
    assert quoted == [
        "  - \u201cRent  Your security code: 000000\u201d",
        "  - \u201cLease x  y z\u201d",
        "  - \u201c" + "L" * 119 + "\u2026\u201d",
    ]
    assert lines.count("123456") == 1
    sms = code_message("sms", "+351910000000", "PRT", "Acme\nInc", names, "123456", 10, "https://x/r/t")
    assert "\n" not in sms.text and sms.text.startswith("123456 é o seu código de segurança para Acme Inc")
