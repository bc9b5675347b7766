import json

import pytest
from web_servers import HASHED, start_site

from eviscene.rules.source_policy import SourceAccessPolicy, policy_from_fields
from eviscene.tools.web.fetch import extract


@pytest.fixture(scope="module")
def site():
    site = start_site()
    yield site
    site.close()


def policy_dict(site, partition: str = "web-test-v1") -> dict:
    hashed = extract(HASHED.encode(), "text/html", site.url("/hashed")).content_sha256
    return {
        "policy_id": "web-test",
        "blocked_domains": ["127.0.0.2"],
        "blocked_url_prefixes": [site.url("/leak")],
        "blocked_content_sha256": [hashed],
        "cache_partition": partition,
    }


@pytest.fixture(scope="module")
def policy(site) -> SourceAccessPolicy:
    return policy_from_fields(policy_dict(site))


@pytest.fixture
def policy_file(site, tmp_path):
    def write(partition: str = "web-test-v1"):
        path = tmp_path / f"policy-{partition}.json"
        path.write_text(json.dumps(policy_dict(site, partition)), encoding="utf-8")
        return path

    return write
