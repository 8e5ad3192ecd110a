"""A malformed scenario file exits 2 naming the file, the scenario and the field; nothing runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from vocero.app.cli import main
from vocero.evals.format import ScenarioError, find_files, load_files

HERE = Path(__file__).parent
GOOD_TURN = '      - say: "What is the status of order A123?"\n'


def _write(tmp_path: Path, scenarios: str, head: str = "caller: demo-token\n") -> Path:
    file = tmp_path / "broken.yaml"
    file.write_text(f"{head}scenarios:\n{scenarios}", encoding="utf-8")
    return file


@pytest.mark.process
@pytest.mark.parametrize(
    ("scenarios", "field"),
    [
        ("  - name: typo\n    turns:\n" + GOOD_TURN
         + "        expect: {heard: {contians: [shipped]}}\n", "turns[0].expect.heard.contians"),
        ("  - name: bad-matcher\n    turns:\n" + GOOD_TURN
         + "        expect:\n          tools: [{tool: t, arguments: {order_id: {like: A1}}}]\n",
         "turns[0].expect.tools[0].arguments.order_id"),
        ("  - name: bad-regex\n    turns:\n      - if_asked: \"(unclosed\"\n        say: hi\n",
         "turns[0].if_asked"),
        ("  - name: no-turns\n    turns: []\n", "turns"),
        ("  - name: silent\n    turns:\n      - expect: {stopped: true}\n", "turns[0]"),
        ("  - name: lonely-then\n    turns:\n      - say: hi\n        then: stop\n",
         "turns[0].barge_in_after_ms"),
        ("  - name: bad-times\n    turns:\n" + GOOD_TURN
         + "        expect: {tools: [{tool: t, times: many}]}\n", "turns[0].expect.tools[0].times"),
        ("  - name: bad-day\n    turns:\n" + GOOD_TURN
         + "    expect:\n      followups: [{due: {datetime: \"someday 16:00\"}}]\n",
         "expect.followups[0].due"),
        ("  - name: bad-else\n    turns:\n      - {if_asked: x, say: y, else: maybe}\n",
         "turns[0].else"),
    ],
)
def test_a_malformed_scenario_exits_2_naming_file_scenario_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scenarios: str, field: str
) -> None:
    file = _write(tmp_path, scenarios)
    assert main(["eval", str(file)]) == 2
    err = capsys.readouterr().err
    name = scenarios.split("name: ", 1)[1].split("\n", 1)[0]
    assert str(file) in err
    assert f"scenario {name}" in err
    assert f"field {field}" in err


@pytest.mark.process
def test_an_unknown_caller_token_is_malformed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _write(tmp_path, "  - name: stranger\n    turns:\n" + GOOD_TURN,
                  head="caller: nobody-token\n")
    assert main(["eval", str(file)]) == 2
    err = capsys.readouterr().err
    assert "scenario stranger" in err and "field caller" in err and "nobody-token" in err


def test_a_missing_sim_script_and_duplicate_names_are_malformed(tmp_path: Path) -> None:
    file = _write(tmp_path, "  - name: a\n    turns:\n" + GOOD_TURN, head="sim: nowhere.yaml\n")
    with pytest.raises(ScenarioError) as missing:
        load_files([str(file)])
    assert (missing.value.scenario, missing.value.field) == ("a", "sim")
    twice = _write(tmp_path, ("  - name: a\n    turns:\n" + GOOD_TURN) * 2)
    with pytest.raises(ScenarioError) as duplicate:
        load_files([str(twice)])
    assert (duplicate.value.scenario, duplicate.value.field) == ("a", "name")


def test_a_file_level_field_is_named_with_no_scenario(tmp_path: Path) -> None:
    file = tmp_path / "top.yaml"
    file.write_text("caller: demo-token\nscenarioz: []\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as error:
        load_files([str(file)])
    assert error.value.scenario == "-" and "scenarioz" in error.value.field


def test_a_folder_skips_the_sim_scripts_beside_its_scenarios() -> None:
    files = find_files([str(HERE / "scenarios")])
    assert [f.name for f in files] == ["orders.yaml"]
    scenarios = load_files([str(HERE / "scenarios")])
    assert [s.name for s in scenarios] == ["order-status", "reschedule", "barge-in"]
    assert all(s.sim_path.endswith("sim.yaml") and s.caller == "demo-token" for s in scenarios)
