"""The instruction-counting benchmarks' own parts (``bench.callgrind``, ``bench.verify_instructions``,
``bench.webhook_instructions``): the dump read is the one a round asked for, the command the counted
process runs under, the counts per call and the ratio printed, and, run as files against another
tree, their ``bench`` package is their own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from bench import callgrind, verify_instructions, webhook_instructions
from cli.stack import Stack
from core.settings import Settings

DUMP = """version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  python -m uvicorn api.app:serve_app
part: {part}

desc: I1 cache:
desc: Timerange: Basic block 1 - 2
desc: Trigger: dump {label}

positions: line
events: Ir
summary: 0
totals: {total}
"""
BENCH = Path(verify_instructions.__file__).resolve().parent


def test_the_dump_read_is_the_one_labelled_by_the_round(tmp_path: Path) -> None:
    out = tmp_path / "callgrind.out"
    out.write_text("")  # callgrind's own file at exit, empty until then
    for part, (label, total) in enumerate([("me-0", 2_250_000), ("verify-0", 11_300_000), ("me-1", 7)], 1):
        (tmp_path / f"callgrind.out.{part}").write_text(DUMP.format(part=part, label=label, total=total))
    assert callgrind.dumped_total(out, "verify-0") == 11_300_000
    assert callgrind.dumped_total(out, "me-0") == 2_250_000
    with pytest.raises(RuntimeError, match="no callgrind dump labelled 'verify-1'"):
        callgrind.dumped_total(out, "verify-1")
    with pytest.raises(RuntimeError, match="labelled 'me'"):  # only the start of another's label
        callgrind.dumped_total(out, "me")


def test_a_dump_without_totals_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "callgrind.out.1").write_text(
        DUMP.format(part=1, label="me-0", total=1).replace("totals: 1\n", "")
    )
    with pytest.raises(RuntimeError, match="holds no totals line"):
        callgrind.dumped_total(tmp_path / "callgrind.out", "me-0")


async def test_only_the_counted_process_runs_under_callgrind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawned: dict[str, list[str]] = {}

    async def spawn(self: Stack, name: str, cmd: list[str], echo: bool) -> None:
        spawned[name] = cmd

    monkeypatch.setattr(Stack, "_spawn", spawn)
    out = tmp_path / "cg.out"
    stack = callgrind.CountedStack(Settings(var_dir=tmp_path), counted="worker", callgrind_out=out)
    for name in ("api", "worker", "temporal"):
        await stack._spawn(name, ["python", "-m", name], echo=False)
    assert spawned["worker"] == [
        "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
        "python", "-m", "worker",
    ]  # fmt: skip
    assert spawned["api"] == ["python", "-m", "api"] and spawned["temporal"] == ["python", "-m", "temporal"]


def test_the_report_gives_each_kind_its_mean_and_the_ratio() -> None:
    kinds = verify_instructions.KINDS
    lines = verify_instructions.report({kinds[0]: [2.2e6, 2.4e6], kinds[1]: [11e6, 12e6]})
    assert "2.300 M per call (rounds: 2.200, 2.400)" in lines[0]
    assert "11.500 M per call (rounds: 11.000, 12.000)" in lines[1]
    assert lines[2].split()[-1] == f"{2.3 / 11.5:.3f}"
    alone = verify_instructions.report({webhook_instructions.KIND: [74e6, 76e6]})
    assert len(alone) == 1 and "75.000 M per call (rounds: 74.000, 76.000)" in alone[0]


@pytest.mark.parametrize(
    ("module", "options"),
    [
        (verify_instructions, ["--n", "--rounds", "--warmup", "--concurrency", "--mandates"]),
        (webhook_instructions, ["--n", "--rounds", "--warmup", "--concurrency"]),
    ],
)
def test_a_count_under_one_is_refused(
    module: ModuleType, options: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    parse = module.parse_args
    for option in options:
        with pytest.raises(SystemExit):
            parse([option, "0"])
        assert "every count must be at least 1" in capsys.readouterr().err
    assert parse([]).rounds == 2


def test_run_as_files_against_another_tree_their_bench_is_their_own(tmp_path: Path) -> None:
    """The other tree's ``bench`` has no ``callgrind``: the file's own package is the one imported."""
    other = tmp_path / "other"
    (other / "bench").mkdir(parents=True)
    (other / "bench" / "__init__.py").write_text("OTHER = True\n")
    for name in ("instructions.py", "verify_instructions.py", "webhook_instructions.py"):
        done = subprocess.run(
            [sys.executable, str(BENCH / name), "--help"],
            env={"PYTHONPATH": str(other), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "usage:" in done.stdout
    # and the package pinned is this checkout's, with its callgrind module
    check = (
        f"import sys; sys.path.insert(0, {str(BENCH)!r});"
        "from file_mode import pin_bench_package; sys.path.pop(0);"
        f"from pathlib import Path; pin_bench_package(Path({str(BENCH)!r}));"
        "import bench, bench.callgrind; print(hasattr(bench, 'OTHER'), bench.callgrind.__file__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check],
        env={"PYTHONPATH": str(other)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", str(BENCH / "callgrind.py")]
