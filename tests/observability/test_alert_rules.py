"""The Prometheus alerting rules (``deploy/prometheus/alerts.yml``) load, each is complete, and every
metric their expressions name is one the service exports, one of the Temporal SDK's that the worker
exports, or Prometheus's ``up``: renaming a metric without its rules fails here (promtool is not
available, so the expressions are read with a small tokenizer)."""

from __future__ import annotations

import re
from pathlib import Path

import temporalio.bridge
import yaml

from core.observe import metrics

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alerts.yml"
DURATION = re.compile(r"([0-9]+(ms|s|m|h|d|w|y))+")
KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
}
BUILTIN = {"up"}  # Prometheus's own, per scrape target


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: strings, label matchers, ranges and
    ``by (...)``-like lists removed, then every identifier not called as a function nor a keyword."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\boffset\s+[0-9a-z]+", " ", text)
    names = set()
    for found in re.finditer(r"(?<![0-9A-Za-z_.])[A-Za-z_:][A-Za-z0-9_:]*", text):
        rest = text[found.end() :].lstrip()
        word = found.group()
        if rest.startswith("(") or word in KEYWORDS or re.fullmatch(r"[0-9.e+-]+", word):
            continue
        names.add(word)
    return names


def sdk_metric(name: str, bridge: bytes) -> bool:
    """A Temporal SDK metric as the worker's exporter names it (``temporal_`` + sdk-core's name +
    ``_seconds`` for durations, ``_total`` for counters, a histogram's series), whose sdk-core name is
    in the installed bridge and among those ``core.observe.metrics.SDK_METRICS`` says we use."""
    if not name.startswith(metrics.TEMPORAL_PREFIX):
        return False
    base = name.removeprefix(metrics.TEMPORAL_PREFIX)
    for suffix in ("_bucket", "_sum", "_count"):
        base = base.removesuffix(suffix)
    base = base.removesuffix("_total").removesuffix("_seconds")
    return base in metrics.SDK_METRICS and base.encode() in bridge


def test_the_tokenizer_finds_names_and_only_names() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le, route) (rate(a_seconds_bucket{route=~"/x|/y", s="by"}[5m]))) '
        "> 0.25 and on (instance) b_total offset 1h unless up == 0"
    )
    assert metric_names(expr) == {"a_seconds_bucket", "b_total", "up"}


def test_every_rule_is_complete_and_names_exported_metrics() -> None:
    doc = yaml.safe_load(RULES.read_text())
    rules = [rule for group in doc["groups"] for rule in group["rules"]]
    assert len(rules) >= 10
    names = [rule["alert"] for rule in rules]
    assert len(set(names)) == len(names)
    exported = metrics.exported_names()
    bridge = Path(temporalio.bridge.__file__).with_name("temporal_sdk_bridge.abi3.so").read_bytes()
    used: set[str] = set()
    for group in doc["groups"]:
        assert re.fullmatch(r"mandatum-[a-z]+", group["name"])
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert re.fullmatch(r"Mandatum[A-Za-z0-9]+", rule["alert"])
        assert DURATION.fullmatch(str(rule["for"])), rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"].strip() and rule["annotations"]["description"].strip()
        assert rule["expr"].count("(") == rule["expr"].count(")"), rule["alert"]
        found = metric_names(rule["expr"])
        assert found, rule["alert"]
        unknown = {n for n in found if n not in exported and n not in BUILTIN and not sdk_metric(n, bridge)}
        assert not unknown, f"{rule['alert']} names metrics nobody exports: {unknown}"
        used |= found
    # every business metric has a rule, and so have the SDK's that SDK_METRICS lists
    for family in (
        "mandatum_http_requests_total",
        "mandatum_webhook_deliveries_total",
        "mandatum_codes_failed_total",
    ):
        assert family in used
    assert {n for n in used if n.startswith("mandatum_audit")} == {"mandatum_audit_append_seconds_bucket"}
    assert any(n.startswith(metrics.TEMPORAL_PREFIX) for n in used)
    assert "mandatum_renamed_metric_total" not in exported  # the check can say no


def test_the_sdk_names_are_the_installed_sdks() -> None:
    bridge = Path(temporalio.bridge.__file__).with_name("temporal_sdk_bridge.abi3.so").read_bytes()
    assert all(name.encode() in bridge for name in metrics.SDK_METRICS)
    assert not sdk_metric("temporal_no_such_metric_total", bridge)
    assert sdk_metric("temporal_activity_schedule_to_start_latency_seconds_bucket", bridge)
