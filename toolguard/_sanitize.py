"""Make exception text safe to show a model: no tracebacks, no secrets, bounded length.

Tool errors go back into the conversation, and from there into logs, traces and other providers. Exception
text routinely carries credentials (a URL with ``user:pass@``, an ``Authorization: Bearer`` header echoed by
an HTTP library, ``password=...`` in a connection string, an API key in a request URL). ``sanitize`` removes
traceback lines and ANSI escapes, replaces anything that looks like a secret with ``[REDACTED]``, collapses
whitespace and cuts the text to a bound. It is deliberately greedy: a redacted hash costs little, a leaked key
costs a lot.

Cost: a fixed number of regex passes over at most ``DEFAULT_MAX_INPUT_CHARS`` characters.
"""

from __future__ import annotations

import re

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
_AUTH_SCHEME = re.compile(r"(?i)\b(bearer|basic|token|apikey)(\s+)[A-Za-z0-9._~+/=-]{6,}")
_SECRET_KEYS = (
    r"[\w.-]*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
    r"credentials?|auth(?:orization)?|session[_-]?id|cookie|signature)[\w.-]*"
)
_KEY_VALUE = re.compile(
    rf"(?i)([\"']?\b{_SECRET_KEYS}[\"']?\s*[=:]\s*)(?!\[REDACTED\]|(?:bearer|basic|token)\s)"
    r"(\"(?:[^\"\\\n]|\\.)*\"?|'[^'\n]*'?|[^\s\"',;&}\]]+)"
)
_TOKENS = re.compile(
    r"\bsk-[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic (sk-ant-...), sk-proj-...
    r"|\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|\b(?:AKIA|ASIA|AIDA|AROA|AGPA|ANPA)[A-Z0-9]{16}\b"  # AWS access key ids
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_\w{20,}"  # GitHub
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|\bAIza[0-9A-Za-z_-]{30,}"  # Google
    r"|\bhf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"  # JWT
    r"|\b[0-9a-fA-F]{32,}\b"  # long hex: keys, session ids, signatures
)
_BASE64ISH = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
_WHITESPACE = re.compile(r"\s+")


def _redact_value(m: re.Match[str]) -> str:
    value = m.group(2)
    quote = value[0] if value[0] in "\"'" else ""
    return f"{m.group(1)}{quote}{REDACTED}{quote}"


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
    text = _AUTH_SCHEME.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _KEY_VALUE.sub(_redact_value, text)
    text = _TOKENS.sub(REDACTED, text)
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
