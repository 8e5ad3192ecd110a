"""The generic English the intent model (:mod:`vocero.inference.dialogue.intents`) is trained on
besides a profile's own words: caller phrasings of common actions and nouns, sentence frames,
call-back lines, question frames, and the lines of each conversational act.

All generic English; none is written from, or tuned on, any held-out set (fixtures/dialogue), and
nothing here knows any profile's names.
"""

from __future__ import annotations

OUT_OF_SCOPE = "out_of_scope"
ACTS: tuple[str, ...] = (
    "greet", "thanks", "goodbye", "person", "repeat", "capabilities", "identity", "decline",
    OUT_OF_SCOPE,
)  # fmt: skip
"""The conversational acts, always labels besides the profile's tools."""
REFUSED = "refused:"
"""The label prefix of a prohibited tool's class (``refused:`` + its name): what only that tool
would do is learned as its own class, and the model's decision for it is :data:`OUT_OF_SCOPE`."""

STOP = frozenset((
    "a", "an", "the", "of", "to", "for", "in", "on", "at", "by", "with", "from", "and", "or",
    "but", "is", "are", "be", "been", "it", "its", "this", "that", "these", "those", "my",
    "your", "our", "their", "his", "her", "them", "they", "we", "you", "i", "me", "us", "one",
    "ones", "some", "any", "all", "each", "every", "which", "who", "whom", "what", "when",
    "where", "how", "why", "can", "could", "would", "should", "will", "shall", "may", "might",
    "must", "do", "does", "did", "done", "has", "have", "had", "not", "no", "yes", "if", "then",
    "than", "so", "as", "into", "about", "over", "after", "before", "up", "down", "out", "off",
    "new", "current", "first", "also", "only", "just", "very", "such", "per", "via", "there",
    "here", "his", "hers", "own", "caller", "callers", "customer", "customers",
    "user", "users", "person", "people", "someone",
))  # fmt: skip
"""Words that say nothing about which tool (tool nouns are looked for among the rest)."""

VERB_FAMILIES: dict[str, tuple[str, ...]] = {
    "check": ("check", "check on", "look up", "find out about", "track", "get the status of",
              "get an update on", "see"),
    "list": ("list", "show me", "tell me", "read me", "go through", "give me"),
    "move": ("move", "reschedule", "change", "push back", "postpone", "rebook", "shift",
             "bring forward", "change the date of", "change the time of"),
    "cancel": ("cancel", "call off", "drop", "scrap", "get rid of", "delete", "remove"),
    "create": ("book", "make", "schedule", "set up", "arrange", "add", "create", "request",
               "get", "open", "bring", "include"),
    "update": ("update", "change", "edit", "correct", "fix", "amend"),
    "record": ("record", "note down", "log", "write down", "take down", "save"),
    "search": ("find", "search for", "look for", "ask about"),
    "pay": ("pay", "settle", "make a payment on", "pay off"),
    "send": ("send", "resend", "email", "text me"),
    "close": ("close", "shut", "terminate", "end"),
    "report": ("report", "flag", "complain about", "tell you about a problem with"),
    "renew": ("renew", "extend", "continue"),
    "buy": ("buy", "purchase", "order"),
    "transfer": ("transfer", "move over", "switch"),
    "refund": ("refund", "get my money back for", "give me my money back for", "reimburse",
               "pay me back for"),
}  # fmt: skip
"""Caller phrasings of an action a tool's name or description names."""

VERB_WORDS: dict[str, str] = {
    "check": "check", "status": "check", "track": "check", "lookup": "check", "look": "check",
    "get": "check", "view": "check", "show": "list", "list": "list", "find": "check",
    "locate": "check", "where": "check", "retrieve": "check", "fetch": "check", "read": "check",
    "move": "move", "reschedule": "move", "postpone": "move", "rebook": "move", "shift": "move",
    "cancel": "cancel", "delete": "cancel", "remove": "cancel", "drop": "cancel",
    "book": "create", "create": "create", "make": "create", "schedule": "create",
    "add": "create", "open": "create", "arrange": "create", "request": "create",
    "new": "create", "start": "create", "place": "create",
    "update": "update", "edit": "update", "change": "update", "modify": "update",
    "amend": "update", "correct": "update", "set": "update",
    "record": "record", "log": "record", "note": "record", "save": "record",
    "search": "search", "query": "search", "ask": "search", "answer": "search",
    "pay": "pay", "charge": "pay", "settle": "pay",
    "send": "send", "resend": "send", "email": "send", "notify": "send",
    "close": "close", "terminate": "close", "end": "close", "deactivate": "close",
    "report": "report", "flag": "report", "complain": "report",
    "renew": "renew", "extend": "renew",
    "buy": "buy", "purchase": "buy",
    "transfer": "transfer", "switch": "transfer",
    "refund": "refund", "reimburse": "refund", "repay": "refund",
}  # fmt: skip
"""A name or description word and the action family it names."""


TIMES = (
    "tomorrow", "next monday", "friday at 3 pm", "tomorrow morning", "next week",
    "the 12th at 10", "thursday afternoon", "later today", "nnn pm", "another day",
)  # fmt: skip
CODE_WORDS = ("id", "number", "code", "reference", "ref", "no")
TIME_WORDS = frozenset((
    "when", "date", "time", "day", "datetime", "slot", "start", "starts", "starts_at",
    "new_time", "new_date", "due", "hour",
))  # fmt: skip

VERB_TEMPLATES = (
    "{v} my {n}", "i want to {v} my {n}", "i would like to {v} my {n}", "can you {v} my {n}",
    "could you {v} the {n} please", "i need to {v} a {n}", "please {v} my {n}", "{v} {n}",
    "can i {v} my {n}", "help me {v} my {n}", "id like to {v} the {n}", "i need you to {v} my {n}",
)  # fmt: skip
FAMILY_TEMPLATES: dict[str, tuple[str, ...]] = {
    "check": ("where is my {n}", "whats the status of my {n}", "any news on my {n}",
              "whats happening with my {n}", "has my {n} arrived", "when will my {n} come",
              "is my {n} on its way", "what is going on with {n} nnn", "{n} nnn status",
              "whats the {n}", "whats my {n}", "tell me the {n}", "what is the {n} like"),
    "list": ("what {n}s do i have", "do i have any {n}s", "when is my next {n}",
             "which {n}s do i have coming up", "my upcoming {n}s", "have i got a {n}",
             "when is my {n}", "what {n}s are there"),
    "move": ("i cant make my {n} can we do another day", "move my {n} to {t}",
             "can we change my {n} to {t}", "a different day for my {n}", "{n} {t} instead",
             "i need a new time for my {n}", "put my {n} on {t} instead"),
    "cancel": ("i dont need my {n} anymore", "cancel the {n} on {t}", "i wont need the {n}",
               "please cancel {n} nnn", "i want to cancel my {n}"),
    "create": ("i want a {n}", "i need a new {n}", "can i get a {n} for {t}", "set up a {n}"),
}  # fmt: skip
CALLBACK_LINES = (
    "call me back", "can you call me back {t}", "please call me back {t}",
    "could someone call me {t}", "have someone call me back", "ring me back {t}",
    "phone me back {t}", "give me a call back {t}", "i would like a call back {t}",
    "get back to me {t}", "can i get a callback", "callback {t}", "i cant talk now call me later",
    "call me {t} about it", "can somebody ring me {t}", "arrange a call back for {t}",
    "please phone me {t}", "call me later", "can you ring me later", "have someone get back to me",
)  # fmt: skip
QUESTION_TEMPLATES = (
    "{q}", "what about {q}", "tell me about {q}", "i have a question about {q}",
    "whats your policy on {q}", "how does {q} work", "can you tell me about {q}",
    "what are the rules for {q}", "question about {q}", "i wanted to ask about {q}",
    "do you {q}", "how long {q}", "what is the {q}",
)  # fmt: skip
GENERIC_QUESTIONS = (
    "what is your policy", "can i ask a question", "i have a question", "how does it work",
    "what are the rules", "is it possible to", "do you allow", "how long does it take",
)  # fmt: skip

ACT_LINES: dict[str, tuple[str, ...]] = {
    "greet": (
        "hello", "hi", "hey", "hi there", "hello there", "good morning", "good afternoon",
        "good evening", "hey there", "hiya", "morning", "hello how are you", "hi how are you",
        "hey hows it going", "hello anyone there", "hi is this working", "yes hello",
        "hello can you hear me", "howdy", "greetings",
    ),
    "thanks": (
        "thank you", "thanks", "thanks a lot", "thank you very much", "cheers", "great thanks",
        "thats great thank you", "perfect thanks", "much appreciated", "thanks for your help",
        "thank you so much", "brilliant thank you", "ok thanks", "lovely thanks",
        "appreciate it", "that helps thanks", "awesome thank you", "thanks that is all",
    ),
    "goodbye": (
        "bye", "goodbye", "bye bye", "see you", "see you later", "talk to you later",
        "have a good day", "thats all bye", "i have to go", "thats everything goodbye",
        "take care bye", "nothing else bye", "ok bye now", "goodbye for now", "gotta go",
        "have a nice day", "im done bye", "so long", "that will be all goodbye",
    ),
    "person": (
        "can i speak to a person", "i want to talk to a human", "put me through to someone",
        "let me speak to a real person", "i want an agent", "agent", "operator",
        "representative", "human please", "transfer me to a person",
        "can i talk to someone real", "connect me to a human", "i need to speak to someone",
        "get me a real person", "is there a human i can talk to", "speak to an operator",
        "talk to customer service", "put me through to a representative",
        "i would rather talk to a person", "a real human please", "speak to staff",
        "can i talk to your manager", "connect me with a person",
    ),
    "repeat": (
        "what did you say", "can you repeat that", "repeat that please", "say that again",
        "sorry i didnt catch that", "pardon", "come again", "sorry what", "what was that",
        "i didnt hear you", "could you say it again", "once more please", "sorry say again",
        "repeat please", "i missed that", "pardon me", "excuse me what", "one more time",
        "can you repeat the last bit", "sorry i didnt get that",
    ),
    "capabilities": (
        "what can you do", "what can you help me with", "how can you help me",
        "what do you do", "what can i ask you", "what are you able to do",
        "what kind of things can you do", "what are my options", "what can i do here",
        "what else can you do", "what do you help with", "can you help me",
        "what services do you offer", "what can you do for me", "what is this line for",
        "what things can you handle", "tell me what you can do", "how do you work",
    ),
    "identity": (
        "who are you", "what are you", "are you a robot", "am i talking to a machine",
        "are you a bot", "are you human", "are you real", "whats your name",
        "who am i speaking to", "who is this", "is this a computer", "are you an ai",
        "is this an automated system", "are you a real person or a machine",
        "what should i call you", "who am i talking with", "are you a recording",
        "is this a person or a robot", "what company is this",
    ),
    "decline": (
        "no forget it", "never mind", "no thanks", "no thank you", "forget about it",
        "dont worry about it", "no its fine", "nah", "no leave it", "actually no",
        "not now", "no i dont want that", "no dont do that", "skip it", "no need",
        "i changed my mind", "dont bother", "no thats ok", "maybe later not now",
        "no im good", "leave it for now", "nope",
    ),
    OUT_OF_SCOPE: (
        "whats the weather like", "will it rain tomorrow", "tell me a joke",
        "who won the game last night", "whats the score", "sing me a song", "play some music",
        "whats the capital of spain", "what is the meaning of life", "recommend a restaurant",
        "whats a good movie to watch", "how do i fix my computer", "whats the news today",
        "what is the stock price", "how much is bitcoin", "help me with my homework",
        "what is two plus two", "translate this into french", "write me a poem",
        "who is the president", "how tall is mount everest", "tell me a story",
        "what is your favourite colour", "do you like pizza", "how do i cook pasta",
        "book me a flight", "order me a taxi", "whats the time in tokyo", "my wifi is broken",
        "can you lend me money", "what is the best phone to buy", "how old are the pyramids",
        "give me directions to the airport", "what are the lottery numbers",
        "can you set an alarm", "read me the horoscope", "whats on tv tonight",
        "banana", "blah blah", "um", "hmm", "testing testing",
    ),
}  # fmt: skip
"""Generic English lines of each act (never a profile's names)."""
OFF_TOPICS = (
    "football", "the weather", "politics", "movies", "celebrities", "cooking", "the news",
    "history", "music", "video games", "holidays abroad", "the lottery",
)  # fmt: skip
"""Subjects no customer-service profile covers, asked in the catalog questions' own frames
("tell me about football"), so a question frame alone does not mean a catalog question."""
