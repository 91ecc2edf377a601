"""The parts of the use-limits verify benchmark (bench/verify_limits.py), not its speed: the limited
action it publishes, its mandates' verifications allowed and counted on both limits, the order of
its rounds, and the summary it computes from what the rounds measured."""

from __future__ import annotations

import json
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import Engine

from bench import verify_limits as bench
from bench import verify_setup as setup
from bench.verify_load import Outcome
from core.settings import Settings
from tests.support.api_client import SignedClient
from tests.support.mandates import issued_mandate
from tests.support.presentations import checked, presented, verify

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")


async def test_the_limited_action_is_the_example_under_two_limits_that_count(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings
) -> None:
    action_id = bench.install_limited_action(settings.sqlalchemy_url, api.creds.organization_id)
    mandate = await issued_mandate(api, temporal, credentials=[bench.credential_of(action_id)])
    signed = mandate["w3cCredential"]["credentialSubject"]["mandate"]
    assert signed["limits"] == [
        {"name": "uses", "kind": "executions", "max": bench.NEVER_SPENT_USES},
        {"name": "budget", "kind": "sum", "max": bench.NEVER_SPENT_BUDGET, "param": "amount", "unit": "EUR"},
    ]
    assert signed["action"]["id"] == action_id and signed["action"]["userParams"] == setup.USER_PARAMS
    for n in (1, 2):  # what the benchmark sends: allowed, both rules pass, both limits counted
        vp = (await presented(api, mandate["id"]))["presentation"]
        body = checked(await verify(api, vp, setup.EXECUTION_PARAMS), engine, settings)
        assert [e["result"] for e in body["evaluations"]] == ["pass", "pass"]
        assert [(u["name"], u["used"]) for u in body["limits"]] == [("uses", n), ("budget", n * bench.AMOUNT)]
    counted = bench.usage_counted(settings.sqlalchemy_url, [mandate["id"]])
    assert counted == (2, 2 * bench.AMOUNT)


async def test_the_plain_mandates_have_no_limits(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings
) -> None:
    """The baseline's mandates are the example action's, with nothing to count."""
    mandate = await issued_mandate(api, temporal, credentials=[setup.RENT])
    assert "limits" not in mandate["w3cCredential"]["credentialSubject"]["mandate"]
    vp = (await presented(api, mandate["id"]))["presentation"]
    body = checked(await verify(api, vp, setup.EXECUTION_PARAMS), engine, settings)
    assert "limits" not in body
    assert bench.usage_counted(settings.sqlalchemy_url, [mandate["id"]]) == (0, Decimal(0))


def test_each_kind_goes_first_in_every_other_round() -> None:
    orders = [bench.round_order(r) for r in range(6)]
    assert orders[0] == ("plain", "limited") and orders[1] == ("limited", "plain")
    assert [o[0] for o in orders].count("plain") == 3 and all(
        sorted(o) == sorted(bench.KINDS) for o in orders
    )


def series(name: str, calls: int, seconds: float, errors: int = 0) -> setup.Series:
    out = Outcome(sent=calls, latencies=[0.01] * calls, seconds=seconds)
    made = setup.Series(name)
    made.add(out, {"api": 0.002 * calls}, errors, calls * 2)
    return made


@pytest.mark.parametrize(
    ("limited_calls", "errors", "allowed", "counted", "checks"),
    [
        (90, 0, 90, (90, Decimal(90 * 950)), (True, True, True)),
        (80, 0, 80, (80, Decimal(80 * 950)), (False, True, True)),
        (90, 2, 88, (88, Decimal(88 * 950)), (True, False, True)),
        (90, 0, 90, (90, Decimal(89 * 950)), (True, True, False)),  # a use counted without its amount
    ],
)
def test_the_summary_has_the_ratio_and_its_checks(
    limited_calls: int,
    errors: int,
    allowed: int,
    counted: tuple[int, Decimal],
    checks: tuple[bool, bool, bool],
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = bench.parse_args([])
    stack = SimpleNamespace(settings=SimpleNamespace(database_url=""))
    measured = {
        "plain": series("no limits", 100, 1.0),
        "limited": series("limits", limited_calls, 1.0, errors),
    }
    result = bench.summarize(args, stack, measured, {}, 0.5, allowed, counted)  # type: ignore[arg-type]
    assert result["ratio_limited_to_plain"] == pytest.approx(limited_calls / 100)
    assert tuple(result["checks"].values()) == checks
    assert result["config"]["database"] == "sqlite" and len(result["config"]["load_average"]) == 2
    json.dumps(result)  # what bench/results/ gets
    shown = capsys.readouterr().out
    assert f"{limited_calls / 100:.2f}" in shown and "load average 0.5 before" in shown
