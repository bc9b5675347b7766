import json

import pytest

from eviscene.errors import ReleaseError
from eviscene.rules.urls import normalize_url, url_host
from eviscene.tools.policy import load_source_policy, source_policy_from_dict


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTPS://WWW.Example.COM/", "https://example.com"),
        ("https://example.com:443/a/b/", "https://example.com/a/b"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("https://example.com/a#section", "https://example.com/a"),
        ("https://example.com/a?b=1#x", "https://example.com/a?b=1"),
        ("https://example.com/Case/Path", "https://example.com/Case/Path"),
        ("https://user:pw@www.example.com./x", "https://example.com/x"),
        ("https://example.com/page#image=images/a.jpg", "https://example.com/page"),
        ("  example.com/a/  ", "//example.com/a"),
        # campaign tags are dropped (the releases' process_reference_protocol.json), the rest kept in order
        ("https://example.com/a?utm_source=x&id=1&UTM_Medium=y&b=2#f", "https://example.com/a?id=1&b=2"),
        ("https://example.com/a/?utm_source=newsletter&utm_medium=email", "https://example.com/a"),
        ("https://example.com/a?utmost=1&utm=2", "https://example.com/a?utmost=1&utm=2"),
    ],
)
def test_normalize_url(raw, expected):
    assert normalize_url(raw) == expected


def test_url_host():
    assert url_host("https://WWW.News.Example.com:8443/x?y") == "news.example.com"


def policy(**rules):
    return source_policy_from_dict({"policy_id": "p", **rules})


def test_domain_blocks_the_domain_and_its_subdomains_only():
    p = policy(blocked_domains=["FactCheck.org"])
    assert p.check("https://factcheck.org/a") == "blocked_domain"
    assert p.check("http://www.factcheck.org/a") == "blocked_domain"
    assert p.check("https://deep.news.factcheck.org/") == "blocked_domain"
    assert p.check("https://notfactcheck.org/a") is None
    assert p.check("https://factcheck.org.evil.com/a") is None


def test_prefix_matches_after_normalization_at_a_path_boundary():
    p = policy(blocked_url_prefixes=["https://www.site.com/fact-check/", "https://site.com/story"])
    assert p.check("https://site.com/fact-check/abc") == "blocked_url_prefix"
    assert p.check("HTTP://WWW.SITE.COM/fact-check") == "blocked_url_prefix"  # scheme ignored, slash dropped
    assert p.check("https://site.com/fact-check/abc#frag") == "blocked_url_prefix"
    assert p.check("https://site.com/story") == "blocked_url_prefix"
    assert p.check("https://site.com/story/2") == "blocked_url_prefix"
    assert p.check("https://site.com/story?page=2") == "blocked_url_prefix"
    assert p.check("https://site.com/story-2") is None
    assert p.check("https://site.com/fact-checking") is None
    assert p.check("https://site.com/news/fact-check/abc") is None


def test_prefix_ending_in_punctuation_is_open_ended():
    p = policy(blocked_url_prefixes=["https://site.com/story-", "https://site.com/search?q="])
    assert p.check("https://site.com/story-2") == "blocked_url_prefix"
    assert p.check("https://site.com/search?q=harbor") == "blocked_url_prefix"
    assert p.check("https://site.com/story") is None


# A blocked page reached another way: each URL below is served as the blocked page by a
# server that decodes it (percent escapes, `//`, backslashes, `.` and `..` segments, a case-blind file
# system, a host in another spelling), so each must be blocked as the page itself is. Each
# expectation is worked out by hand from the rules in eviscene/rules/source_policy.py; the
# `None` rows show the readings do not spill over to neighbouring pages.
READINGS_POLICY = {
    "blocked_domains": ["blocked.example", "bücher.example", "10.0.0.1", "[2001:db8::1]", "127.0.0.3"],
    "blocked_url_prefixes": ["http://127.0.0.1:18090/fact-check/", "https://archive.net/q?id="],
}
PAGE = "http://127.0.0.1:18090"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (f"{PAGE}/fact%2Dcheck/story.html", "blocked_url_prefix"),  # an escaped unreserved character
        (f"{PAGE}/fact%2dcheck/story.html", "blocked_url_prefix"),  # in lower case
        (f"{PAGE}/%66act-check/story.html", "blocked_url_prefix"),
        (f"{PAGE}/fact%252Dcheck/story.html", "blocked_url_prefix"),  # escaped twice
        (f"{PAGE}//fact-check/story.html", "blocked_url_prefix"),  # a doubled slash
        (f"{PAGE}/fact-check//story.html", "blocked_url_prefix"),
        (f"{PAGE}/fact-check%2fstory.html", "blocked_url_prefix"),  # an escaped slash
        (f"{PAGE}/fact-check%5Cstory.html", "blocked_url_prefix"),  # an escaped backslash
        (f"{PAGE}\\fact-check\\story.html", "blocked_url_prefix"),  # backslashes
        (f"{PAGE}/x/%2e%2e/fact-check/story.html", "blocked_url_prefix"),  # escaped dot segments
        (f"{PAGE}/x/%2E%2E/fact-check/story.html", "blocked_url_prefix"),
        (f"{PAGE}/%2e/fact-check/story.html", "blocked_url_prefix"),
        (f"{PAGE}/x/../fact-check/story.html", "blocked_url_prefix"),
        (f"{PAGE}/FACT-CHECK/story.html", "blocked_url_prefix"),  # a case-blind file system
        (f"{PAGE}/fact-check?page=2#top", "blocked_url_prefix"),
        ("http://127.1:18090/fact-check/story.html", "blocked_url_prefix"),  # IPv4 in short,
        ("http://2130706433:18090/fact-check/story.html", "blocked_url_prefix"),  # decimal
        ("http://0x7f.0.0.1:18090/fact-check/story.html", "blocked_url_prefix"),  # and hex form
        ("http://127.0.0.1.:018090/fact-check/story.html", "blocked_url_prefix"),  # a trailing dot, a padded port
        ("http://reader:pw@127.0.0.1:18090/fact-check/story.html", "blocked_url_prefix"),  # userinfo
        ("https://archive.net:443/q?%69d=42", "blocked_url_prefix"),  # an escape in the query
        ("http://archive.net:443/q?id=42", "blocked_url_prefix"),  # 443 over http: the scheme is ignored
        ("http://BLOCKED.example/a", "blocked_domain"),
        ("http://blocked.example./a", "blocked_domain"),  # a trailing dot
        ("http://reader@blocked.example/a", "blocked_domain"),
        ("http://blocked.example:8080/a", "blocked_domain"),
        ("http://%62locked.example/a", "blocked_domain"),  # an escape in the host
        ("http://blocked。example/a", "blocked_domain"),  # an ideographic full stop
        ("http://ｂｌｏｃｋｅｄ.example/a", "blocked_domain"),  # full-width letters
        ("http://good.example\\@blocked.example/a", "blocked_domain"),  # httpx: the host follows `@`
        ("http://blocked.example\\@good.example/a", "blocked_domain"),  # browsers: a backslash ends the host
        ("http://xn--bcher-kva.example/a", "blocked_domain"),  # punycode of a Unicode domain
        ("http://BÜCHER.example/a", "blocked_domain"),
        ("http://10.1/a", "blocked_domain"),  # 10.0.0.1
        ("http://167772161/a", "blocked_domain"),  # 10.0.0.1
        ("http://blocked.example\uff0fa", "blocked_domain"),  # a full-width solidus: NFKC reads `/`
        ("http://[2001:db8::1]/a", "blocked_domain"),  # IPv6 literals, as the resolver reads them
        ("http://[2001:0DB8:0:0::0001]:8080/a", "blocked_domain"),
        ("http://[2001:db8::1%25eth0]/a", "blocked_domain"),  # a zone id names an interface
        ("http://[::ffff:127.0.0.3]/a", "blocked_domain"),  # IPv4-mapped: reaches 127.0.0.3
        ("http://[::ffff:7f00:3]/a", "blocked_domain"),
        ("http://[::ffff:7f00:1]:18090/fact-check/story.html", "blocked_url_prefix"),  # 127.0.0.1
        ("http://[2001:db8::2]/a", None),
        ("http://[::127.0.0.3]/a", None),  # IPv4-compatible, deprecated: not 127.0.0.3
        ("http://[oops/a", None),  # no URL: no client fetches it
        (f"{PAGE}/fact-check;jsessionid=1/story.html", "blocked_url_prefix"),  # path parameters
        (f"{PAGE}/fact-check%3Bx=1/story.html", "blocked_url_prefix"),
        (f"{PAGE}/x;y/..;/fact-check/story.html", "blocked_url_prefix"),
        (f"{PAGE}/;x/fact-check/story.html", "blocked_url_prefix"),  # a parameter-only segment: `//fact-check`
        (f"{PAGE}/;jsessionid=1/fact-check/story.html", "blocked_url_prefix"),
        (f"{PAGE}//;x//;y/fact-check/story.html", "blocked_url_prefix"),
        (f"{PAGE}/fact-check. /story.html", "blocked_url_prefix"),  # IIS drops a segment's trailing dots and spaces
        (f"{PAGE}/fact-check%23x", "blocked_url_prefix"),  # a decoded `#` ends the path
        (f"{PAGE}/fact-checkx./story.html", None),
        (f"{PAGE}/news;x/fact-check/story.html", None),  # `/news/fact-check`
        (f"{PAGE}/;x/fact-checking/story.html", None),
        (f"{PAGE}/fact-checking;x/story.html", None),
        (f"{PAGE}/fact-checking", None),
        (f"{PAGE}/fact%2Dchecking/story.html", None),
        (f"{PAGE}/news/fact-check/story.html", None),
        ("http://127.0.0.1:18091/fact-check/story.html", None),  # another port
        ("https://archive.net:8443/q?id=42", None),
        ("https://archive.net/q?idx=1", None),
        ("http://FACT-check.example/a", None),
        ("http://notblocked.example/a", None),
        ("http://blocked.example.evil.com/a", None),
        ("http://buecher.example/a", None),
        ("http://10.0.0.10/a", None),
    ],
)
def test_a_blocked_source_is_blocked_however_its_url_is_spelled(url, reason):
    assert policy(**READINGS_POLICY).check(url) == reason


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://news.example/a/story.", "blocked_url_prefix"),  # IIS drops a segment's trailing dots and spaces
        ("https://news.example/a/story%20", "blocked_url_prefix"),
        ("https://news.example/a/story.%20.", "blocked_url_prefix"),
        ("https://news.example/a/story%00.jpg", "blocked_url_prefix"),  # a decoded NUL ends the path
        ("https://news.example/a/story%2500.jpg", "blocked_url_prefix"),
        ("https://news.example/a/story%23.jpg", "blocked_url_prefix"),  # so does a decoded `#`
        ("https://news.example/a/story.html", None),
        ("https://news.example/a/story-2", None),
        ("https://news.example/a/story.x.", None),  # `/a/story.x`
    ],
)
def test_a_blocked_page_is_blocked_as_a_windows_server_reads_its_path(url, reason):
    """`/a/story.`, `/a/story%20` and `/a/story%00.jpg` are `/a/story` to IIS; the prefix,
    which ends at a path boundary, let them through."""
    assert policy(blocked_url_prefixes=["https://news.example/a/story"]).check(url) == reason


@pytest.mark.parametrize(("prefix", "url", "reason"), [
    # A prefix is not read as IIS reads a path: cut at its `%23`, it blocked every page under /wiki/c
    ("https://en.wikipedia.org/wiki/C%23_(programming_language)", "https://en.wikipedia.org/wiki/China", None),
    ("https://en.wikipedia.org/wiki/C%23_(programming_language)", "https://en.wikipedia.org/wiki/C%23_(programming_language)",
     "blocked_url_prefix"),
    ("https://news.example/a/story.", "https://news.example/a/storyboard", None),  # open-ended at `story.`, not `story`
    ("https://news.example/a/story.", "https://news.example/a/story.html", "blocked_url_prefix"),
    ("https://news.example/a/story", "https://news.example/x/.. /a/story", "blocked_url_prefix"),  # `.. ` is `..` there
    ("https://news.example/a/story", "https://news.example/x/..%20/a/story", "blocked_url_prefix"),
])
def test_a_prefix_is_read_as_written_and_only_the_url_as_a_windows_server_reads_it(prefix, url, reason):
    assert policy(blocked_url_prefixes=[prefix]).check(url) == reason


QUERY_POLICY = {"blocked_url_prefixes": ["https://news.example/story.php?id=42", "https://news.example/read?a=1&b=2",
                                         "https://archive.net/q?id="]}


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://news.example/story.php?id=42", "blocked_url_prefix"),
        ("https://news.example/story.php?id=42&utm_source=x", "blocked_url_prefix"),  # a parameter added after
        ("https://news.example/story.php?utm_source=x&id=42", "blocked_url_prefix"),  # or before
        ("https://news.example/story.php?a=1&id=42&b=2", "blocked_url_prefix"),
        ("https://news.example/story.php?id=1&id=42", "blocked_url_prefix"),  # PHP reads the last `id`
        ("https://news.example/story.php?utm_source=x&%69d=42", "blocked_url_prefix"),  # an escaped name
        ("https://news.example/read?b=2&a=1", "blocked_url_prefix"),  # two parameters, swapped
        ("https://news.example/read?b=2&x=0&a=1", "blocked_url_prefix"),
        ("https://archive.net/q?lang=en&id=42", "blocked_url_prefix"),  # open-ended: `id=` goes on
        ("https://news.example/story.php/x?id=42", "blocked_url_prefix"),  # PHP's PATH_INFO: the same script
        ("https://news.example/story.php?id=420", None),  # another value
        ("https://news.example/story.php?id=4", None),
        ("https://news.example/story.php?xid=42&utm=id", None),
        ("https://news.example/story.php", None),  # no query
        ("https://news.example/story.php?utm_source=x", None),
        ("https://news.example/other.php?id=42", None),  # another path
        ("https://news.example/story.php2?id=42", None),
        ("https://news.example/read?a=1", None),  # one of two parameters
        ("https://news.example/read?a=1&b=20", None),
        ("https://archive.net/q?lang=en&idx=1", None),
    ],
)
def test_a_prefix_with_a_query_blocks_its_page_with_its_parameters_in_any_order_among_others(url, reason):
    assert policy(**QUERY_POLICY).check(url) == reason


def test_prefixes_and_domains_are_read_as_urls_are():
    p = policy(blocked_url_prefixes=["https://site.com/Fact%2DCheck//"], blocked_domains=["XN--BCHER-KVA.example."])
    assert p.check("https://site.com/fact-check/a") == "blocked_url_prefix"
    assert p.check("https://bücher.example/a") == "blocked_domain"
    assert p.check("https://site.com/fact-checking") is None


def test_content_hash_blocks_any_known_hash():
    h = "ab" * 32
    p = policy(blocked_content_sha256=[h.upper()])
    assert p.check("https://ok.com/a", h) == "blocked_content_sha256"
    assert p.check("https://ok.com/a", "cd" * 32, other_sha256=[h]) == "blocked_content_sha256"
    assert p.check("https://ok.com/a", "cd" * 32) is None
    assert p.check("https://ok.com/a") is None


def test_empty_policy_is_inactive_and_allows_everything():
    p = source_policy_from_dict({})
    assert not p.active
    assert p.check("https://anything.com/x", "00" * 32) is None
    assert policy(blocked_domains=["a.com"]).active


def test_load_reads_the_policy_file(tmp_path):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"policy_id": "x", "blocked_domains": ["a.com"], "cache_partition": "c"}))
    loaded = load_source_policy(path)
    assert loaded.policy_id == "x" and loaded.cache_partition == "c"
    assert loaded.check("https://a.com") == "blocked_domain"


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "not valid JSON"), ("[]", "must be a JSON object"), ('{"blocked_domains": "a.com"}', "malformed"),
     ("[" * 50_000 + "]" * 50_000, "not valid JSON: nested too deeply"),
     # Python's json would block b.com, the audit's DuckDB a.com
     ('{"blocked_domains": ["a.com"], "blocked_domains": ["b.com"]}', "the key 'blocked_domains' appears twice in one object")],
)
def test_load_rejects_malformed_files(tmp_path, content, message):
    path = tmp_path / "policy.json"
    path.write_text(content)
    with pytest.raises(ReleaseError, match=message):
        load_source_policy(path)


def test_load_reports_a_missing_file(tmp_path):
    with pytest.raises(ReleaseError, match="not found"):
        load_source_policy(tmp_path / "nope.json")


KNOWN_KEYS = "policy_id, blocked_domains, blocked_url_prefixes, blocked_content_sha256, cache_partition"


def test_a_policy_file_with_an_unknown_key_is_refused_naming_it_a_close_match_and_the_known_keys(tmp_path):
    # Ignored, the misspelled keys would block nothing, and the run's audit (by the same file) would see no leak.
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"policy_id": "x", "blocked_domain": ["a.com"], "blocked_urls_prefixes": ["https://b.com/"],
                                "notes": "?"}))
    with pytest.raises(ReleaseError) as refused:
        load_source_policy(path)
    assert str(refused.value) == (
        f"{path}: source access policy has unknown key(s) 'blocked_domain' (did you mean 'blocked_domains'?), "
        f"'blocked_urls_prefixes' (did you mean 'blocked_url_prefixes'?), 'notes'; known keys: {KNOWN_KEYS}"
    )


@pytest.mark.parametrize(("entry", "hint"), [
    ("https://truthmeter.example/", "; write 'truthmeter.example'"),
    ("truthmeter.example/fact-check", "; write 'truthmeter.example'"),
    ("truthmeter.example:443", "; write 'truthmeter.example'"),
    ("[2001:db8::1]:8080", "; write '2001:db8::1'"),
    (" truthmeter.example", "; write 'truthmeter.example'"),
    ("truth meter.example", ""),
])
def test_a_blocked_domain_that_is_not_a_bare_domain_is_refused_naming_it(tmp_path, entry, hint):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"blocked_domains": ["ok.example", entry]}))
    with pytest.raises(ReleaseError) as refused:
        load_source_policy(path)
    assert str(refused.value) == (f"{path}: source access policy's blocked_domains entry {entry!r} is not a bare domain "
                                  f"(it has a scheme, path, port or space){hint}")


def test_every_form_of_a_bare_domain_is_accepted():
    forms = ["a.example", "*.b.example", ".c.example", "FactCheck.example", "bücher.example", "XN--BCHER-KVA.example.",
             "10.0.0.1", "[2001:db8::1]", "::1", "fe80::1%eth0"]
    assert source_policy_from_dict({"blocked_domains": forms}).check("https://www.b.example/x") == "blocked_domain"
