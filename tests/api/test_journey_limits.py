"""The subject's approval page shows a mandate's use limits in words, in each of the four
languages (issue 31): counts with their plural, sums with their unit, periods as calendar periods
in UTC, numbers as the language writes them; never a limit's raw name. The executions bounds (the
action's and the request's maxExecutions) are one line, the smallest."""

from __future__ import annotations

import html
import re
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from core import i18n
from store import actions
from tests.support.api_client import SignedClient, policy_request
from tests.support.documents import LEASE

PAY = {
    "name": "Pay invoices",
    "executionParams": [{"name": "amount", "type": "number"}],
    "userParams": [{"name": "monthlyBudget", "type": "number"}],
    "rules": [{"name": "positive", "expression": "executionParams.amount > 0"}],
    "limits": [
        {"name": "useCount", "kind": "executions", "max": 5},
        {
            "name": "monthly",
            "kind": "sum",
            "param": "amount",
            "max": "userParams.monthlyBudget",
            "period": "P1M",
            "unit": "EUR",
        },
        {"name": "daily", "kind": "rate", "max": 3, "period": "P1D"},
        {"name": "lifetime", "kind": "sum", "param": "amount", "max": 1000, "unit": "EUR"},
        {"name": "weeklyPoints", "kind": "sum", "param": "amount", "max": 12500, "period": "P1W"},
        {
            "name": "supplierTotal",
            "kind": "sum",
            "param": "amount",
            "max": 2500.5,
            "description": "Invoices paid, in the supplier's currency",
        },
    ],
}
DESCRIBED = "Invoices paid, in the supplier's currency"
NNBSP, NBSP = "\u202f", "\u00a0"
EXPECTED = {
    "ENG": [
        "At most 5 uses",
        "At most 500 EUR per calendar month (UTC)",
        "At most 3 uses per day (UTC)",
        "At most 1,000 EUR in total",
        "At most 12,500 in total amount per week (Monday to Sunday, UTC)",
        f"At most 2,500.5 in total: {DESCRIBED}",
    ],
    "PRT": [
        "No máximo 5 utilizações",
        "No máximo 500 EUR por mês civil (UTC)",
        "No máximo 3 utilizações por dia (UTC)",
        "No máximo 1000 EUR no total",
        f"No máximo 12{NBSP}500 de montante total por semana (de segunda a domingo, UTC)",
        f"No máximo 2500,5 no total: {DESCRIBED}",
    ],
    "SPA": [
        "Como máximo 5 usos",
        "Como máximo 500 EUR por mes natural (UTC)",
        "Como máximo 3 usos por día (UTC)",
        "Como máximo 1000 EUR en total",
        "Como máximo 12.500 de importe total por semana (de lunes a domingo, UTC)",
        f"Como máximo 2500,5 en total: {DESCRIBED}",
    ],
    "FRA": [
        "Au plus 5 utilisations",
        "Au plus 500 EUR par mois civil (UTC)",
        "Au plus 3 utilisations par jour (UTC)",
        f"Au plus 1{NNBSP}000 EUR au total",
        f"Au plus 12{NNBSP}500 de montant total par semaine (du lundi au dimanche, UTC)",
        f"Au plus 2{NNBSP}500,5 au total : {DESCRIBED}",
    ],
}
RAW = (
    "useCount",
    "monthly",
    "daily",
    "lifetime",
    "weeklyPoints",
    "supplierTotal",
    "maxExecutions",
    "P1",
    "(amount)",
)


def limit_lists(page: str) -> list[tuple[str, list[str]]]:
    """Each list of limits on the page: its heading and its items, as a person reads them."""
    found = re.findall(
        r'<p id="limits-[0-9a-f]{24}"><strong>([^<]*)</strong></p>\s*<ul class="limits"[^>]*>(.*?)</ul>',
        page,
        re.S,
    )
    return [
        (html.unescape(heading), [html.unescape(i) for i in re.findall(r"<li>(.*?)</li>", items, re.S)])
        for heading, items in found
    ]


async def page_of(api: SignedClient, http: httpx.AsyncClient, credential: dict[str, Any], **body: Any) -> str:
    """The approval page of a new request for ``credential``, with the request's other fields."""
    created = await api.post("/request", policy_request(credentials=[credential], **body))
    assert created.status_code == 201, created.text
    request_id = created.json()["data"]["id"]
    link = await api.get(f"/request/link/{request_id}", params={"contact": "ana@example.com"})
    return link.json()["data"]["url"].removeprefix("https://mandatum.test")


def pay(engine: Engine, api: SignedClient, **extra: Any) -> dict[str, Any]:
    version = actions.install_published(engine, api.creds.organization_id, PAY)
    return {
        "type": "POLICY",
        "name": "Invoices",
        "action": {"id": version.action_id, "userParams": {"monthlyBudget": 500}},
        **extra,
    }


@pytest.mark.parametrize("language", i18n.LANGUAGES)
async def test_each_limit_is_shown_in_words_in_the_pages_language(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine, language: str
) -> None:
    url = await page_of(api, http, pay(engine, api, maxExecutions=8), language=language)
    page = await http.get(url)
    assert page.status_code == 200
    heading = i18n.text(language, "limits_heading")
    # maxExecutions 8 is above the action's 5 uses: one line, the smaller
    assert limit_lists(page.text) == [(heading, EXPECTED[language])]
    shown = page.text[page.text.index('<ul class="limits"') : page.text.index("</ul>")]
    assert [raw for raw in RAW if raw in shown] == []
    # the same request read in another language, by the page's language links
    other = "FRA" if language != "FRA" else "ENG"
    again = await http.get(url, params={"lang": other})
    assert limit_lists(again.text) == [(i18n.text(other, "limits_heading"), EXPECTED[other])]


@pytest.mark.parametrize(
    ("language", "one_use", "two_uses"),
    [
        ("ENG", "At most 1 use", "At most 2 uses"),
        ("PRT", "No máximo 1 utilização", "No máximo 2 utilizações"),
        ("SPA", "Como máximo 1 uso", "Como máximo 2 usos"),
        ("FRA", "Au plus 1 utilisation", "Au plus 2 utilisations"),
    ],
)
async def test_max_executions_is_a_count_of_uses_the_smaller_one_shown(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine, language: str, one_use: str, two_uses: str
) -> None:
    alone = {**policy_request()["credentials"][0], "maxExecutions": 1}  # an action without limits
    page = (await http.get(await page_of(api, http, alone, language=language))).text
    assert limit_lists(page) == [(i18n.text(language, "limits_heading"), [one_use])]

    below = await http.get(await page_of(api, http, pay(engine, api, maxExecutions=2), language=language))
    [(_, lines)] = limit_lists(below.text)
    assert lines[0] == two_uses and len(lines) == 6  # 2 below the action's 5: the 5 is not shown
    assert EXPECTED[language][0] not in lines


async def test_a_credential_without_limits_shows_none(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine
) -> None:
    plain = policy_request()["credentials"][0]
    url = await page_of(api, http, plain, language="SPA")
    page = (await http.get(url)).text
    assert "Max amount" in page and limit_lists(page) == [] and 'class="limits"' not in page
    assert i18n.text("SPA", "limits_heading") not in page
    created = await api.post("/request", policy_request(credentials=[LEASE, pay(engine, api)]))
    assert created.status_code == 201, created.text
    link = await api.get(
        f"/request/link/{created.json()['data']['id']}", params={"contact": "ana@example.com"}
    )
    mixed = (await http.get(link.json()["data"]["url"].removeprefix("https://mandatum.test"))).text
    # the document has no limits; the mandate after it has its own, without maxExecutions
    assert limit_lists(mixed) == [("Use limits", EXPECTED["ENG"])]
    assert mixed.index("Rua da Conceição 1, Lisboa") < mixed.index('<ul class="limits"')
