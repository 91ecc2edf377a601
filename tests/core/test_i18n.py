"""core.i18n: every language has every text, with the same placeholders; numbers and plurals as
each language writes them."""

from __future__ import annotations

import re

from core import i18n


def test_every_language_has_every_text_with_the_same_placeholders() -> None:
    fields = re.compile(r"{(\w+)}")
    english = i18n.CATALOG["ENG"]
    assert set(i18n.CATALOG) == set(i18n.LANGUAGES)
    for language, texts in i18n.CATALOG.items():
        assert set(texts) == set(english), language
        for key, value in texts.items():
            assert set(fields.findall(value)) == set(fields.findall(english[key])), (language, key)
            if language != "ENG" and key not in ("action", "document_heading", "limit_described"):
                assert value != english[key], f"{language}.{key} is not translated"
    assert i18n.text("XXX", "continue") == "Continue"  # unknown languages fall back to ENG


NNBSP, NBSP = "\u202f", "\u00a0"


def test_numbers_are_written_as_each_language_writes_them() -> None:
    cases = [0, 7, 999, 1000, 10000, 1234567.25, 12.50, 0.1, 10**15]
    assert [i18n.number("ENG", v) for v in cases] == [
        "0", "7", "999", "1,000", "10,000", "1,234,567.25", "12.5", "0.1", "1,000,000,000,000,000",
    ]  # fmt: skip
    assert [i18n.number("PRT", v) for v in cases[3:6]] == ["1000", f"10{NBSP}000", f"1{NBSP}234{NBSP}567,25"]
    assert [i18n.number("SPA", v) for v in cases[3:6]] == ["1000", "10.000", "1.234.567,25"]
    assert [i18n.number("FRA", v) for v in cases[3:6]] == [
        f"1{NNBSP}000",
        f"10{NNBSP}000",
        f"1{NNBSP}234{NNBSP}567,25",
    ]
    assert [i18n.one(lang, 0) for lang in i18n.LANGUAGES] == [False, False, False, True]
    assert all(i18n.one(lang, 1) and not i18n.one(lang, 2) for lang in i18n.LANGUAGES)
