"""The alert rules (deploy/prometheus/vocero-rules.yaml, issue 32): ``promtool check rules``
and ``promtool test rules`` pass, every alert has a firing and a quiet unit test, links a
runbook that exists, and reads only series Vocero exports (or Prometheus's own ``up``).

promtool comes from Debian's ``prometheus`` package (``.ci/run`` installs it): without it this
fails rather than skips.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
import yaml

from tests.support.promql import selectors
from vocero.app.adapters.endpoint_metrics import EndpointCollector
from vocero.app.settings import REPO_ROOT
from vocero.inference.sim import build_sim_runners, load_script
from vocero.observability.metrics import Metrics

RULES = REPO_ROOT / "deploy" / "prometheus" / "vocero-rules.yaml"
TESTS = REPO_ROOT / "deploy" / "prometheus" / "vocero-rules.test.yaml"
PROMETHEUS_OWN = {"up"}


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    assert tool, "promtool is missing: apt-get install prometheus"
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120,
                          cwd=RULES.parent)


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


@pytest.mark.process
def test_promtool_checks_the_rules() -> None:
    done = promtool("check", "rules", RULES.name)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.process
def test_promtool_unit_tests_pass() -> None:
    done = promtool("test", "rules", TESTS.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout + done.stderr


def test_every_alert_is_tested_firing_and_quiet() -> None:
    cases = yaml.safe_load(TESTS.read_text())["tests"]
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in cases:
        for check in case["alert_rule_test"]:
            (firing if check["exp_alerts"] else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert names - firing == set(), "alerts never tested firing"
    assert names - quiet == set(), "alerts never tested quiet"
    assert len(names) >= 15


def test_every_alert_links_a_runbook_that_exists() -> None:
    for rule in alerts():
        link = rule["annotations"].get("runbook_url", "")
        assert link.startswith("docs/runbooks/"), rule["alert"]
        page = REPO_ROOT / link
        assert page.is_file(), f"{rule['alert']}: {link} is missing"
        assert rule["alert"] in page.read_text(), f"{link} does not name {rule['alert']}"


def test_rules_read_only_series_vocero_exports() -> None:
    exported = set()
    serving_engines = EndpointCollector(build_sim_runners(load_script(None))).collect()
    for family in [*Metrics().registry.collect(), *serving_engines]:
        exported |= {sample.name for sample in family.samples} | {family.name}
        if family.type == "counter":
            exported.add(f"{family.name}_total")
        if family.type == "histogram":
            exported |= {f"{family.name}_{part}" for part in ("bucket", "count", "sum")}
    recorded = {rule["record"] for rule in rules() if "record" in rule}
    read = {name for rule in rules() for name, _ in selectors(rule["expr"])}
    unknown = read - exported - recorded - PROMETHEUS_OWN
    assert not unknown, f"rules read series Vocero does not export: {sorted(unknown)}"
