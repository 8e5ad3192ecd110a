"""Reports of a run (docs/eval.md, "Reports"): JUnit XML, report.json and a static HTML page.

The page is plain HTML with every value escaped (:func:`html.escape`), its style in a file
beside it and no script at all, so it opens under a strict Content-Security-Policy."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html import escape
from pathlib import Path
from typing import Any

from vocero.evals.audio import SAMPLE_RATE, write_wav
from vocero.evals.client import TurnResult
from vocero.evals.runner import ScenarioResult, failure_text

CSP = ("default-src 'none'; style-src 'self'; media-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'")
CSS = """\
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #1b1f24;
       padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin: 0; }
.summary { margin-bottom: 1.5rem; color: #444; }
section.scenario { border: 1px solid #d0d7de; border-radius: 8px; margin: 1rem 0; padding: 1rem; }
section.pass { border-left: 6px solid #2da44e; } section.fail { border-left: 6px solid #cf222e; }
.verdict { font-weight: 700; } .pass .verdict { color: #1a7f37; } .fail .verdict { color: #cf222e; }
.description { color: #57606a; margin: .25rem 0 .75rem; }
pre.failure { background: #fff1f0; border: 1px solid #ffcecb; padding: .5rem; overflow-x: auto;
              white-space: pre-wrap; }
.turn { border-top: 1px dashed #d0d7de; padding: .6rem 0; }
.who { font-weight: 600; display: inline-block; min-width: 6rem; }
table { border-collapse: collapse; margin: .35rem 0; width: 100%; }
th, td { border: 1px solid #d0d7de; padding: .2rem .45rem; text-align: left; vertical-align: top;
         font-size: 13px; }
th { background: #f6f8fa; }
.admitted { color: #1a7f37; } .refused, .canceled, .stale, .expired { color: #9a6700; }
.latency { color: #57606a; font-size: 13px; }
audio { height: 2rem; vertical-align: middle; }
.skipped { color: #8c959f; font-style: italic; }
"""


FAVICON = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
           '<circle cx="8" cy="8" r="7" fill="#2da44e"/></svg>\n')


def write_junit(path: Path, results: list[ScenarioResult]) -> None:
    failures = sum(not r.passed for r in results)
    suite = ET.Element("testsuite", name="vocero eval", tests=str(len(results)),
                       failures=str(failures), errors="0",
                       time=f"{sum(r.duration_s for r in results):.3f}")
    for result in results:
        case = ET.SubElement(suite, "testcase", classname=Path(result.scenario.file).stem,
                             name=result.scenario.name, time=f"{result.duration_s:.3f}")
        if not result.passed:
            text = "\n\n".join(([result.error] if result.error else [])
                               + [failure_text(result, f) for f in result.failures]
                               + (["the server logged:\n" + "\n".join(result.server_problems)]
                                  if result.server_problems else []))
            first = result.error or (result.failures[0].what if result.failures else "failed")
            failure = ET.SubElement(case, "failure", message=first)
            failure.text = text
    root = ET.Element("testsuites")
    root.append(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "scenario"


def write_report(folder: Path, results: list[ScenarioResult], *, mode: str,
                 runners: str, transport: str = "websocket") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "audio").mkdir(exist_ok=True)
    data = {
        "mode": mode, "runners": runners, "transport": transport,
        "passed": sum(r.passed for r in results),
        "total": len(results), "scenarios": [_scenario_json(folder, r) for r in results],
    }
    (folder / "report.json").write_text(json.dumps(data, indent=2, sort_keys=True),
                                        encoding="utf-8")
    (folder / "report.css").write_text(CSS, encoding="utf-8")
    (folder / "favicon.svg").write_text(FAVICON, encoding="utf-8")
    (folder / "index.html").write_text(_page(data), encoding="utf-8")


def _scenario_json(folder: Path, result: ScenarioResult) -> dict[str, Any]:
    slug = _slug(f"{Path(result.scenario.file).stem}-{result.scenario.name}")
    return {
        "name": result.scenario.name, "file": result.scenario.file, "label": result.label,
        "description": result.scenario.description, "tags": result.scenario.tags,
        "passed": result.passed, "error": result.error, "session_id": result.session_id,
        "duration_s": round(result.duration_s, 3),
        "failures": [{"turn": f.turn, "what": f.what, "expected": f.expected,
                      "happened": f.happened, "text": failure_text(result, f)}
                     for f in result.failures],
        "turns": [_turn_json(folder, slug, t) for t in result.turns],
        "operations": result.operations, "followups": result.followups,
        "findings": result.findings,
        "tools": [_tool_json(r) for r in result.tools],
        "server_problems": result.server_problems, "server_log": result.server_log,
    }


def _tool_json(record: dict[str, Any]) -> dict[str, Any]:
    return {"server": record.get("server"), "tool": record.get("tool"),
            "arguments": record.get("arguments"), "status": record.get("status")}


def _turn_json(folder: Path, slug: str, turn: TurnResult) -> dict[str, Any]:
    audio: dict[str, str] = {}
    if turn.caller_audio:
        name = f"audio/{slug}-{turn.index}-caller.wav"
        write_wav(folder / name, turn.caller_audio, SAMPLE_RATE)
        audio["caller"] = name
    if turn.agent_audio:
        name = f"audio/{slug}-{turn.index}-agent.wav"
        write_wav(folder / name, bytes(turn.agent_audio), turn.agent_rate or 24_000)
        audio["agent"] = name
    return {
        "index": turn.index, "say": turn.say, "action": turn.action, "then": turn.then,
        "skipped": turn.skipped, "timed_out": turn.timed_out,
        "transcripts": turn.transcripts, "heard_text": turn.heard_text, "text": turn.text,
        "statuses": turn.statuses,
        "ttfa_ms": None if turn.ttfa_ms is None else round(turn.ttfa_ms, 1),
        "barge_in_stop_ms": None if turn.barge_in_stop_ms is None else round(
            turn.barge_in_stop_ms, 1),
        "barge": None if turn.barged_at is None else {
            "heard_ms": round(turn.barged_heard_ms or 0.0, 1),
            "after_first_audio_ms": None if turn.first_audio_at is None else round(
                (turn.barged_at - turn.first_audio_at) * 1000, 1)},
        "stops": turn.stops, "confirmations": turn.confirmations,
        "tool_statuses": turn.tool_statuses, "errors": turn.errors,
        "units": [{k: u.get(k) for k in ("unit_id", "generation_id", "kind", "text",
                                         "claim_keys", "disposition", "reason_code",
                                         "played_ms")} for u in turn.units],
        "tools": [_tool_json(r) for r in turn.tools],
        "audio": audio,
    }


def _page(data: dict[str, Any]) -> str:
    e = escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>vocero eval report</title>", '<link rel="stylesheet" href="report.css">',
        '<link rel="icon" href="favicon.svg" type="image/svg+xml">',
        "</head>", "<body>", "<h1>vocero eval report</h1>",
        f'<p class="summary" id="summary">{data["passed"]} of {data["total"]} scenarios passed '
        f'· runners {e(str(data["runners"]))} · mode {e(str(data["mode"]))}'
        f' · transport {e(str(data.get("transport", "websocket")))}</p>',
    ]
    for scenario in data["scenarios"]:
        verdict = "pass" if scenario["passed"] else "fail"
        parts.append(f'<section class="scenario {verdict}" id="{e(_slug(scenario["label"]))}">')
        parts.append(f'<h2><span class="verdict">{verdict.upper()}</span> '
                     f'{e(scenario["label"])} <span class="latency">'
                     f'{scenario["duration_s"]:.1f} s</span></h2>')
        if scenario["description"]:
            parts.append(f'<p class="description">{e(scenario["description"])}</p>')
        if scenario["error"]:
            parts.append(f'<pre class="failure">{e(scenario["error"])}</pre>')
        for failure in scenario["failures"]:
            parts.append(f'<pre class="failure">{e(failure["text"])}</pre>')
        for turn in scenario["turns"]:
            parts.append(_turn_html(turn))
        if scenario["operations"]:
            parts.append(_table("Operations", ["tool", "revision", "status", "attempts"],
                                scenario["operations"]))
        if scenario["followups"]:
            parts.append(_table("Follow-ups", ["when_text", "due_at", "channel", "reason",
                                               "status"], scenario["followups"]))
        if scenario["findings"]:
            parts.append(_table("Findings", ["kind", "text"], scenario["findings"]))
        if scenario["server_problems"]:
            parts.append(f'<details class="server"><summary>The server logged '
                         f'{len(scenario["server_problems"])} warnings or errors '
                         f'(<a href="{e(scenario["server_log"])}">whole log</a>)</summary>'
                         f'<pre>{e(chr(10).join(scenario["server_problems"]))}</pre></details>')
        parts.append("</section>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _turn_html(turn: dict[str, Any]) -> str:
    e = escape
    if turn["skipped"]:
        return (f'<div class="turn skipped">Turn {turn["index"]} skipped (the agent did not '
                f'ask): {e(turn["say"])}</div>')
    said = turn["say"] if turn["action"] == "say" else f'[{turn["action"]} button]'
    out = [f'<div class="turn" id="turn-{turn["index"]}">',
           f'<div><span class="who">Caller</span> {e(said)} {_player(turn, "caller")}</div>']
    if turn["transcripts"] and "caller" in turn["audio"]:
        out.append(f'<div><span class="who">Heard as</span> '
                   f'{e(" / ".join(turn["transcripts"]))}</div>')
    if turn["then"]:
        out.append(f'<div><span class="who">Over agent</span> {e(turn["then"])}</div>')
    out.append(f'<div><span class="who">Agent</span> {e(turn["heard_text"] or "(nothing)")} '
               f'{_player(turn, "agent")}</div>')
    latency = []
    if turn["ttfa_ms"] is not None:
        latency.append(f'first audio {turn["ttfa_ms"]:.0f} ms')
    if turn["barge_in_stop_ms"] is not None:
        latency.append(f'barge-in stop {turn["barge_in_stop_ms"]:.0f} ms')
    if turn["statuses"]:
        latency.append("answers " + ", ".join(turn["statuses"]))
    if latency:
        out.append(f'<div class="latency">{e(" · ".join(latency))}</div>')
    if turn["units"]:
        rows = "".join(
            f'<tr><td>{e(str(u["kind"]))}</td><td class="{e(str(u["disposition"]))}">'
            f'{e(str(u["disposition"]))}</td><td>{e(str(u["text"]))}</td>'
            f'<td>{e(", ".join(u["claim_keys"] or []))}</td></tr>' for u in turn["units"])
        out.append('<table class="units"><tr><th>unit kind</th><th>disposition</th>'
                   f"<th>text</th><th>claims</th></tr>{rows}</table>")
    calls = turn["tools"]
    if calls or turn["tool_statuses"]:
        rows = "".join(
            f'<tr><td>{e(str(c["server"]))}</td><td>{e(str(c["tool"]))}</td>'
            f'<td>{e(json.dumps(c["arguments"], sort_keys=True))}</td>'
            f'<td>{e(str(c["status"]))}</td></tr>' for c in calls)
        statuses = ", ".join(f'{s.get("status")}' + (f' ({s.get("reason_code")})'
                                                      if s.get("reason_code") else "")
                             for s in turn["tool_statuses"])
        out.append('<table class="tools"><tr><th>server</th><th>tool call</th><th>arguments'
                   f"</th><th>status</th></tr>{rows}</table>")
        if statuses:
            out.append(f'<div class="latency">tool.status.v1: {e(statuses)}</div>')
    out.append("</div>")
    return "\n".join(out)


def _player(turn: dict[str, Any], who: str) -> str:
    src = turn["audio"].get(who)
    if not src:
        return ""
    return f'<audio controls preload="none" src="{escape(src)}" title="{who} audio"></audio>'


def _table(title: str, columns: list[str], rows: list[dict[str, Any]]) -> str:
    e = escape
    head = "".join(f"<th>{e(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{e(str(row.get(c, '')))}</td>" for c in columns)
                   + "</tr>" for row in rows)
    return f'<table class="rows"><caption>{e(title)}</caption><tr>{head}</tr>{body}</table>'
