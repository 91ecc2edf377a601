"""``bench.verify_instructions``' own parts: the dump it reads is the one its round asked for, the
counts per call and the ratio it prints, and the command the API runs under."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import verify_instructions as vi

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


def test_the_dump_read_is_the_one_labelled_by_the_round(tmp_path: Path) -> None:
    out = tmp_path / "callgrind.out"
    out.write_text("")  # callgrind's own file at exit, empty until then
    for part, (label, total) in enumerate([("me-0", 2_250_000), ("verify-0", 11_300_000), ("me-1", 7)], 1):
        (tmp_path / f"callgrind.out.{part}").write_text(DUMP.format(part=part, label=label, total=total))
    assert vi.dumped_total(out, "verify-0") == 11_300_000
    assert vi.dumped_total(out, "me-0") == 2_250_000
    with pytest.raises(RuntimeError, match="no callgrind dump labelled 'verify-1'"):
        vi.dumped_total(out, "verify-1")
    # a label that only starts another's is not it
    with pytest.raises(RuntimeError, match="labelled 'me'"):
        vi.dumped_total(out, "me")


def test_a_dump_without_totals_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "callgrind.out"
    (tmp_path / "callgrind.out.1").write_text(
        DUMP.format(part=1, label="me-0", total=1).replace("totals: 1\n", "")
    )
    with pytest.raises(RuntimeError, match="holds no totals line"):
        vi.dumped_total(out, "me-0")


def test_the_report_gives_each_kind_its_mean_and_the_ratio() -> None:
    lines = vi.report({vi.KINDS[0]: [2.2e6, 2.4e6], vi.KINDS[1]: [11e6, 12e6]})
    assert "2.300 M per call (rounds: 2.200, 2.400)" in lines[0]
    assert "11.500 M per call (rounds: 11.000, 12.000)" in lines[1]
    assert lines[2].split()[-1] == f"{2.3 / 11.5:.3f}"


def test_the_api_runs_under_callgrind_counting_nothing_until_told(tmp_path: Path) -> None:
    prefix = vi.callgrind_prefix(tmp_path / "cg.out")
    assert prefix[:3] == ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
    assert prefix[3] == f"--callgrind-out-file={tmp_path / 'cg.out'}"


@pytest.mark.parametrize("option", ["--n", "--rounds", "--warmup", "--concurrency", "--mandates"])
def test_a_count_under_one_is_refused(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        vi.parse_args([option, "0"])
    assert "every count must be at least 1" in capsys.readouterr().err
    assert vi.parse_args([]).n == 150
