"""Make exception text safe to show a model: no tracebacks, no secrets, bounded length.

Tool errors go back into the conversation, and from there into logs, traces and other providers. Exception
text routinely carries credentials (a URL with ``user:pass@``, an ``Authorization: Bearer`` header echoed by
an HTTP library, ``password=...`` in a connection string, an API key in a request URL, ``Incorrect API key
provided: sk-ab***yz``). ``sanitize`` removes traceback lines and ANSI escapes, replaces anything that looks
like a secret with ``[REDACTED]``, collapses whitespace and cuts the text to a bound.

Three kinds of evidence, as secret scanners use them (gitleaks' vendor rules and its generic-api-key rule):
the value's own shape (vendor prefixes such as ``sk-``, ``ghp_``, ``AKIA``, even when shorter than the real
format; JWTs; long hex; random-looking base64), a name before it (``password=``, ``"api_key": "..."``,
``Authorization:``), and a name that introduces it in prose (``API key XYZ``, ``token abc123 expired``,
``secret key provided: ...``). Names like ``token`` also name ordinary things (``max_tokens``, ``token
exchange``, ``token=False``), so after them only a credential-shaped word is redacted (letters with digits,
mixed case, an upper-case non-acronym, high entropy); ordinary words stay. A redacted hash costs little, a
leaked key a lot, so the shape test leans greedy.

Cost: a fixed number of regex passes over at most ``DEFAULT_MAX_INPUT_CHARS`` characters.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["DEFAULT_MAX_ERROR_CHARS", "REDACTED", "describe_exception", "sanitize"]

DEFAULT_MAX_ERROR_CHARS = 500
DEFAULT_MAX_INPUT_CHARS = 20_000  # longer exception text is cut before the regexes run
REDACTED = "[REDACTED]"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_TRACEBACK_LINES = re.compile(
    r"^[ \t]*(?:Traceback \(most recent call last\):|File \"[^\n]*\", line \d+[^\n]*|\^+|~+\^*~*|"
    r"During handling of the above exception[^\n]*|The above exception was the direct cause[^\n]*)[ \t]*$",
    re.MULTILINE,
)
# A "File ..., line N" frame is followed by the source line; drop it with the frame.
_FRAME_WITH_SOURCE = re.compile(r"^[ \t]*File \"[^\n]*\", line \d+[^\n]*\n[ \t]+[^\n]*$", re.MULTILINE)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S
)
_URL_CREDENTIALS = re.compile(r"(?<=://)[^\s/:@]+:[^\s/@]+@")
# An Authorization header: whatever follows the scheme is the credential.
_AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest)\s+)?)"
    r"(?!\[REDACTED\])([^\s\"',;]+)"
)
# A scheme word outside a header: a credential only when the next word looks like one ("bearer credential"
# is prose).
_AUTH_SCHEME = re.compile(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]{6,})")
# Names of secrets. Strong ones are secrets whatever follows them; the others (``token``, ``auth``...) also
# name ordinary things (``max_tokens``, ``token_type``), so a value after ``:`` must look like a credential.
_STRONG = (
    r"password|passwd|passphrase|pwd|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
    r"credentials?|client[_-]?secret|(?:access|refresh|auth|id|bearer|session)[_-]?token"
)
# Bounded on both sides: an unbounded ``[\w.-]*`` before the name made ``key.key.key...`` quadratic.
_SECRET_KEYS = (
    rf"[\w.-]{{0,40}}?(?:{_STRONG}|token|auth(?:orization)?|session[_-]?id|cookie|signature)[\w.-]{{0,40}}"
)
_KEY_VALUE = re.compile(
    rf"(?i)([\"']?\b({_SECRET_KEYS})[\"']?(\s*)([=:])(\s*))(?!\[REDACTED\]|(?:bearer|basic|token)\s)"
    r"(\"(?:[^\"\\\n]|\\.)*\"?|'[^'\n]*'?|[^\s\"',;&}\]`]+)"
)
_STRONG_NAME = re.compile(rf"(?i)(?:{_STRONG})")
# gitleaks' generic-api-key shape: a secret word, up to 20 more identifier characters or words ("API key
# provided"), an operator, then a value; here the value must look like a credential (see _secretish).
_CONTEXT_WORD = (
    r"(?i)(?<![A-Za-z0-9])(api[ _-]?key|access[ _-]?key|secret[ _-]?key|client[ _-]?secret|secret|"
    r"(?:access|refresh|auth|bearer|api)[ _-]?token|token|password|passwd|passphrase|credentials?)"
)
_GENERIC = re.compile(
    _CONTEXT_WORD
    + r"((?:[ \t\w.-]{0,20}?)[\s'\"]{0,3}(?:=>|:=|[=:,>])(?!//)[\s'\"`=]{0,5})([\w.~+/=*-]{3,150})"
)
# The same words followed by the value with no operator ("API key XYZ", "token abc123 expired").
_INTRODUCED = re.compile(_CONTEXT_WORD + r"(\s+(?:is\s+|was\s+|of\s+)?[\"'`]?)([\w.~+/=*-]{3,150})")
_LITERALS = frozenset({"true", "false", "none", "null", "nil", "undefined", "empty", "yes", "no"})
# Upper-case words that follow "key" or "token" in ordinary text.
_ACRONYMS = frozenset(
    {
        "ID",
        "IDS",
        "URL",
        "URI",
        "API",
        "HTTP",
        "HTTPS",
        "JSON",
        "XML",
        "UTF",
        "ASCII",
        "TTL",
        "JWT",
        "SSO",
        "MFA",
        "OAUTH",
        "CSRF",
        "AWS",
        "GCP",
        "ARN",
        "EOS",
        "BOS",
        "PAD",
        "UNK",
        "SEP",
        "CLS",
        "MASK",
        "NOT",
    }
)
_TOKENS = re.compile(
    r"\bsk-(?=[A-Za-z0-9_*-]*[0-9*])[A-Za-z0-9_*-]{6,}"  # OpenAI, Anthropic (sk-ant-...), sk-proj-, masked
    r"|\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{6,}"  # Stripe
    r"|\b(?:AKIA|ASIA|AIDA|AROA|AGPA|ANPA)[A-Z0-9]{8,}\b"  # AWS access key ids, truncated ones too
    r"|\bgh[pousr]_[A-Za-z0-9]{6,}|\bgithub_pat_\w{6,}"  # GitHub
    r"|\bxox[abposr]-[A-Za-z0-9-]{6,}"  # Slack
    r"|\bAIza[0-9A-Za-z_-]{10,}"  # Google
    r"|\bhf_[A-Za-z0-9]{8,}"  # Hugging Face
    r"|\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"  # JWT
    r"|\b[0-9a-fA-F]{32,}\b"  # long hex: keys, session ids, signatures
)
_BASE64ISH = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
_WHITESPACE = re.compile(r"\s+")


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character (gitleaks' test for random-looking values)."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _secretish(value: str) -> bool:
    """Whether a word that follows a secret's name looks like a credential rather than an ordinary word:
    letters and digits mixed (``hunter2``, ``abc123``), a masked key (``sk-ab***yz``), six or more digits,
    mixed case past the first letter (``aBcD``), an upper-case non-acronym (``XYZ``), or 16+ characters of
    high entropy. ``expired``, ``provider``, ``True``, ``ID``, ``4096`` are not."""
    value = value.strip("\"'`.,;:)")
    if len(value) < 3 or value.lower() in _LITERALS:
        return False
    alnum = sum(c.isalnum() for c in value)
    if "*" in value and alnum >= 3:
        return True
    digits = any(c.isdigit() for c in value)
    letters = [c for c in value if c.isalpha()]
    if not letters:
        return len(value) >= 6 and digits
    if digits:
        return True
    if any(c.isupper() for c in letters[1:]) and any(c.islower() for c in letters):
        return True
    if value.isupper() and value not in _ACRONYMS:
        return True
    return len(value) >= 16 and _entropy(value) >= 3.5


def _redact_value(m: re.Match[str]) -> str:
    name, space_after, operator, value = m.group(2), m.group(5), m.group(4), m.group(6)
    quote = value[0] if value[0] in "\"'" else ""
    bare = value.strip("\"'")
    strong = _STRONG_NAME.search(name) is not None
    if not strong and operator == "=" and name.strip("\"'").lower() == "token":
        strong = True  # token=1234: a bare "token" set to a value is the credential itself
    if not quote and bare.lower() in _LITERALS:
        return m.group()  # token=False, use_mask_token=True: code, not a secret
    if not strong and not quote:
        if bare.isdigit() and len(bare) < 6:
            return m.group()  # max_tokens=4096, token_limit: 5
        if operator == ":" and space_after and not _secretish(bare):
            return m.group()  # "Invalid token: expired"
    return f"{m.group(1)}{quote}{REDACTED}{quote}"


def _redact_if_secretish(m: re.Match[str]) -> str:
    value = m.group(3)
    if value.startswith("[REDACTED") or not _secretish(value):
        return m.group()
    return f"{m.group(1)}{m.group(2)}{REDACTED}"


def _looks_random(token: str) -> bool:
    """Mixed case and digits, and not a path: the shape of a key, not of a word or a file name."""
    upper = sum(c.isupper() for c in token)
    mixed = upper > 0 and any(c.islower() for c in token) and any(c.isdigit() for c in token)
    if "/" in token and "+" not in token and not token.endswith("="):
        # a path, unless it has the shape of an AWS secret key: 40 characters of base64, many capitals
        return mixed and len(token) == 40 and not token.startswith("/") and upper >= 3 and "_" not in token
    return mixed


def sanitize(text: str, *, max_chars: int = DEFAULT_MAX_ERROR_CHARS) -> str:
    """Text fit for a model: no tracebacks, secrets replaced by ``[REDACTED]``, at most ``max_chars`` long."""
    text = text[:DEFAULT_MAX_INPUT_CHARS]
    text = _ANSI.sub("", text)
    text = _PRIVATE_KEY.sub(REDACTED, text)
    text = _FRAME_WITH_SOURCE.sub("", text)
    text = _TRACEBACK_LINES.sub("", text)
    text = _URL_CREDENTIALS.sub(REDACTED + "@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{REDACTED}", text)
    text = _AUTH_SCHEME.sub(_redact_if_secretish, text)
    text = _TOKENS.sub(REDACTED, text)
    text = _KEY_VALUE.sub(_redact_value, text)
    text = _GENERIC.sub(_redact_if_secretish, text)
    text = _INTRODUCED.sub(_redact_if_secretish, text)
    text = _BASE64ISH.sub(lambda m: REDACTED if _looks_random(m.group()) else m.group(), text)
    text = _WHITESPACE.sub(" ", text).strip()
    if len(text) > max_chars:
        keep = max(max_chars - 16, 0)
        text = text[:keep].rstrip() + " …(truncated)"
    return text


def describe_exception(exc: BaseException, *, max_chars: int = DEFAULT_MAX_ERROR_CHARS) -> str:
    """``"TypeName: message"``, sanitised. Chained causes and tracebacks are never included."""
    try:
        message = str(exc)
    except Exception:  # a broken __str__ must not break the executor
        message = ""
    name = type(exc).__name__
    return sanitize(f"{name}: {message}" if message else name, max_chars=max_chars)
