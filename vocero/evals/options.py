"""The options of ``vocero eval`` (kept apart so ``vocero --help`` loads nothing else)."""

from __future__ import annotations

import argparse


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="scenario files or folders of them (docs/eval.md)")
    parser.add_argument("--runners", choices=["sim", "cpu", "gb10"], default="sim")
    parser.add_argument("--mode", choices=["text", "audio"], default=None,
                        help="text (the default) or audio; --transport twilio implies audio")
    parser.add_argument("--transport", choices=["websocket", "twilio"], default="websocket",
                        help="websocket (/v1/realtime) or twilio: every scenario over the phone "
                             "path (docs/eval.md \"Over the phone\")")
    parser.add_argument("--profiles", default="fixtures/profiles")
    parser.add_argument("--identities", default="fixtures/identities.yaml")
    parser.add_argument("--junit", default=None, help="write JUnit XML here")
    parser.add_argument("--report", default=None, help="write report.json and index.html here")
    parser.add_argument("--only", action="append", default=None,
                        help="scenario name or glob (repeatable: any of them)")
