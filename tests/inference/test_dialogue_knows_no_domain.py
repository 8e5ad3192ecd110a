"""Issue 42: no dialogue module names a domain word.

The dialogue manager reads what a tool is about from the profile; everyday English for the
nouns tools name lives in the lexicon's thesaurus (:mod:`vocero.contracts.lexicon.synonyms`),
which the manager consults only for a noun the tool's own material names. This reads every
string the dialogue package's code holds (docstrings and comments aside) and fails on any word
of that thesaurus that is not also an action word (``order`` is a verb as well) or a word that
names a time field (``slot``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import vocero.inference.dialogue as dialogue
from vocero.contracts.lexicon.synonyms import NOUN_SYNONYMS
from vocero.inference.dialogue.intent_lines import TIME_WORDS, VERB_FAMILIES, VERB_WORDS

PACKAGE = Path(dialogue.__file__).parent


def _code_strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    # a bare string statement after an assignment documents it: not code either
    documenting = {
        id(node.value) for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node.value for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings and id(node) not in documenting
    ]


def test_no_dialogue_module_names_a_domain_noun() -> None:
    actions = {w for phrases in VERB_FAMILIES.values() for p in phrases for w in p.split()}
    actions |= set(VERB_WORDS) | set(TIME_WORDS)  # a field named for time ("slot") is no domain
    nouns = (set(NOUN_SYNONYMS) | {w for ws in NOUN_SYNONYMS.values() for w in ws}) - actions
    nouns = {n for n in nouns if " " not in n}
    found = {
        f"{path.name}: {word!r} in {text!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for text in _code_strings(path)
        for word in re.findall(r"[a-z]+", text.lower())
        if word in nouns or word.rstrip("s") in nouns
    }
    assert not found, "\n".join(sorted(found))


def test_the_check_sees_a_noun_in_code() -> None:
    """The control: a literal naming a domain noun is found."""
    source = 'LEXICON = {"check": ("track my parcel",)}\n"""The lexicon."""\n'
    tree = ast.parse(source)
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    assert "track my parcel" in strings
