"""What counts as a letter in free text, written once for the search index's terms and the
offline agent's reading of a printed claim, so a name the agent reads is a term the index
holds: Unicode's letters (Gdańsk, İstanbul, Łódź, Вальпараисо, 北京), as Python's `\\w` reads
them without its digits and underscore. A combining mark is no letter to it: text written
decomposed (`a` then U+0300) and scripts whose vowel signs are marks (Devanagari's) are cut
into pieces, the same pieces in the index and in a claim."""

LETTER = r"[^\W\d_]"
LETTER_OR_DIGIT = r"[^\W_]"
