"""core.i18n: every language has every text, with the same placeholders."""

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
            if language != "ENG" and key not in ("action", "document_heading"):
                assert value != english[key], f"{language}.{key} is not translated"
    assert i18n.text("XXX", "continue") == "Continue"  # unknown languages fall back to ENG
