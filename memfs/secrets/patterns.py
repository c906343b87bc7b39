"""The credential shapes the scanner knows, each a :class:`Pattern` with a kind and a why.

Most come from detect-secrets' plugins (:func:`library_patterns`): their compiled
regexes are used directly with ``finditer``, because the plugins' own ``analyze_line``
yields only the matched strings (no positions to redact), consults the library's global
settings, and for some regexes yields a capture group that is only part of the token
(``GitHubTokenDetector`` yields ``ghp``). Which group is the secret is said here, per
regex. Loading detect-secrets imports ``requests``, so it happens at the first scan, not
at import.

:data:`PROVIDER_PATTERNS` are the shapes detect-secrets 1.5 has no plugin for
(Anthropic, new-style OpenAI, Google, npm, fine-grained GitHub, Hugging Face, Azure AD
client secrets and SAS signatures, Stripe test keys, bearer headers), written from the
providers' documented formats.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from detect_secrets.plugins.base import RegexBasedDetector


@dataclass(frozen=True, slots=True)
class Pattern:
    """One credential shape: ``regex`` group ``group`` is the secret.

    ``hints``: lowercase substrings one of which must be in the text for the regex to be
    worth running (most texts hold none, and a few library regexes backtrack on long
    lines). ``valid``: a last check of the matched secret (None: none).
    """

    kind: str
    why: str
    regex: re.Pattern[str]
    group: int = 0
    hints: tuple[str, ...] = ()
    valid: Callable[[str], bool] | None = None
    source: str = "memfs"


def _denylist(plugin: type[RegexBasedDetector]) -> list[re.Pattern[str]]:
    """A regex plugin's compiled regexes."""
    # Each plugin class sets them as a class attribute over the base's abstract instance
    # property: read from a class, mypy sees the property and Python the tuple.
    return list(cast("Iterable[re.Pattern[str]]", plugin.denylist))


def _plugin_regex(plugin: type[RegexBasedDetector], index: int) -> re.Pattern[str]:
    return _denylist(plugin)[index]


@cache
def library_patterns() -> tuple[Pattern, ...]:
    """detect-secrets' regex plugins, as patterns (loaded once, on first use)."""
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    # (plugin, which of its regexes (None: all), the group holding the secret, kind,
    # why, hints)
    table: list[tuple[type[RegexBasedDetector], int | None, int, str, str, tuple[str, ...]]] = [
        (AWSKeyDetector, 0, 0, "aws-access-key", "an AWS access key ID", ()),
        (
            AWSKeyDetector,
            1,
            1,
            "aws-secret-key",
            "an AWS secret access key (40 characters quoted next to aws...key)",
            ("aws",),
        ),
        (GitHubTokenDetector, None, 0, "github-token", "a GitHub token (ghp_, gho_, ...)", ("gh",)),
        (
            GitLabTokenDetector,
            None,
            0,
            "gitlab-token",
            "a GitLab token (glpat-, ...)",
            ("gl", "gr1348941"),
        ),
        (SlackDetector, 0, 0, "slack-token", "a Slack token (xox...)", ("xox",)),
        (
            SlackDetector,
            1,
            0,
            "slack-webhook",
            "a Slack incoming-webhook URL",
            ("hooks.slack.com",),
        ),
        (
            StripeDetector,
            None,
            0,
            "stripe-key",
            "a Stripe live secret or restricted key",
            ("_live_",),
        ),
        (
            PrivateKeyDetector,
            None,
            0,
            "private-key",
            "a private key block",
            ("private key", "putty"),
        ),
        (
            JwtTokenDetector,
            None,
            0,
            "jwt",
            "a JSON Web Token (a signed bearer credential)",
            ("eyj",),
        ),
        (
            BasicAuthDetector,
            None,
            1,
            "url-password",
            "a password in a URL (scheme://user:PASSWORD@host)",
            ("://",),
        ),
        (TwilioKeyDetector, None, 0, "twilio-key", "a Twilio account SID or API key", ("ac", "sk")),
        (SendGridDetector, None, 0, "sendgrid-key", "a SendGrid API key (SG....)", ("sg.",)),
        (OpenAIDetector, None, 0, "openai-key", "an OpenAI API key", ("t3blbkfj",)),
        (NpmDetector, None, 1, "npm-token", "an npm auth token in an .npmrc line", ("_authtoken",)),
        (
            AzureStorageKeyDetector,
            None,
            0,
            "azure-storage-key",
            "an Azure storage account key (AccountKey=...)",
            ("accountkey=",),
        ),
        (PypiTokenDetector, None, 0, "pypi-token", "a PyPI upload token", ("pypi-",)),
        (DiscordBotTokenDetector, None, 0, "discord-token", "a Discord bot token", ()),
        (TelegramBotTokenDetector, None, 0, "telegram-token", "a Telegram bot token", ()),
        (MailchimpDetector, None, 0, "mailchimp-key", "a Mailchimp API key", ("-us",)),
        (
            SquareOAuthDetector,
            None,
            0,
            "square-oauth-secret",
            "a Square OAuth secret",
            ("sq0csp-",),
        ),
        (
            ArtifactoryDetector,
            None,
            0,
            "artifactory-token",
            "an Artifactory API token or password",
            ("akc", "ap"),
        ),
    ]
    out: list[Pattern] = []
    for plugin, index, group, kind, why, hints in table:
        indexes = [index] if index is not None else range(len(_denylist(plugin)))
        valid = JwtTokenDetector.is_formally_valid if plugin is JwtTokenDetector else None
        for i in indexes:
            out.append(
                Pattern(
                    kind,
                    why,
                    _plugin_regex(plugin, i),
                    group,
                    hints,
                    valid,
                    source=f"detect-secrets {plugin.__name__}",
                )
            )
    return tuple(out)


def _p(
    kind: str,
    why: str,
    regex: str,
    group: int = 0,
    hints: tuple[str, ...] = (),
    source: str = "memfs",
) -> Pattern:
    return Pattern(kind, why, re.compile(regex), group, hints, source=source)


# The character after a token must not continue it, or a longer random string that
# merely contains the prefix would be cut in the middle.
_END = r"(?![A-Za-z0-9_-])"

PROVIDER_PATTERNS: tuple[Pattern, ...] = (
    _p(
        "anthropic-key",
        "an Anthropic API key (sk-ant-...)",
        r"\bsk-ant-[a-z]{2,8}\d{0,3}-[A-Za-z0-9_-]{20,}" + _END,
        hints=("sk-ant-",),
        source="Anthropic API reference, authentication: keys are sk-ant-api03-...",
    ),
    _p(
        "openai-key",
        "an OpenAI API key (sk-proj-..., sk-svcacct-..., sk-admin-...)",
        r"\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}" + _END,
        hints=("sk-",),
        source="OpenAI platform docs, API keys: project (sk-proj-), service accounts, admin keys",
    ),
    _p(
        "openai-key",
        "an OpenAI API key (sk- and 48 characters)",
        r"\bsk-[A-Za-z0-9]{48}" + _END,
        hints=("sk-",),
        source="OpenAI platform docs, legacy user keys: sk- and 48 characters",
    ),
    _p(
        "google-api-key",
        "a Google API key (AIza...)",
        r"\bAIza[0-9A-Za-z_-]{35}" + _END,
        hints=("aiza",),
        source="Google Cloud docs, API keys: AIza and 35 characters",
    ),
    _p(
        "github-token",
        "a GitHub fine-grained token (github_pat_...)",
        r"\bgithub_pat_[A-Za-z0-9_]{22,}" + _END,
        hints=("github_pat_",),
        source="GitHub docs, about authentication: fine-grained tokens begin github_pat_",
    ),
    _p(
        "npm-token",
        "an npm access token (npm_...)",
        r"\bnpm_[A-Za-z0-9]{36}" + _END,
        hints=("npm_",),
        source="npm docs, access tokens: npm_ and 36 characters",
    ),
    _p(
        "stripe-key",
        "a Stripe test-mode secret or restricted key",
        r"\b[rs]k_test_[0-9a-zA-Z]{24,}" + _END,
        hints=("_test_",),
        source="Stripe docs, API keys: sk_test_ and rk_test_ test-mode keys",
    ),
    _p(
        "huggingface-token",
        "a Hugging Face access token (hf_...)",
        r"\bhf_[A-Za-z0-9]{34}" + _END,
        hints=("hf_",),
        source="Hugging Face docs, user access tokens: hf_ and 34 characters",
    ),
    _p(
        "azure-client-secret",
        "an Azure AD client secret (...Q~...)",
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
        hints=("q~",),
        source="Microsoft Entra docs, client secrets: the ~ at the fourth place of the value",
    ),
    _p(
        "azure-sas-token",
        "the signature of an Azure shared access signature (sig=...)",
        r"[?&]sig=([A-Za-z0-9%+/=]{30,})",
        group=1,
        hints=("sig=",),
        source="Azure Storage docs, shared access signatures: the sig= parameter",
    ),
    _p(
        "bearer-token",
        "a bearer token (Authorization: Bearer ...)",
        r"\b[Bb]earer[ \t]+([A-Za-z0-9._~+/-]{20,}=*)",
        group=1,
        hints=("bearer",),
        source="RFC 6750, the Bearer authentication scheme",
    ),
)
