"""The console's Profiles tab (issue 32): the active version of every profile, its revisions,
and a rollback from the page that the server applies and audits. A role that may not roll back
sees the API's refusal next to the button."""

from __future__ import annotations

import yaml

from tests.console.conftest import Console


def test_profiles_tab_lists_revisions_and_rolls_back(console: Console) -> None:
    server = console.server
    demo = server.profiles / "demo.yaml"
    original = demo.read_text()
    edited = yaml.safe_load(original)
    edited["version"] = 2
    demo.write_text(yaml.safe_dump(edited))
    try:
        listed = {p["profile_id"]: p for p in server.get("/v1/profiles")["items"]}  # sees the edit
        assert listed["demo"]["version"] == "2"

        console.sign_in("sec-token")  # security reads, may not roll back
        console.tab("profiles")
        page = console.page
        page.click("#profiles tr[data-profile=demo] button")
        page.wait_for_selector("#profile-history tr[data-revision='1'] button")
        page.click("#profile-history tr[data-revision='1'] button")
        page.wait_for_selector("#profile-history tr[data-revision='1'] .error")
        assert "forbidden" in page.inner_text("#profile-history tr[data-revision='1'] .error")
        assert server.get("/v1/profiles")["items"][0]["version"] == "2"

        console.sign_in("owner-token")
        console.tab("profiles")
        assert console.texts("#profiles tr[data-profile=demo] td:nth-child(2)") == ["2"]
        page.click("#profiles tr[data-profile=demo] button")
        page.wait_for_selector("#profile-history tr[data-revision='1'] button")
        page.click("#profile-history tr[data-revision='1'] button")
        page.wait_for_selector("#profile-history tr[data-revision='1'] strong")
        assert console.texts("#profiles tr[data-profile=demo] td:nth-child(2)") == ["1"]
        head = {p["profile_id"]: p for p in server.get("/v1/profiles")["items"]}["demo"]
        assert (head["version"], head["change"], head["changed_by"]) == ("1", "rollback", "olga")
        audit = server.get("/v1/audit?limit=1000")["items"]
        rolled = [e for e in audit if e["kind"] == "profile.rolled_back"]
        assert [(e["actor"], e["data"]["version"], e["data"]["via"]) for e in rolled] == [
            ("olga", "1", "api")]
        assert console.violations() == []
        # the refused rollback, and the Needs-you lists these two roles may not read
        console.problems[:] = [p for p in console.problems if "403" not in p]
    finally:
        demo.write_text(original)  # an edit back to revision 1's content: head stays r1
