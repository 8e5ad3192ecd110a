"""Hindi, in Devanagari and romanised: the words a sentence cannot end on.

Hindi puts the verb last (subject, object, verb): a sentence that stops on a postposition ("ko",
"se", "mein"), a possessive ("mera"), a conjunction ("aur", "kyunki", "ki") or a filler
("matlab") has its verb still to come. Romanised words are listed only where they do not collide
with a Hindi word a sentence ends on ("main" is both "in" and "I": left out; so is "to").
"""

from __future__ import annotations

from typing import Final

from vocero.contracts.lexicon.base import Lexicon, open_table, word_set

LEXICON: Final = Lexicon(
    language="hi",
    open_words=open_table(
        filler="um umm uh matlab yaani मतलब यानी",
        preposition="ko se mein tak ka ki ke par pe को से में तक का की के पर पे",
        conjunction="aur ya lekin magar kyunki kyonki agar jab taaki jaise और या लेकिन मगर "
        "क्योंकि अगर जब ताकि जैसे कि",
        relative="jo jis jiska जो जिस जिसका",
        possessive="mera meri mere hamara hamari hamare aapka aapki aapke मेरा मेरी मेरे हमारा "
        "हमारी हमारे आपका आपकी आपके",
    ),
    digit_words=word_set(
        "shunya ek do teen char paanch chhah saat aath nau शून्य एक दो तीन चार पांच पाँच छह सात आठ नौ"
    ),
    greetings=word_set("namaste namaskar नमस्ते नमस्कार"),
)
