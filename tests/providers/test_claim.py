"""Reading a printed claim: dates in the common formats, named places, topic words."""

from datetime import date

from eviscene.providers.offline.claim import parse_claim, parse_dates


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
