"""The scanner's context and entropy rules, for credentials no fixed shape describes.

* **Assignments** (:func:`assignments`): a value given to a secret-sounding name,
  ``password=hunter22``, ``api_key: "..."``, ``"client_secret": "..."``,
  ``**Password:** ...``. The names are detect-secrets' ``KeywordDetector`` list plus
  ``token``; its filters (templated values, ``$VAR`` references) apply, with more for
  prose: a quoted value needs 4 characters and no space; an unquoted one 6 characters
  and two kinds of character (``hunter22`` yes, ``required`` no), so ``password:
  required`` in a note is left alone. Paths, URLs (their password is the URL rule's),
  placeholders (``your_api_key_here``, ``xxxx``, ``<...>``) and names that only talk
  about a secret (``password_length``, ``secret_name``) are left alone too.
* **Entropy** (:func:`high_entropy`): an unbroken run of 32+ base64/URL-safe characters
  that mixes upper case, lower case and digits and whose Shannon entropy (detect-secrets'
  ``Base64HighEntropyString`` measure) is near that of random data. Pure hex is left
  alone (git and SHA hashes, UUIDs look exactly like hex keys; a hex key is caught only
  by an assignment), and so are data URIs (``data:image/png;base64,...``), SSH public
  keys, subresource-integrity hashes (``sha256-...``), base64 digests labelled as such
  (``sha512: ...``, ``digest=...``, an ``ETag``), certificate or public-key blocks, and
  identifiers: camel-case class names and paths, whose letters run in pronounceable
  words (at least 60% of the run in words of three or more lower-case letters with a
  vowel and no four consonants in a row), where random base64 almost never does (13 in
  100,000 random 32-character keys would pass as identifiers, none of 48 characters or
  more in 100,000).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    # Imported when first used: loading detect-secrets imports requests.
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString


class Hit(NamedTuple):
    kind: str
    why: str
    start: int
    end: int


# --- assignments -----------------------------------------------------------------------


def _words(line: str) -> frozenset[str]:
    return frozenset(line.split())


_PASSWORD_WORDS = ("pass", "pwd", "contrase")
# Words in the name that make it about a secret rather than holding one.
_NOT_SECRET_NAMES = _words(
    "name names file path dir hint length len policy prompt field type types count "
    "max min env var manager store rotation expiry expires reset url uri id ids format "
    "label header param regex pattern less required strength"
)
_PLACEHOLDER_PARTS = (
    "your",
    "_here",
    "-here",
    "placeholder",
    "example",
    "dummy",
    "xxxx",
    "redacted",
    "changeit",
    "<",
)
_NOT_SECRET_VALUES = _words(
    "none null nil true false undefined required optional hidden empty secret password "
    "string str yes no n/a na tbd todo unset unknown default"
)
_REFERENCE = re.compile(r"^(?:[A-Za-z_][\w.]*[\[(]|os\.environ|process\.env|env\.|secrets\.)")
_MASKED = frozenset("*xX.•#-_ ")
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


@cache
def _assignment_regex() -> re.Pattern[str]:
    from detect_secrets.plugins.keyword import DENYLIST

    keywords = "|".join((*DENYLIST, "tokens?"))
    # The suffix must start a new word of the name (FOO_PASSWORD_FILE, apiKeyId), or
    # "secretary" and "tokenizer" would count.
    return re.compile(
        rf"(?i:(?P<kw>{keywords}))"
        r"(?P<suffix>(?:[_.-][A-Za-z0-9_.-]{0,24}|[A-Z0-9][A-Za-z0-9_.-]{0,24})?)"
        r"[\]\"'`*]{0,3}[ \t]{0,4}(?::=|=>|==?|:)[*_]{0,2}[ \t]{0,4}"
        r"(?:(?P<q>[\"'`])(?P<qv>[^\"'`\r\n]{1,256}?)(?P=q)|(?P<uv>[^\s\"'`,;<>]{1,256}))"
    )


def _name_before(text: str, start: int) -> str:
    i = start
    while i > 0 and start - i < 40 and (text[i - 1].isalnum() or text[i - 1] in "_.-"):
        i -= 1
    return text[i:start]


def _is_secret_name(name: str) -> bool:
    words = {w.lower() for w in _NAME_WORDS.findall(name)}
    return not words & _NOT_SECRET_NAMES


def _classes(value: str) -> int:
    return sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() and c not in "-_." for c in value),
        )
    )


def _plausible_value(value: str, quoted: bool) -> bool:
    from detect_secrets.filters.heuristic import (
        is_prefixed_with_dollar_sign,
        is_sequential_string,
        is_templated_secret,
    )

    lower = value.lower()
    if len(value) < (4 if quoted else 6) or any(c.isspace() for c in value):
        return False
    if lower in _NOT_SECRET_VALUES or any(part in lower for part in _PLACEHOLDER_PARTS):
        return False
    if is_templated_secret(value) or is_prefixed_with_dollar_sign(value):
        return False
    if is_sequential_string(value) or set(value) <= _MASKED or value.startswith("[REDACTED"):
        return False
    if "://" in value or value.startswith(("/", "./", "~/", "../")) or _REFERENCE.match(value):
        return False
    return quoted or _classes(value) >= 2


_AWS_SECRET = re.compile(r"[A-Za-z0-9/+]{40}")


def assignments(text: str, lower: str) -> Iterator[Hit]:
    """Values given to secret-sounding names (see the module docstring)."""
    if not any(word in lower for word in ("pass", "pwd", "key", "secret", "token", "contras")):
        return
    for m in _assignment_regex().finditer(text):
        quoted = m.group("q") is not None
        group = "qv" if quoted else "uv"
        value = m.group(group)
        name = _name_before(text, m.start()) + m.group("kw") + m.group("suffix")
        if not _is_secret_name(name) or not _plausible_value(value, quoted):
            continue
        keyword = m.group("kw").lower()
        start, end = m.span(group)
        lname = name.lower()
        if "aws" in lname and "secret" in lname and _AWS_SECRET.fullmatch(value):
            yield Hit("aws-secret-key", f"an AWS secret access key assigned to {name}", start, end)
        elif any(word in keyword for word in _PASSWORD_WORDS):
            yield Hit("password-assignment", f"a password assigned to {name}", start, end)
        else:
            yield Hit("secret-assignment", f"a secret value assigned to {name}", start, end)


# --- entropy ---------------------------------------------------------------------------

MIN_TOKEN = 32
_TOKEN = re.compile(
    rf"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{{{MIN_TOKEN},}}={{0,2}}(?![A-Za-z0-9+/=_-])"
)
_HEX = re.compile(r"[0-9a-fA-F-]+")
_SKIP_BEFORE = re.compile(
    r"(?:base64,|(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-\S+|sk-\S+@openssh\.com) )$"
)
_SRI = re.compile(r"sha(?:256|384|512)-")
_PUBLIC_BLOCK = re.compile(
    r"-----BEGIN (?:CERTIFICATE|PUBLIC KEY|RSA PUBLIC KEY|PGP PUBLIC KEY BLOCK|"
    r"CERTIFICATE REQUEST|X509 CRL)-----.*?(?:-----END [A-Z0-9 ]+-----|\Z)",
    re.DOTALL,
)
# Stripe publishable keys are meant to be shipped in web pages.
_PUBLIC_PREFIXES = ("pk_live_", "pk_test_")
_URL_START = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)
# A digest's label just before it: "sha512: ...", "digest=...", "ETag: W/\"...".
_DIGEST_LABEL = re.compile(
    r"(?i)\b(?:sha-?(?:1|224|256|384|512)|sha3-\d+|md5|blake2[bs]?|digest|checksum|hash|"
    r"integrity|etag)\b[\"']?[ \t]*[:=]?[ \t]*[\"']?(?:W/\")?$"
)
_WORD_PIECE = re.compile(r"[A-Z]?[a-z]{3,}")
_VOWELS = frozenset("aeiouy")
_CONSONANT_RUN = re.compile(r"[^aeiouy]{4}")
_IDENTIFIER_SHARE = 0.6


def _looks_like_identifier(token: str) -> bool:
    """A class name or a path (``ConcurrentHashMapV8Impl``, ``src/main/UserRepo2``):
    most of it in pronounceable words (see the module docstring)."""
    wordy = 0
    for piece in _WORD_PIECE.findall(token):
        lower = piece.lower()
        if _VOWELS.intersection(lower) and _CONSONANT_RUN.search(lower) is None:
            wordy += len(piece)
    return wordy >= _IDENTIFIER_SHARE * len(token)


def _in_url(text: str, line_start: int, start: int) -> bool:
    """Whether the token at ``start`` is part of a URL (document IDs, paths, signed
    names): a URL's credentials are the URL rules' to find, in its user:password part
    or a named query parameter."""
    word = max(text.rfind(c, line_start, start) for c in " \t([<\"'`") + 1
    word = max(word, line_start)
    return _URL_START.match(text, word, start) is not None


# Random base64 of n characters has an expected entropy close to log2(n) for small n;
# real tokens sit at 85% of that or more, identifiers and paths well below.
_ENTROPY_SHARE = 0.85
_ENTROPY_CEILING = 4.5  # detect-secrets' default limit for base64 strings


@cache
def _entropy_plugin() -> Base64HighEntropyString:
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    return Base64HighEntropyString()


def entropy(value: str) -> float:
    # float(): the plugin answers an int 0 for an empty string.
    return float(_entropy_plugin().calculate_shannon_entropy(value))


def _threshold(n: int) -> float:
    return min(_ENTROPY_CEILING, _ENTROPY_SHARE * math.log2(min(n, 64)))


def high_entropy(text: str) -> Iterator[Hit]:
    """Long random-looking base64 runs (see the module docstring)."""
    public = [m.span() for m in _PUBLIC_BLOCK.finditer(text)] if "-----BEGIN" in text else []
    for m in _TOKEN.finditer(text):
        token = m.group().rstrip("=")
        start = m.start()
        if len(token) < MIN_TOKEN or _HEX.fullmatch(token) or _SRI.match(token):
            continue
        if not (
            any(c.islower() for c in token)
            and any(c.isupper() for c in token)
            and any(c.isdigit() for c in token)
        ):
            continue
        if token.startswith(_PUBLIC_PREFIXES):
            continue
        line_start = text.rfind("\n", 0, start) + 1
        if _SKIP_BEFORE.search(text, max(line_start, start - 64), start):
            continue
        if _in_url(text, line_start, start):
            continue
        if any(a <= start < b for a, b in public):
            continue
        if _looks_like_identifier(token):
            continue
        if _DIGEST_LABEL.search(text, max(line_start, start - 40), start):
            continue
        score = entropy(token)
        if score < _threshold(len(token)):
            continue
        yield Hit(
            "high-entropy-string",
            f"a random-looking string of {len(token)} characters "
            f"({score:.1f} bits of entropy per character)",
            start,
            m.end(),
        )
