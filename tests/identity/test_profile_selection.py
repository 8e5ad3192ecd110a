"""``ProfileCatalog.select``: the most specific matching profile wins; no match denies."""

from __future__ import annotations

from pathlib import Path

import pytest

from vocero.contracts.domain import AgentProfile, Caller, ProfileMatch
from vocero.contracts.errors import AuthError, ErrorCode
from vocero.identity.identities import load_identities
from vocero.identity.profiles import ProfileCatalog, load_profiles

FIXTURES = Path(__file__).parents[2] / "fixtures"


def _profile(pid: str, tenant: str = "acme", *roles: str, version: str = "1") -> AgentProfile:
    return AgentProfile(
        id=pid, version=version, match=ProfileMatch(tenant=tenant, roles=list(roles))
    )


def _caller(tenant: str = "acme", *roles: str) -> Caller:
    return Caller(token="t", subject="s", tenant=tenant, roles=list(roles))


def _select(catalog: list[AgentProfile], caller: Caller) -> str:
    chosen = ProfileCatalog(catalog).select(caller)
    return f"{chosen.id}@{chosen.version}"


def test_a_roles_match_beats_a_tenant_only_match() -> None:
    catalog = [_profile("general"), _profile("agents", "acme", "agent")]
    assert _select(catalog, _caller("acme", "agent")) == "agents@1"
    assert _select(list(reversed(catalog)), _caller("acme", "agent")) == "agents@1"


def test_tenant_only_profile_catches_other_roles() -> None:
    catalog = [_profile("general"), _profile("agents", "acme", "agent")]
    assert _select(catalog, _caller("acme", "customer")) == "general@1"
    assert _select(catalog, _caller("acme")) == "general@1"


def test_any_listed_role_matches() -> None:
    assert _select([_profile("p", "acme", "a", "b")], _caller("acme", "x", "b")) == "p@1"


def test_fewer_listed_roles_is_more_specific() -> None:
    catalog = [_profile("broad", "acme", "agent", "customer"), _profile("narrow", "acme", "agent")]
    assert _select(catalog, _caller("acme", "agent")) == "narrow@1"


def test_ties_go_to_the_smaller_id_whatever_the_order() -> None:
    catalog = [_profile("zeta", "acme", "agent"), _profile("alpha", "acme", "agent")]
    assert _select(catalog, _caller("acme", "agent")) == "alpha@1"
    assert _select(list(reversed(catalog)), _caller("acme", "agent")) == "alpha@1"


def test_the_latest_version_of_the_winner_is_used() -> None:
    catalog = [_profile("p", version="2"), _profile("p", version="10"), _profile("p", version="9")]
    assert _select(catalog, _caller()) == "p@10"


@pytest.mark.parametrize(
    "caller",
    [_caller("initech", "customer"), _caller("Acme", "agent"), _caller("acme", "customer")],
    ids=["other-tenant", "tenant-is-case-sensitive", "no-role-intersects"],
)
def test_no_match_is_a_profile_denial(caller: Caller) -> None:
    catalog = ProfileCatalog([_profile("agents", "acme", "agent")])
    with pytest.raises(AuthError) as caught:
        catalog.select(caller)
    assert caught.value.code is ErrorCode.PROFILE_DENIED
    assert not caught.value.retryable


def test_get_by_id_and_version() -> None:
    catalog = ProfileCatalog([_profile("p", version="1"), _profile("p", version="2")])
    assert (catalog.get("p") or _profile("x")).version == "2"
    assert (catalog.get("p", "1") or _profile("x")).version == "1"
    assert catalog.get("p", "3") is None
    assert catalog.get("q") is None


@pytest.mark.parametrize(
    ("token", "profile_id"),
    [
        ("demo-token", "demo"),
        ("agent-token", "demo"),
        ("readonly-token", "demo"),
        ("globex-token", "globex"),
    ],
)
def test_fixture_callers_get_their_profiles(token: str, profile_id: str) -> None:
    caller = load_identities(FIXTURES / "identities.yaml").authenticate(token)
    assert caller is not None
    assert load_profiles(FIXTURES / "profiles").select(caller).id == profile_id


def test_fixture_caller_without_a_profile_is_denied() -> None:
    caller = load_identities(FIXTURES / "identities.yaml").authenticate("nomatch-token")
    assert caller is not None
    with pytest.raises(AuthError) as caught:
        load_profiles(FIXTURES / "profiles").select(caller)
    assert caught.value.code is ErrorCode.PROFILE_DENIED
