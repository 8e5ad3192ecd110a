"""What the CPU runner says when no tool is needed: short replies made of the profile's words.

Left to chat freely, a 135M model invents a persona ("I'm Alex, a software engineer") and offers
help the agent cannot give, and nothing it says is approved wording. So the CPU runner recognises
a handful of conversational acts by rule (greeting, how are you, who are you, what can you do,
thanks, goodbye, say that again) and answers each from the profile itself: who the agent is and
what it does come from the second-person sentences of its instructions ("You are the phone
assistant of Acme." becomes "This is the phone assistant of Acme."), or from its tool
descriptions when the instructions have none. Anything else gets a polite "cannot help with
that" and what the agent can do instead. Every reply opens with a short sentence, so the first
audio comes quickly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vocero.contracts.builtins import FOLLOWUPS_TOOL
from vocero.contracts.english import capability, join_list
from vocero.contracts.ports import LlmRequest

_HELLO = r"hi|hello|hey|hiya|howdy|g'day|kia ora|morning"
"""Hello in the Englishes callers speak ("kia ora" is New Zealand English's everyday hello)."""
_GREETING = re.compile(rf"^\W*({_HELLO}|good (morning|afternoon|evening))\b", re.I)
_IDENTITY = re.compile(
    r"\b(who (am i|are you|is this|i'm)|your name|about yourself|what are you\b(?! able))", re.I
)
_CAPABILITIES = re.compile(
    r"\b(what can you|help me with|what do you do|how can you help|what are you able|"
    r"what (else )?can i (ask|do))\b",
    re.I,
)
_HOW_ARE_YOU = re.compile(r"\bhow are you\b", re.I)
_THANKS = re.compile(r"\b(thank(s| you)?|cheers)\b", re.I)
_GOODBYE = re.compile(
    r"\b(bye|goodbye|ta-?ra|cheerio|"
    r"(?:that's|that is) all(?!\s+(?:good|right|correct|fine|ok|okay|there)\b)|"
    r"nothing else|no,? thanks?)\b",
    re.I,
)
"""A goodbye's words; "that's all good" (or "all right") approves, it does not end the call."""
_REPEAT = re.compile(
    r"\b(say (that|it) again|repeat( that)?|pardon|didn't (catch|get|hear) (that|it))\b", re.I
)
_SLOWER = re.compile(r"\b(slower|slow down)\b", re.I)
_SENTENCE = re.compile(r"[^.!?]+[.!?]")

# Second person (the instructions speak to the agent) to first person, third person (callers) to
# second person (the agent speaks to one caller). Applied in order, whole words only.
_VOICE = (
    (r"^You are\b", "I'm"),
    (r"^You help\b", "I can help"),
    (r"^You\b", "I"),
    (r"\bthe caller's\b", "your"),
    (r"\bcallers'", "your"),
    (r"\b(the )?callers?\b", "you"),
    (r"\btheir\b", "your"),
    (r"\bthey\b", "you"),
    (r"\bthem\b", "you"),
)


@dataclass(frozen=True, slots=True)
class Persona:
    """Who the agent is and what it can do, in its profile's own words."""

    who: str
    """e.g. "the phone assistant of Acme"; empty when the instructions do not say."""
    can: str
    """e.g. "I can help you check the status of your orders."; empty when nothing is known."""
    call_backs: bool

    @classmethod
    def of(cls, request: LlmRequest) -> Persona:
        system = " ".join(m.content for m in request.messages if m.role == "system")
        sentences = [s.strip() for s in _SENTENCE.findall(system.replace("\n", " "))]
        who, can = "", ""
        for sentence in sentences:
            found = re.match(r"You are (.+)\.$", sentence)
            if found and not who:
                who = found.group(1)
            elif re.match(r"You (help|can|assist)\b", sentence) and not can:
                can = first_person(sentence)
        tools = [t for t in request.tools if t.builtin != FOLLOWUPS_TOOL]
        if not can and tools:  # an item that says nothing is dropped, never joined
            able = join_list(dict.fromkeys(capability(t.description, t.name) for t in tools))
            can = first_person(f"I can {able}.") if able else ""
        call_backs = any(t.builtin == FOLLOWUPS_TOOL for t in request.tools)
        return cls(who=who, can=can, call_backs=call_backs)


_BARE_ANSWER = re.compile(
    r"^\W*(yes|yeah|yep|yup|sure|ok|okay|go ahead|please do|do it|no|nope|nah)\W*$", re.I
)
_QUESTION = re.compile(
    r"\?(?:\s|$)|^\W*(can|could|may|what|when|where|which|who|how|why|is|are|do|"
    r"does|will|would|should)\b",
    re.I,
)


_BACK_REFERENCE = re.compile(
    r"\b(that|it|this|which one|again|wait|hold on|sorry|did you say|you said|you mean)\b", re.I
)


_PERSON = re.compile(
    r"\b(?:speak|talk|chat)\s+(?:to|with)\s+(?:an?\s+|the\s+|some\s*)?(?:real\s+|actual\s+|live\s+)?"
    r"(?:person|human|someone|somebody|one|agent|operator|representative|advisor|manager)\b"
    r"|\b(?:real|actual|live)\s+(?:person|human)\b|\bhuman\s+being\b",
    re.I,
)


def wants_person(utterance: str) -> bool:
    """The caller asks for a person ("I want to speak to a real person")."""
    return bool(_PERSON.search(utterance))


def give_up(request: LlmRequest) -> str:
    """What the agent says when a question it asked twice went unanswered: it drops the
    question and says what it can do."""
    persona = Persona.of(request)
    return _spoken("Let's leave that for now.", persona.can, _offer(persona))


def is_request(utterance: str) -> bool:
    """A turn that asks for something of its own (a greeting, a question, thanks, goodbye), not
    an answer to a yes-or-no question."""
    if _BARE_ANSWER.search(utterance):
        return False
    acts = (_GREETING, _IDENTITY, _CAPABILITIES, _HOW_ARE_YOU, _THANKS, _GOODBYE, _REPEAT)
    if any(act.search(utterance) for act in acts):
        return True
    if _BACK_REFERENCE.search(utterance) and len(utterance.split()) <= 8:
        return False  # "which appointment was that?" asks about the question: a clarification
    return bool(_QUESTION.search(utterance)) and len(utterance.split()) >= 4


SOFT_ACTS = frozenset({"identity", "capabilities", "how_are_you"})
"""Acts a line's other words may outweigh: "my parcel came broken, what can I do?" asks the
catalog, not what the agent can do."""
_LEADING = re.compile(
    rf"^\W*(?:(?:{_HELLO})(?:\s+there)?|good (?:morning|afternoon|evening)"
    r"|thanks?(?: you)?|okay|ok|so|um+|uh+|well)\b[\s,.!]*",
    re.I,
)
_TRAILING = re.compile(r"[\s,]*\b(?:please|thanks|thank you|cheers)\W*$", re.I)
_DECLINE = re.compile(
    r"^\W*(?:(?:no|nah|nope|actually|oh)\W+)*(?:forget (?:it|that|about it)|never ?mind|"
    r"scratch that|cancel that|leave it|don'?t bother|not anymore|no need)\b",
    re.I,
)


def without_pleasantries(utterance: str) -> str:
    """The line without a leading greeting or thanks and a trailing "please" or "thanks":
    "Hi, what time do you open on Saturday?" asks about Saturday."""
    text = utterance.strip()
    while True:
        shorter = _TRAILING.sub("", _LEADING.sub("", text, count=1)).strip()
        if shorter == text:
            break
        text = shorter
    return text if any(c.isalnum() for c in text) else ""


_ASKS = re.compile(
    r"^\W*(?:can|could|would|will|may|might|do|does|did|what|when|where|which|who|whose|how|"
    r"why|should|shall|please|tell|give|show|find|send|book|cancel|change|check|i(?:'d| would)?"
    r"\s+(?:want|need|like)|i'm\s+(?:looking|trying|calling))\b"
    r"|\b(?:can|could|would|will)\s+(?:you|i|we)\b|\b(?:recommend|help me|i need|i want)\b",
    re.I,
)
"""How a sentence asks for something: a question or request word first, "can you", "I need"."""


def greeting_remark(utterance: str) -> bool:
    """A greeting with chit-chat after it ("Good morning! Terrible weather we're having,
    eh?"): every sentence after the greeting remarks, none asks for anything. It is answered
    as the greeting it is, never as a request out of scope."""
    if not _GREETING.search(utterance):
        return False
    rest = without_pleasantries(utterance)
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", rest) if s.strip()]
    return bool(sentences) and not any(_ASKS.search(s) for s in sentences)


def declines(utterance: str) -> bool:
    """The caller drops what they were asking for ("no, forget it", "never mind")."""
    return bool(_DECLINE.search(utterance))


def _signs_off(utterance: str) -> bool:
    """The line ends with a short goodbye sentence after thanks or a "that's all": the caller
    is leaving ("Lovely, that's all I needed. Cheers, bye!")."""
    sentences = [x for x in re.split(r"(?<=[.!?])\s+", utterance.strip()) if x.strip()]
    last = sentences[-1] if sentences else ""
    # Before it, thanks or a "that's all", and nothing asked ("Glad to hear it. Actually,
    # that's all I needed. Thanks, bye!": a remark may lead).
    return (
        len(sentences) > 1
        and len(last.split()) <= 6  # "Thanks very much, bye now."
        and bool(_FAREWELL.search(last))
        and any(_GOODBYE.search(x) or _THANKS.search(x) for x in sentences[:-1])
        and all(
            _GOODBYE.search(x) or _THANKS.search(x) or _REMARK.match(x) for x in sentences[:-1]
        )
    )


_FAREWELL = re.compile(r"\b(?:bye|goodbye|ta-?ra|cheerio|see ya|see you|take care)\b", re.I)
"""A goodbye in a word or two, in the Englishes callers speak ("Ta-ra!", "Cheerio")."""
_REMARK = re.compile(
    r"^(?:glad|great|good|perfect|lovely|wonderful|excellent|awesome|nice|cool|fine|brilliant|"
    r"ok(?:ay)?|alright|all right)\b(?:\W+\w+){0,4}\W*$",
    re.I,
)
"""A short pleasantry before a goodbye ("Glad to hear it."), that asks for nothing."""


def act(utterance: str) -> str | None:
    """The conversational act the rules recognise in the line, if any: ``bare`` (a lone yes or
    no), ``repeat``, ``slower``, ``decline``, ``greet``, ``thanks``, ``goodbye`` (the line is
    nothing else), or one of :data:`SOFT_ACTS`."""
    content = without_pleasantries(utterance)
    if _BARE_ANSWER.search(utterance):
        return "bare"
    if _REPEAT.search(utterance):
        return "repeat"
    if _SLOWER.search(utterance):
        return "slower"
    if declines(utterance):
        return "decline"
    if _GOODBYE.search(utterance) and len(content.split()) <= 4:
        return "goodbye"
    if _signs_off(utterance):
        return "goodbye"  # "Lovely, that's all I needed. Cheers, bye!"
    if not content and _GREETING.search(utterance):
        return "greet"
    if _THANKS.search(utterance) and len(content.split()) <= 2:
        return "thanks"  # "Great, thank you!"
    if _IDENTITY.search(utterance):
        return "identity"
    if _CAPABILITIES.search(utterance):
        return "capabilities"
    if _HOW_ARE_YOU.search(utterance):
        return "how_are_you"
    return None


def reply(utterance: str, request: LlmRequest, *, label: str | None = None) -> str:
    """A grounded reply to ``utterance``, a turn no tool answers; ``label`` is the intent
    model's act for it when the rules recognise none."""
    persona = Persona.of(request)
    greeting = bool(_GREETING.search(utterance))
    said = act(utterance) or label
    if said == "bare" and request.pending is None:
        return "What would you like me to do?"
    if said == "repeat":
        last = _last_assistant(request)
        return f"Of course. {last}" if last else "Sorry, I have not said anything yet."
    if said == "slower":
        return "Of course, I will keep my answers short."
    if said == "decline" and _GOODBYE.search(utterance):
        return "Alright, I have left everything as it was. Thank you for calling. Goodbye."
    if said == "decline":
        return "Alright, I have left everything as it was. Is there anything else I can do?"
    if said == "goodbye":
        return "Thank you for calling. Goodbye."
    if said == "thanks":
        return "You're welcome. Is there anything else I can help with?"
    if said == "identity":
        hello = "Hello, this is" if greeting else "This is"
        intro = f"{hello} {persona.who}." if persona.who else "Hello."
        return _spoken(intro, persona.can)
    if said == "capabilities":
        return _spoken("Sure.", persona.can or "I can help with a few things.", _offer(persona))
    if said == "how_are_you":
        return "I'm well, thank you. How can I help you?"
    if said == "person":
        return _spoken("I can't put you through to a person from here.", _offer(persona))
    if said == "greet" or (greeting and not without_pleasantries(utterance)):
        intro = f"Hello, this is {persona.who}." if persona.who else "Hello."
        return f"{intro} How can I help you?"
    return _spoken("Sorry, I can't help with that here.", persona.can, _offer(persona))


def first_person(sentence: str) -> str:
    """Instructions addressed to the agent, rephrased as the agent speaking to a caller."""
    text = sentence
    for pattern, replacement in _VOICE:
        text = re.sub(pattern, replacement, text)
    return text


def _offer(persona: Persona) -> str:
    return "If you would like a call back, tell me when." if persona.call_backs else ""


def _spoken(*sentences: str) -> str:
    return " ".join(s for s in sentences if s)


def _last_assistant(request: LlmRequest) -> str:
    return next((m.content for m in reversed(request.messages) if m.role == "assistant"), "")
