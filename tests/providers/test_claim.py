"""Reading a printed claim: dates in the common formats, named places, topic words."""

from datetime import date

from eviscene.providers.offline.claim import parse_claim, parse_dates
from eviscene.tools.search import tokenize


def test_dates_in_common_formats():
    assert parse_dates("on 6 May 2024") == [date(2024, 5, 6)]
    assert parse_dates("August 28, 2017 and 2019-03-01") == [date(2017, 8, 28), date(2019, 3, 1)]
    assert parse_dates("3rd Sept 2021") == [date(2021, 9, 3)]
    assert parse_dates("12/03/2020") == [date(2020, 3, 12)]
    assert parse_dates("31 February 2020") == []


def test_names_and_topic():
    claim = parse_claim("BREAKING: Shark swims on flooded highway in Houston after Hurricane Harvey, August 28, 2017")
    assert claim.names == ["Houston", "Hurricane Harvey"]
    assert claim.topic == ["shark", "swims", "flooded", "highway"]
    assert claim.date == date(2017, 8, 28)
    assert claim.query(with_date=True) == "Houston Hurricane Harvey shark swims flooded highway 28 August 2017"


def test_handles_and_hashtags_are_not_names():
    claim = parse_claim("@CityDesk Floodwaters sweep through Porto Alegre #RS 6 May 2024")
    assert claim.names == ["Porto Alegre"]


def test_a_line_or_comma_ends_a_name():
    # A badge or watermark on its own line must not join the caption's last name (tuning
    # variants 113 and 115: "Hamburg Exclusive" and "Valparaiso MMM" are on no page).
    claim = parse_claim("Fire breaks out on cargo\nship in port of Hamburg, 8\nNovember 2023\nEXCLUSIVE")
    assert claim.names == ["Hamburg", "Exclusive"]
    assert claim.date == date(2023, 11, 8)
    assert parse_claim("Smoke over Valparaiso, Chile\nMMM").names == ["Valparaiso", "Chile", "MMM"]
    assert parse_claim("Floods in Porto\nAlegre").names == ["Porto", "Alegre"]


def test_letters_of_every_script_are_read_as_the_search_index_reads_them():
    assert parse_claim("Floods hit Gdańsk, 3 May 2024").names == ["Gdańsk"]
    assert parse_claim("Quake shakes İstanbul").names == ["İstanbul"]
    assert parse_claim("Storm over Łódź and Hà Nội").names == ["Łódź", "Hà Nội"]
    russian = parse_claim("Дым от лесного пожара над Вальпараисо, 3 February 2024")
    assert russian.names == ["Вальпараисо"] and russian.topic == ["дым", "лесного", "пожара", "над"]
    assert parse_claim("北京沙尘暴").query(with_date=False) == "北京沙尘暴"  # no spaces: one word, as the index reads it
    claim = parse_claim("Floods hit Gdańsk and Łódź, 3 May 2024")
    assert tokenize(claim.query(with_date=False)) == ["gdańsk", "łódź", "floods", "hit"]


def test_a_badge_line_leaves_the_captions_first_word_opening_its_sentence():
    # The bundled release's demo-0002 and demo-0008: "Wildfire" and "Pension" open the caption under the badge; no place.
    claim = parse_claim("LIVE\nWildfire smoke engulfs hills above Lisbon, 3\nFebruary 2024")
    assert claim.names == ["Lisbon"]
    assert claim.topic == ["wildfire", "smoke", "engulfs", "hills", "above"]
    assert parse_claim("VIRAL\nPension protest crowds fill central Paris, 23 March\n2023").names == ["Paris"]
    assert parse_claim("BREAKING NEWS\nTornado touches down over Lisbon").names == ["Lisbon"]
    # A line with words of its own still ends mid-sentence: the next line's capital is a name.
    assert parse_claim("Crowds cheer\nParis Saint-Germain").names == ["Paris Saint-Germain"]
