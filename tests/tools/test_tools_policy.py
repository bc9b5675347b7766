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
    [("{not json", "not valid JSON"), ("[]", "must be a JSON object"), ('{"blocked_domains": "a.com"}', "malformed")],
)
def test_load_rejects_malformed_files(tmp_path, content, message):
    path = tmp_path / "policy.json"
    path.write_text(content)
    with pytest.raises(ReleaseError, match=message):
        load_source_policy(path)


def test_load_reports_a_missing_file(tmp_path):
    with pytest.raises(ReleaseError, match="not found"):
        load_source_policy(tmp_path / "nope.json")
