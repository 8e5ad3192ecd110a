"""Claim catalogs of agent profiles (SPEC §8): a file or an inline list, checked at load with the
file, the claim's key and the field named in every error."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from vocero.contracts.errors import ConfigError
from vocero.identity.profiles import load_profile, load_profiles

FIXTURES = Path(__file__).parents[2] / "fixtures"

PROFILE: dict[str, Any] = {
    "id": "p",
    "version": "1",
    "match": {"tenant": "acme"},
    "word_budget": 20,
    "tools": [
        {
            "name": "knowledge.search",
            "server": "vocero",
            "resolves_to": "knowledge.search",
            "action_class": "read",
        }
    ],
}

CLAIM: dict[str, Any] = {
    "key": "returns.opened",
    "text": "Opened items can only be returned within 14 days for store credit.",
    "conditions": ["Opened", "within 14 days"],
    "sources": [{"id": "returns-policy", "version": 4, "passage": "Opened items: 14 days."}],
    "topics": ["returns"],
}


def claim(**changes: Any) -> dict[str, Any]:
    document = copy.deepcopy(CLAIM)
    document.update(changes)
    return document


def write_profile(folder: Path, claims: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / "p.yaml"
    file.write_text(yaml.safe_dump({**PROFILE, "claims": claims}))
    return file


def write_catalog(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return path


def load_error(file: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_profile(file)
    return caught.value


def test_demo_profile_ships_a_real_catalog() -> None:
    demo = load_profiles(FIXTURES / "profiles").get("demo")
    assert demo is not None
    keys = {c.key for c in demo.claims}
    assert len(keys) == len(demo.claims) >= 8
    assert {"hours.saturday", "returns.opened", "returns.unopened", "contact.person"} <= keys
    assert any("shipping" in c.key for c in demo.claims)
    conditional = [c for c in demo.claims if c.conditions]
    assert len(conditional) >= 2
    opened = next(c for c in demo.claims if c.key == "returns.opened")
    unopened = next(c for c in demo.claims if c.key == "returns.unopened")
    assert "Opened" in opened.conditions and "Unopened" in unopened.conditions
    assert all(c.sources and all(s.passage for s in c.sources) for c in demo.claims)
    assert all(len(c.text.split()) <= demo.word_budget for c in demo.claims)


def test_inline_claims_load_with_versions_as_text(tmp_path: Path) -> None:
    profile = load_profile(write_profile(tmp_path, [claim(valid_until="2027-12-31")]))
    [loaded] = profile.claims
    assert loaded.key == "returns.opened"
    assert loaded.sources[0].version == "4"
    assert loaded.valid_until == "2027-12-31"
    assert loaded.conditions == ["Opened", "within 14 days"]


@pytest.mark.parametrize("shape", ["list", "mapping"])
def test_a_catalog_file_resolves_against_the_profile(tmp_path: Path, shape: str) -> None:
    entries = [claim(), claim(key="hours.saturday", text="Saturdays 10 AM to 2 PM.", conditions=[])]
    document: Any = entries if shape == "list" else {"claims": entries}
    write_catalog(tmp_path / "profiles" / "catalogs" / "acme.yaml", document)
    profile = load_profile(write_profile(tmp_path / "profiles", "catalogs/acme.yaml"))
    assert [c.key for c in profile.claims] == ["returns.opened", "hours.saturday"]


def test_an_empty_catalog_file_is_an_empty_catalog(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("")
    assert load_profile(write_profile(tmp_path, "empty.yaml")).claims == []


def test_a_missing_catalog_file_names_the_profile_and_the_path(tmp_path: Path) -> None:
    file = write_profile(tmp_path, "catalogs/nowhere.yaml")
    error = load_error(file)
    assert (error.path, error.field) == (str(file), "claims")
    assert "nowhere.yaml" in error.problem


BAD_CLAIMS = [
    pytest.param(
        [claim(text=" ".join(["word"] * 21), conditions=[])],
        "claims[returns.opened].text",
        "21 words, over the profile's word_budget of 20",
        id="over-word-budget",
    ),
    pytest.param(
        [claim(sources=[])],
        "claims[returns.opened].sources",
        "at least one evidence source",
        id="missing-source",
    ),
    pytest.param(
        [claim(sources=[{"id": "returns-policy", "version": "4", "passage": " "}])],
        "claims[returns.opened].sources[0].passage",
        "must not be empty",
        id="empty-passage",
    ),
    pytest.param(
        [claim(sources=[{"id": "returns-policy", "version": "4"}])],
        "claims[returns.opened].sources[0].passage",
        "missing required field",
        id="source-without-passage",
    ),
    pytest.param(
        [claim(), claim(text="Opened items: store credit within 14 days.")],
        "claims[returns.opened].key",
        "duplicate of claims[0]",
        id="duplicate-key",
    ),
    pytest.param(
        [claim(conditions=["Opened", "unless damaged"])],
        "claims[returns.opened].conditions[1]",
        "'unless damaged' does not appear in text",
        id="condition-not-in-text",
    ),
    pytest.param(
        [claim(valid_until="next tuesday")],
        "claims[returns.opened].valid_until",
        "not an RFC3339 date-time or date",
        id="bad-valid-until",
    ),
    pytest.param(
        [claim(valid_until="2027-12-31T10:00:00")],
        "claims[returns.opened].valid_until",
        "not an RFC3339 date-time or date",
        id="valid-until-without-offset",
    ),
    pytest.param(
        [claim(approved=True)], "claims[returns.opened].approved", "unknown field", id="unknown"
    ),
    pytest.param(
        [{"text": "No key here.", "sources": CLAIM["sources"]}],
        "claims[0].key",
        "missing required field",
        id="no-key",
    ),
    pytest.param(
        [claim(key="has space")], "claims[has space].key", "must be letters", id="bad-key"
    ),
    pytest.param([claim(text="")], "claims[returns.opened].text", "empty", id="empty-text"),
]


@pytest.mark.parametrize(("claims", "field", "problem"), BAD_CLAIMS)
def test_inline_catalog_errors_name_file_claim_and_field(
    tmp_path: Path, claims: list[Any], field: str, problem: str
) -> None:
    file = write_profile(tmp_path, claims)
    error = load_error(file)
    assert (error.path, error.field) == (str(file), field)
    assert problem in error.problem
    assert str(file) in str(error) and field in str(error)


@pytest.mark.parametrize(("claims", "field", "problem"), BAD_CLAIMS)
def test_catalog_file_errors_name_the_catalog_file(
    tmp_path: Path, claims: list[Any], field: str, problem: str
) -> None:
    catalog = write_catalog(tmp_path / "catalog.yaml", claims)
    error = load_error(write_profile(tmp_path, "catalog.yaml"))
    assert (error.path, error.field) == (str(catalog), field)
    assert problem in error.problem


def test_a_catalog_that_is_not_a_list_is_refused(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path / "catalog.yaml", {"items": []})
    error = load_error(write_profile(tmp_path, "catalog.yaml"))
    assert error.path == str(catalog)
    assert "expected a list of claims" in error.problem


def test_claims_of_the_wrong_type_are_refused(tmp_path: Path) -> None:
    error = load_error(write_profile(tmp_path, 42))
    assert error.field == "claims"


def test_knowledge_search_is_a_built_in_tool(tmp_path: Path) -> None:
    profile = load_profile(write_profile(tmp_path, [claim()]))
    tool = profile.tool("knowledge.search")
    assert tool is not None and tool.server == "vocero"
