"""What counts as a letter in free text, written once for the search index's terms and the
offline agent's reading of a printed claim, so a name the agent reads is a term the index
holds: Unicode's letters in every script (Gdańsk, İstanbul, Łódź, Вальпараисо, 北京), as
Python's `\\w` reads them without its digits and underscore."""

LETTER = r"[^\W\d_]"
LETTER_OR_DIGIT = r"[^\W_]"
