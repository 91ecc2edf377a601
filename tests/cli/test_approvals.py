"""`mandatum approval create|version|archive|list` and `mandatum workflow create|archive|list`:
the real command on a fresh SQLite database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.approvals import DOCUMENT, FORM, JSON, pdf
from tests.support.cli import Cli, cli_env
from trust.credentials import sri_sha256

FORM_YAML = """\
name: Onboarding form
type: FORM
internalId: form-1
fields:
  - {name: fullName, label: Full name, type: text, required: true}
  - {name: plan, label: Plan, type: choice, options: [basic, pro]}
"""


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    root = tmp_path_factory.mktemp("approval-cli")
    url = f"sqlite:///{root / 'cli.db'}"
    tool = Cli(cli_env(url, root / "var"), url, root / "var")
    done = tool.run("db", "upgrade")
    assert done.returncode == 0, done.stderr
    return tool


@pytest.fixture(scope="module")
def org_id(cli: Cli) -> str:
    return str(cli.json("org", "create", "--name", "Approvals Org")["organizationId"])


def write(tmp_path: Path, name: str, content: str | bytes | dict[str, Any]) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def test_approvals_from_files(cli: Cli, org_id: str, tmp_path: Path) -> None:
    form = cli.json("approval", "create", "--org", org_id, "--file", write(tmp_path, "form.yaml", FORM_YAML))
    assert (form["type"], form["version"], form["active"], form["internalId"]) == ("FORM", 1, True, "form-1")
    assert [f["name"] for f in form["content"]["fields"]] == ["fullName", "plan"]
    document = pdf(pages=2)
    doc = cli.json(
        "approval", "create", "--org", org_id,
        "--file", write(tmp_path, "doc.json", DOCUMENT), "--pdf", write(tmp_path, "lease.pdf", document),
    )  # fmt: skip
    assert doc["content"]["pdf"] == {"digestSRI": sri_sha256(document), "size": len(document), "pages": 2}
    terms = cli.json("approval", "create", "--org", org_id, "--file", write(tmp_path, "terms.json", JSON))
    v2 = cli.json(
        "approval", "version", "--org", org_id, "--approval", terms["approvalId"],
        "--file", write(tmp_path, "terms2.json", {**JSON, "json": {"terms": "v4"}}),
    )  # fmt: skip
    assert (v2["version"], v2["content"]) == (2, {"json": {"terms": "v4"}})

    flow = cli.json(
        "workflow", "create", "--org", org_id, "--name", "Lease",
        "--approval", doc["approvalId"], "--approval", terms["approvalId"],
    )  # fmt: skip
    assert flow["approvals"] == [doc["approvalId"], terms["approvalId"]]
    done = cli.run("approval", "archive", "--org", org_id, "--approval", form["approvalId"])
    assert done.returncode == 0 and "archived" in done.stdout
    listed = cli.json("approval", "list", "--org", org_id)
    assert [(a["approvalId"], a["active"], a["version"]) for a in listed] == [
        (form["approvalId"], False, 1),
        (doc["approvalId"], True, 1),
        (terms["approvalId"], True, 2),
    ]
    assert listed[1]["workflowIds"] == [flow["workflowId"]]
    assert cli.run("workflow", "archive", "--org", org_id, "--workflow", flow["workflowId"]).returncode == 0
    [shown] = cli.json("workflow", "list", "--org", org_id)
    assert (shown["workflowId"], shown["active"]) == (flow["workflowId"], False)
    text = cli.run("workflow", "list", "--org", org_id)
    assert "archived  Lease" in text.stdout and doc["approvalId"] in text.stdout


@pytest.mark.parametrize(
    ("args", "files", "message"),
    [
        (("approval", "create"), {"--file": ("a.txt", "x")}, "use a .yaml"),
        (("approval", "create"), {"--file": ("a.yaml", "- 1")}, "must be a mapping"),
        (("approval", "create"), {"--file": ("a.yaml", "name: x\ntype: FORM\n")}, "needs fields"),
        (("approval", "create"), {"--file": ("a.json", {**JSON, "fields": []})}, "fields"),
        (
            ("approval", "create"),
            {"--file": ("d.json", DOCUMENT), "--pdf": ("d.pdf", b"not a pdf")},
            "not a PDF",
        ),
        (
            ("approval", "create"),
            {"--file": ("f.json", FORM), "--pdf": ("d.pdf", b"%PDF-1.4")},
            "takes no PDF",
        ),
        (("approval", "version", "--approval", "0" * 24), {"--file": ("t.json", JSON)}, "not found"),
        (("approval", "archive", "--approval", "nope"), {}, "not an approval id"),
        (("workflow", "create", "--name", "w", "--approval", "0" * 24), {}, "not found"),
        (("workflow", "create", "--name", "w", "--approval", "x"), {}, "approvals"),
    ],
)
def test_refusals_exit_1_and_store_nothing(
    cli: Cli, tmp_path: Path, args: tuple[str, ...], files: dict[str, tuple[str, Any]], message: str
) -> None:
    org_id = str(cli.json("org", "create", "--name", "Refusals")["organizationId"])
    extra = [
        part for option, (name, content) in files.items() for part in (option, write(tmp_path, name, content))
    ]
    done = cli.run(*args[:2], "--org", org_id, *args[2:], *extra)
    assert done.returncode == 1 and message in done.stderr, done.stderr
    assert cli.json("approval", "list", "--org", org_id) == []
    assert cli.json("workflow", "list", "--org", org_id) == []
