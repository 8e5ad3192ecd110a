"""``vocero eval`` (docs/eval.md): load, run, report; exit 0 passed, 1 a failure, 2 malformed."""

from __future__ import annotations

import argparse
import fnmatch
import sys
from pathlib import Path
from typing import Any

import yaml

from vocero.evals.audio import Voice
from vocero.evals.format import ScenarioError, load_files
from vocero.evals.phone import caller_phones
from vocero.evals.report import write_junit, write_report
from vocero.evals.runner import run_all


def eval_command(args: argparse.Namespace, voice: Voice | None = None) -> int:
    """``voice``: the caller's voice in audio mode (Piper when None; tests pass a tone)."""
    phone = getattr(args, "transport", "websocket") == "twilio"
    if phone and args.mode == "text":
        print("vocero eval: --transport twilio carries audio only: a typed line has no phone "
              "equivalent (leave --mode out, or say --mode audio)", file=sys.stderr)
        return 2
    args.mode = args.mode or ("audio" if phone else "text")
    try:
        scenarios = load_files(list(args.paths))
        zones = caller_zones(Path(args.identities))
        phones = caller_phones(_identities(Path(args.identities))) if phone else {}
        for scenario in scenarios:
            if scenario.caller not in zones:
                raise ScenarioError(scenario.file, scenario.name, "caller",
                                    f"no caller with token {scenario.caller!r} in "
                                    f"{args.identities}")
            if phone and scenario.caller not in phones:
                raise ScenarioError(scenario.file, scenario.name, "caller",
                                    f"the caller {scenario.caller!r} has no phone in "
                                    f"{args.identities} (--transport twilio)")
    except ScenarioError as exc:
        print(f"vocero eval: malformed scenario: {exc}", file=sys.stderr)
        return 2
    if args.only:
        scenarios = [s for s in scenarios
                     if any(fnmatch.fnmatchcase(s.name, only) for only in args.only)]
        if not scenarios:
            print(f"vocero eval: no scenario matches --only {' '.join(args.only)}",
                  file=sys.stderr)
            return 2
    results = run_all(scenarios, args, zones, phones=phones, voice=voice)
    if args.junit:
        write_junit(Path(args.junit), results)
    if args.report:
        write_report(Path(args.report), results, mode=args.mode, runners=args.runners,
                     transport=getattr(args, "transport", "websocket"))
    passed = sum(r.passed for r in results)
    unchecked = sum(bool(r.unchecked) for r in results)
    print(f"{passed}/{len(results)} scenarios passed" + (
        f" ({unchecked} not checkable over the phone)" if unchecked else ""))
    return 0 if passed == len(results) else 1


def _identities(identities: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(identities.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(identities, "-", "--identities", f"not readable: {exc}") from exc
    return data if isinstance(data, dict) else {}


def caller_zones(identities: Path) -> dict[str, str]:
    """Each caller token's timezone (docs/operators.md "Callers")."""
    data = _identities(identities)
    return {str(c["token"]): str(c.get("timezone") or "UTC")
            for c in data.get("callers") or [] if isinstance(c, dict) and "token" in c}
