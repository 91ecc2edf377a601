"""The subject's approval page names each userParam by its label in the page's language (issue
34), writes its value with its unit and its description under it; a param without a label reads
as words made from its name; the raw name is never shown."""

from __future__ import annotations

import html
import re
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from store import actions
from tests.support.api_client import SignedClient, policy_request

BUDGET = {
    "name": "Pay invoices",
    "executionParams": [{"name": "amount", "type": "number"}],
    "userParams": [
        {
            "name": "weeklyLimit",
            "type": "number",
            "label": {"ENG": "Weekly limit", "PRT": "Limite semanal"},
            "unit": "EUR",
            "description": "Paid at most this much in a week.",
            "descriptions": {"PRT": "Pago no máximo isto por semana."},
        },
        {"name": "payeeIBANs", "type": "array<string>"},
    ],
    "rules": [{"name": "positive", "expression": "executionParams.amount > 0"}],
}
EXPECTED = {
    "ENG": [("Weekly limit", "120 EUR", "Paid at most this much in a week."), ("Payee IBANs", "PT50", None)],
    "PRT": [("Limite semanal", "120 EUR", "Pago no máximo isto por semana."), ("Payee IBANs", "PT50", None)],
    "FRA": [("Weekly limit", "120 EUR", "Paid at most this much in a week."), ("Payee IBANs", "PT50", None)],
}


def params_shown(page: str) -> list[tuple[str, str, str | None]]:
    pairs = re.findall(r"<dt>([^<]*)</dt><dd>(.*?)</dd>", page, re.S)
    shown = []
    for label, rest in pairs:
        hint = re.search(r'<span class="param-hint">([^<]*)</span>', rest)
        value = re.sub(r"<span.*", "", rest, flags=re.S).strip()
        shown.append(
            (html.unescape(label), html.unescape(value), html.unescape(hint.group(1)) if hint else None)
        )
    return shown


async def page_of(api: SignedClient, engine: Engine, language: str) -> str:
    version = actions.install_published(engine, api.creds.organization_id, BUDGET)
    credential = {
        "type": "POLICY",
        "name": "Invoices",
        "action": {"id": version.action_id, "userParams": {"weeklyLimit": 120, "payeeIBANs": ["PT50"]}},
    }
    created = await api.post("/request", policy_request(credentials=[credential], language=language))
    assert created.status_code == 201, created.text
    request_id = created.json()["data"]["id"]
    link = await api.get(f"/request/link/{request_id}", params={"contact": "ana@example.com"})
    return str(link.json()["data"]["url"]).removeprefix("https://mandatum.test")


@pytest.mark.parametrize("language", ["ENG", "PRT", "FRA"])
async def test_each_param_reads_as_its_label_value_unit_and_description(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine, language: str
) -> None:
    page = (await http.get(await page_of(api, engine, language))).text
    assert params_shown(page) == EXPECTED[language]
    assert "weeklyLimit" not in page and "payeeIBANs" not in page  # never the raw names


def test_the_dashboard_editor_keeps_a_params_other_languages() -> None:
    """The editor shows the English label and the unit; the other languages ride along, so
    saving from the dashboard never drops them."""
    from api.routes.dashboard.actions_form import read_form, rows_of

    rows = rows_of({"name": "Pay invoices", **BUDGET})
    [row, _] = rows["userParams"]
    assert (row["label"], row["unit"]) == ("Weekly limit", "EUR") and "Limite semanal" in row["translations"]
    form: dict[str, Any] = {f"u-0-{k}": v for k, v in row.items()} | {"u-0-label": "Weekly cap"}
    draft = read_form(form, "Pay invoices", None)
    [param] = draft.raw["userParams"]
    assert param["label"] == {"PRT": "Limite semanal", "ENG": "Weekly cap"} and param["unit"] == "EUR"
    assert param["descriptions"] == {"PRT": "Pago no máximo isto por semana."}
