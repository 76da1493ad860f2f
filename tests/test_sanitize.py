"""``sanitize``: secrets never reach the model, ordinary words do.

Positives are the shapes real libraries and services put secrets in (vendor keys shorter than their real
format, masked keys in OpenAI's 401 message, names introducing a value in prose, gitleaks' generic form with
words between the name and the operator). Negatives are 196 real exception messages from installed packages
that name tokens, keys and passwords without holding one (tests/data/sanitize/SOURCE.md).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from toolguard._sanitize import REDACTED, sanitize

ORDINARY = Path(__file__).resolve().parent / "data" / "sanitize" / "ordinary_messages.tsv"


def _ordinary() -> list[tuple[str, str]]:
    rows = []
    for line in ORDINARY.read_text(encoding="utf-8").splitlines():
        package, message = line.split("\t", 1)
        rows.append((package, message))
    return rows


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # introduced by a name in prose, no operator
        ("API key XYZ is not valid", "XYZ"),
        ("Authorization failed for token abc123def456", "abc123def456"),
        ("password hunter2 rejected for user bob", "hunter2"),
        ("token ABCDEF was revoked", "ABCDEF"),
        ("OPENAI_API_KEY is sk-abc123", "sk-abc123"),
        ("client secret 'Zf3D0LXCM3EIM' expired", "Zf3D0LXCM3EIM"),
        # gitleaks' generic form: name, words, operator, value
        ("Incorrect API key provided: sk-proj-abc***xyz9. You can find it online.", "abc***xyz9"),
        ("secret key used: Zf3D0LXCM3EIMbgJ", "Zf3D0LXCM3EIMbgJ"),
        # a name and an operator: any value
        ("token=abc", "abc"),
        ("login with token=1234", "1234"),
        ("secret: s3cr3t", "s3cr3t"),
        ("password: swordfish", "swordfish"),
        ("api_key: mysecret", "mysecret"),
        ("access_token: aaaaaaaa", "aaaaaaaa"),
        ('{"apiKey": "abc"}', "abc"),
        ("x-api-key: zzzzzzzzqqqq", "zzzzzzzzqqqq"),
        ("Authorization: Bearer abcdefgh", "abcdefgh"),
        ("authorization=Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        # vendor prefixes, shorter than the real formats
        ("using access key AKIAIOSFODNN7", "AKIAIOSFODNN7"),
        ("GITHUB_TOKEN ghp_abc123XYZ", "ghp_abc123XYZ"),
        ("hf_abcDEF123x is not a valid token", "hf_abcDEF123x"),
        ("slack said no to xoxb-123-456", "xoxb-123-456"),
        ("with key sk-ant-api03-abc", "sk-ant-api03-abc"),
        ("stripe rejected rk_live_abc123", "rk_live_abc123"),
    ],
)
def test_secrets_are_redacted(text: str, secret: str) -> None:
    out = sanitize(text)
    assert secret not in out and REDACTED in out, out


@pytest.mark.parametrize(
    "text",
    [
        "the token expired",
        "Invalid API key",
        "API key ID 5 not found",
        "max_tokens=4096 is too large",
        "token limit: 4096 exceeded",
        'password authentication failed for user "bob"',
        "The security token included in the request is invalid.",
        "The AWS Access Key Id you provided does not exist in our records.",
        "You can find your API key at https://platform.openai.com/account/api-keys.",
        "Failed to refresh access token: connection reset by peer",
        "Invalid token: expired",
        "Cannot use `token=False` with `whoami` method as it requires authentication.",
        "Token exchange succeeded but response body was empty",
        "Missing or invalid Basic authentication in Authorization header",
        "sk-learn is not a package; install scikit-learn",
        "keyword arguments are not allowed: token_type, key",
    ],
)
def test_ordinary_words_survive(text: str) -> None:
    assert sanitize(text) == text


def test_real_library_messages_that_name_secrets_are_left_alone() -> None:
    rows = _ordinary()
    assert len(rows) > 150 and {p for p, _ in rows} >= {"openai", "transformers", "mcp", "huggingface_hub"}
    changed = [(p, m, sanitize(m)) for p, m in rows if sanitize(m) != " ".join(m.split())]
    assert not changed, changed[:5]


@pytest.mark.parametrize("text", ["key." * 6000, "a." * 10000, "token " * 4000, "api key a" * 3000])
def test_hostile_text_does_not_hang(text: str) -> None:
    # ``key.key.key...`` took 30+ s before the name patterns were bounded (quadratic backtracking); a
    # no-hang check with a wide margin, not a speed goal.
    start = time.process_time()
    sanitize(text)
    assert time.process_time() - start < 5.0
