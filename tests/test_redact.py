"""``redact`` leaves no password in what it returns, for every way libpq takes one.

Internals imported on purpose: the redaction is the one place every shown store goes through.
"""

from __future__ import annotations

from urllib.parse import quote

from hypothesis import given
from hypothesis import strategies as st

from wfctl._redact import malformed, passwords, redact

#: Passwords that are easy to find again: a marker, then anything but NUL (which libpq
#: forbids) or a lone surrogate, percent-encoded where a URL holds them.
secrets = st.text(
    st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), min_size=1, max_size=12
).map(lambda tail: f"Pw9x{tail}")
hosts = st.sampled_from(
    ["localhost", "db.example.com:5432", "h1,h2:5433", "[::1]:5432", "[fe80::1%25eth0]", ""]
)


def _hidden(url: str, secret: str) -> None:
    shown = redact(url)
    for form in (secret, quote(secret, safe=""), "Pw9x"):
        assert form not in shown, (url, shown)
    assert redact(shown) == shown  # masking twice changes nothing


@given(secrets, hosts, st.sampled_from(["postgresql", "postgres"]))
def test_a_password_in_the_user_part_is_masked(secret: str, host: str, scheme: str) -> None:
    url = f"{scheme}://alice:{quote(secret, safe='')}@{host}/db?sslmode=require"
    _hidden(url, secret)
    assert malformed(url) is None
    assert redact(url) == f"{scheme}://alice:***@{host}/db?sslmode=require"
    assert secret in passwords(url)


@given(secrets, hosts, st.sampled_from(["password", "PASSWORD", "pass%77ord"]))
def test_a_password_parameter_is_masked(secret: str, host: str, key: str) -> None:
    url = f"postgresql://alice@{host}/db?{key}={quote(secret, safe='')}&application_name=x"
    _hidden(url, secret)
    assert redact(url).endswith(f"?{key}=***&application_name=x")


@given(secrets, st.sampled_from(["@", "/", "?", "[", "%zz", "&x", "=y"]), hosts)
def test_a_malformed_url_is_masked_before_its_last_at(secret: str, bad: str, host: str) -> None:
    for url in (
        f"postgresql://bob:{secret}{bad}@{host}/wf",
        f"postgresql://bob:pw@[{host}/wf?password={secret}{bad}",
        f"postgresql://{host}/wf?password={secret}{bad}",
    ):
        if malformed(url) is not None:
            _hidden(url, secret)


@given(st.text(min_size=1, max_size=12).filter(lambda s: "'" not in s and "\\" not in s))
def test_a_connection_string_password_is_masked(tail: str) -> None:
    secret = f"Pw9x{tail}"
    for text in (
        f"host=x password='{secret}' dbname=y",
        f"host=x password = '{secret}",  # unterminated: all of it
    ):
        assert "Pw9x" not in redact(text), text
    if not any(c.isspace() for c in secret):
        assert redact(f"password={secret} user=u") == "password=*** user=u"


def test_the_forms_of_the_review() -> None:
    assert redact("postgresql://alice:pw@host/db") == "postgresql://alice:***@host/db"
    assert redact("postgresql://bob:pw@[::1:5432/wf") == "postgresql://***@[::1:5432/wf"
    assert malformed("postgresql://bob:pw@[::1:5432/wf") == "an IPv6 host's '[' has no ']'"
    assert redact("postgresql://u:pw@h1,h2/db") == "postgresql://u:***@h1,h2/db"
    assert redact("postgresql://h/db?password=pw") == "postgresql://h/db?password=***"
    assert redact("host=x password='a b' user=u") == "host=x password=*** user=u"
    # A path is shown as it is.
    assert redact("/srv/wf store") == "/srv/wf store"
    assert redact("memory:") == "memory:"
    assert passwords("postgresql://u:p%40ss@h/db") == ("p%40ss", "p@ss")
