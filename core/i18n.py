"""Every text a subject sees, in the four languages of CONTRACT 8: the code message and the pages.

``text(language, key, **values)`` formats one entry; an unknown language falls back to ENG, and a
test checks that every language has every key with the same placeholders. ``number`` writes a
number as the language does (``1,000.5``, ``1000,5``, ``10 000,5``) and ``one`` says whether a
count takes the singular (French: 0 and 1, the others: 1).
"""

from __future__ import annotations

from decimal import Decimal

from core.i18n_catalog import CATALOG

LANGUAGES = ("ENG", "PRT", "SPA", "FRA")
DEFAULT_LANGUAGE = "ENG"
HTML_LANG = {"ENG": "en", "PRT": "pt", "SPA": "es", "FRA": "fr"}
LANGUAGE_NAMES = {"ENG": "English", "PRT": "Português", "SPA": "Español", "FRA": "Français"}


def language_of(value: str | None) -> str:
    return value if value in CATALOG else DEFAULT_LANGUAGE


def text(language: str | None, key: str, **values: object) -> str:
    return CATALOG[language_of(language)][key].format(**values)


# each language's grouping and decimal separators, and the fewest digits of a whole part that is
# grouped (CLDR: European Portuguese and Spanish write 1000 but 10 000 and 10.000; the Portuguese
# group is a no-break space, the French one a narrow no-break space)
NUMBER_STYLE = {
    "ENG": (",", ".", 4),
    "PRT": ("\u00a0", ",", 5),
    "SPA": (".", ",", 5),
    "FRA": ("\u202f", ",", 4),
}


def number(language: str | None, value: Decimal | int | float) -> str:
    """``value`` as the language writes it, with as many decimals as it has (no trailing zero)."""
    group, point, grouped_from = NUMBER_STYLE[language_of(language)]
    exact = Decimal(str(value))
    whole, _, fraction = format(abs(exact), "f").partition(".")
    fraction = fraction.rstrip("0")
    if len(whole) >= grouped_from:
        head = len(whole) % 3 or 3
        whole = group.join([whole[:head], *(whole[i : i + 3] for i in range(head, len(whole), 3))])
    return ("-" if exact < 0 else "") + whole + (point + fraction if fraction else "")


def one(language: str | None, count: Decimal | int | float) -> bool:
    """Whether ``count`` takes the singular: 1, and in French 0 too."""
    return count == 1 or (language_of(language) == "FRA" and count == 0)
