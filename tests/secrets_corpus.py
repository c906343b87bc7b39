"""The secrets corpus: credentials memfs must catch, and look-alikes it must leave alone.

Every credential here is fake: random characters in the provider's documented format,
made for this file (none was ever issued). Each :class:`Case` is one note a model might
write. ``kind`` is the finding expected for ``secret`` (None: a look-alike, nothing may
be found); ``caught=False`` marks a known miss, kept here so the catch/miss table tells
the truth about it, with ``why`` saying what the scanner cannot see.

Documented example keys (AWS's ``AKIAIOSFODNN7EXAMPLE`` and its secret key) are
look-alikes: memfs drops any finding containing ``EXAMPLE`` (see memfs.secrets.scanner).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    secret: str = ""  # the credential within text ("" for a look-alike)
    kind: str | None = None  # the expected finding (None: nothing may be found)
    caught: bool = True  # False: a documented miss
    why: str = ""


RSA_BODY = """\
9X/z3kzIeyUfDU3N23s9xI0zsLJiWVnbevH+YCyj1MsqR9H62O64U106dGlT13yS
h7o48R3c0rk/oQCRpIP6YSTprJvIKJuC7b6nst9+5B6anKtmU1eVQU6KbeG/viMy
X3n9F1L4ZEA0i4kMwr52qf6amx9VaiKX0oA1ULtnLIoKOu8mxQc4ZSC+KWJ9L1lk
0M3ILZ29y6jbWnRqRczfPrJCFvrFNSCLs6iTunyeh4zBc4ks339PEcLZkGsKtv2R
oHu9cvhp0gbCc0dWcCeLKNlqSamBQtqi"""
RSA_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{RSA_BODY}\n-----END RSA PRIVATE KEY-----"
OPENSSH_KEY = """\
-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEA02heiGiilraRDGoPkEc7kHujLfNOSc0rP2oGve5Wq1ylIv/jzS
UYbKbWFgHpEQmaSEbPPiOobVh3ZnTzO225KFbgbEXNNbwKOnwaroMzR21ftQG6oa3KanLT
ikr36KwPrI6rjsSjv7KBVAfhc9UgrSeVxwNYIl7ssJH+v4oPWkTfXLJij+WJeVTlOy+K/5
-----END OPENSSH PRIVATE KEY-----"""
CERTIFICATE = """\
-----BEGIN CERTIFICATE-----
6R9/zjs6KYh7JTJeXXdNiOS58CH72flHRnEuVg+rzaL4z/QDv7Sxmml991K2ZcXo
VFblYp53EPYab4wJ1wd0Cw8NEyVOHNmVWjQSxFoS88NX2fsAdFGfsBMT0dDOZAEj
qbtNAwpuwHn8Wrv+6C6Z8JLbKMKl2ti1gZWtMxy70+Mc6BX3iulW7ewPGCDlvtxu
AFv28nkYKqMZ/nv21LLr6g==
-----END CERTIFICATE-----"""
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiJzdmMtYmFja3VwIiwiaWF0IjoxNzY3MjI1NjAwLCJzY29wZSI6ImFkbWluIn0."
    "nQLE3CdGxmVQFm_iNlyndEsXsSKUTJkgYzteKryYGgw"
)
ANTHROPIC = (
    "sk-ant-api03-hGp6mRFTVKPgVjLBIHCKVvk4mX4qOj_erUtUd6KoUjoiARu39UKcr8jn6P4khQnSPgbwkUEs"
    "4YMw_5rYQOlttQd4Rae9jAA"
)
OPENAI = (
    "sk-proj-a2Gh-feGXSZZWTCBVWKKh8syi8AwO92tMQcJ9ZJos904S2SlT3BlbkFJuDKO2IZuakoUAw-JSzdEyvv"
    "gckvOchNDEXwVlfuGRk4SjxsZ"
)
GITHUB_PAT = (
    "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"
)
PYPI = (
    "pypi-AgEIcHlwaS5vcmcJEGKkM-1VIALPcMqA44-NFFt7YQm5RGx8ODhiWwAp5leHhCqLI9DoWxZItkqFHvia_"
    "RUaC7JmsR4exWM"
)
AZURE_KEY = (
    "Py6qsCBW7D+XXfpQuhPjNfFWL/bqyXgweB7JT139kc7Ctc+EEsQ7tPiViouYh5+pZNV87w4H1baRyRe/JK/Qug=="
)
PNG_B64 = (
    "iVBORw0KGgqOgrHHq/LcFQkIrmB0GkwOYcB8tnGnkPSnIN6XWCaY9PQPaindwbTaHoJB+bmjfEn/U4U8Svakv"
    "TaZnx00cvXG3UKvBGcmWstUPBj4Za9T699mVCdD9zqJEx0ppkBM6N+KvJfzEiiZaOgpO2rWMeEhe5OvVEsqDR"
    "LzGEr9JPT1qHlU3Lo1ZzWjXcZQIYVlFg2Kaayr0v7NcPNZN83HQNuiEDZN/1S8CfmncFo2+ZyphaefvuMXJMJ"
    "Bp1lQjv63jd154b91JLC+x23grPVgN96uoUtOLXqanKRh06RHYjV4xgUDooCWe4Ws4inM6TLOdXg8hqmrXty5"
    "DXy5eMf3Lz1ucRDWAJqpm0SqwsAvMRVSP6/yzcQ9O6wQcBY3Xrx79cGPOd3FGEKOwxkZUcQ="
)


# Stripe's keys are 107 characters now; the library's regex counts 24 after the prefix.
STRIPE_LONG = (
    "sk_live_513WD41gHgIhcPh8pnYhDhJRzRO6RbJHyPIrkoxbO7"
    "KvCyh2S0D3ic0EKXKfs3yjqxkkSWM4hYlnySK0pWTqcFwtEkbGggSzOif"
)
STRIPE_RESTRICTED = (
    "rk_live_51YH1mHZuYoTNJmAFTPvBZBH3CRY3v3muM0R7ZVz2j"
    "OLbSRQGw5kKhmQHc8fBEdOEqTuAmJoJq1dbU2tK3dJ1ES5TtgW7d41BXE"
)


def _c(name: str, text: str, secret: str, kind: str) -> Case:
    return Case(name, text, secret, kind)


CREDENTIALS: tuple[Case, ...] = (
    _c(
        "aws access key id",
        "aws_access_key_id = AKIAUYV046EWA0RQIJML\n",
        "AKIAUYV046EWA0RQIJML",
        "aws-access-key",
    ),
    _c(
        "aws secret key (ini)",
        "[prod]\naws_secret_access_key = jtdIy3U7IC6/WTvf6njtRMADkhj6tw4X4Twqy+DL\n",
        "jtdIy3U7IC6/WTvf6njtRMADkhj6tw4X4Twqy+DL",
        "aws-secret-key",
    ),
    _c(
        "aws secret key (code)",
        'AWS_SECRET_KEY = "MeGvBhAZcmQHJwY5mCMJHsLkdVGG2/XP0hcht/dP"\n',
        "MeGvBhAZcmQHJwY5mCMJHsLkdVGG2/XP0hcht/dP",
        "aws-secret-key",
    ),
    _c(
        "github classic token",
        "CI uses ghp_rKSHcxWxqTDlXSkk0bX7vxSla9BOFbWFrGW9 to push.\n",
        "ghp_rKSHcxWxqTDlXSkk0bX7vxSla9BOFbWFrGW9",
        "github-token",
    ),
    _c("github fine-grained token", f"export GH_TOKEN={GITHUB_PAT}\n", GITHUB_PAT, "github-token"),
    _c(
        "gitlab token",
        "GitLab deploy: glpat-5N8Yb2uUxUFf98RZulV6 (expires March)\n",
        "glpat-5N8Yb2uUxUFf98RZulV6",
        "gitlab-token",
    ),
    _c(
        "slack bot token",
        "Slack bot: xoxb-966139660080-0977452121160-CQesL2WW5sNp3rPY8uMMQqYc\n",
        "xoxb-966139660080-0977452121160-CQesL2WW5sNp3rPY8uMMQqYc",
        "slack-token",
    ),
    _c(
        "slack webhook",
        "Alerts go to https://hooks.slack.com/services/TS1F1JZEA/BACKVBA3LJ8/"
        "Lplqo1Cf0TJ0RBAAmFIQkZ4U now.\n",
        "https://hooks.slack.com/services/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",
        "slack-webhook",
    ),
    _c(
        "stripe live key",
        "Billing: sk_live_Zaj0QgVbiOZHOYmHa7YTqeb6\n",
        "sk_live_Zaj0QgVbiOZHOYmHa7YTqeb6",
        "stripe-key",
    ),
    _c(
        "stripe test key",
        "Staging billing uses sk_test_RRFruqeUKOf8eUiClOLyLm8u.\n",
        "sk_test_RRFruqeUKOf8eUiClOLyLm8u",
        "stripe-key",
    ),
    _c(
        "stripe live key, 107 characters",
        f"STRIPE_KEY in the vault is sk_live_513W...; the old one was\n{STRIPE_LONG} (rotated).\n",
        STRIPE_LONG,
        "stripe-key",
    ),
    _c(
        "stripe restricted key, 107 characters",
        f"Reports job: {STRIPE_RESTRICTED}\n",
        STRIPE_RESTRICTED,
        "stripe-key",
    ),
    _c(
        "slack bot token, longer than its regex",
        "bot xoxb-865434626839-3274509013480-RyZcsRgwayVdgHNQSgYHK2ztnBkO6lH6 posts alerts\n",
        "xoxb-865434626839-3274509013480-RyZcsRgwayVdgHNQSgYHK2ztnBkO6lH6",
        "slack-token",
    ),
    _c("rsa private key", f"Deploy key:\n{RSA_KEY}\nKeep it safe.\n", RSA_KEY, "private-key"),
    _c("openssh private key", f"{OPENSSH_KEY}\n", OPENSSH_KEY, "private-key"),
    _c("jwt", f"Session cookie: {JWT}\n", JWT, "jwt"),
    _c(
        "postgres url password",
        "DATABASE_URL=postgres://app:S3cr3tP4ss@db.internal:5432/prod\n",
        "S3cr3tP4ss",
        "url-password",
    ),
    _c(
        "mongodb srv password",
        "mongodb+srv://reporting:xK9mQ2vLr7@cluster0.mongodb.net/stats\n",
        "xK9mQ2vLr7",
        "url-password",
    ),
    _c(
        "https basic auth",
        "Mirror: https://deploy:Wh1teRabb1t@git.example.com/repo.git\n",
        "Wh1teRabb1t",
        "url-password",
    ),
    _c(
        "twilio api key",
        "Twilio SK9db361b70143cbf9b9353324cc2f4e87\n",
        "SK9db361b70143cbf9b9353324cc2f4e87",
        "twilio-key",
    ),
    _c(
        "sendgrid key",
        "SENDGRID=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\n",
        "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",
        "sendgrid-key",
    ),
    _c("openai project key", f"OPENAI_API_KEY={OPENAI}\n", OPENAI, "openai-key"),
    _c(
        "openai legacy key",
        "old key 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\n",
        "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",
        "openai-key",
    ),
    _c("anthropic key", f"The user's key is {ANTHROPIC} (personal).\n", ANTHROPIC, "anthropic-key"),
    _c(
        "google api key",
        "Maps: AIzaDN046lYQ2O4hBQYXRffVz6lGiLvuH-8mqC8\n",
        "AIzaDN046lYQ2O4hBQYXRffVz6lGiLvuH-8mqC8",
        "google-api-key",
    ),
    _c(
        "npm token",
        "publish with npm_KkPiYLg7eR2Op0WBtZfmfWCIIiWrtuTd5GUr\n",
        "npm_KkPiYLg7eR2Op0WBtZfmfWCIIiWrtuTd5GUr",
        "npm-token",
    ),
    _c(
        "npmrc auth token",
        "//registry.npmjs.org/:_authToken=0c9e7d2a-51f4-4b1e-9a0d-3f6b2e8c7a15\n",
        "0c9e7d2a-51f4-4b1e-9a0d-3f6b2e8c7a15",
        "npm-token",
    ),
    _c("pypi token", f"twine password: {PYPI}\n", PYPI, "pypi-token"),
    _c(
        "hugging face token",
        "HF: hf_Y16B9eL1FoysDBsWX9DCe9iZh37SD1Kq6R\n",
        "hf_Y16B9eL1FoysDBsWX9DCe9iZh37SD1Kq6R",
        "huggingface-token",
    ),
    _c(
        "telegram bot token",
        "bot 812761804:AA97v6jw1AmK03pb_YGi9dLLZp27K0WFjeO\n",
        "812761804:AA97v6jw1AmK03pb_YGi9dLLZp27K0WFjeO",
        "telegram-token",
    ),
    _c(
        "mailchimp key",
        "Mailchimp e1f810d80604668c2a6643ef95b53bb0-us14\n",
        "e1f810d80604668c2a6643ef95b53bb0-us14",
        "mailchimp-key",
    ),
    _c(
        "square oauth secret",
        "sq0csp-FOFDTOWpv5yDVALmj1nIzZpcZvZVfZSt5gdee-7buSZ\n",
        "sq0csp-FOFDTOWpv5yDVALmj1nIzZpcZvZVfZSt5gdee-7buSZ",
        "square-oauth-secret",
    ),
    _c(
        "azure storage connection string",
        "DefaultEndpointsProtocol=https;AccountName=acmelogs;"
        f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net\n",
        AZURE_KEY,
        "azure-storage-key",
    ),
    _c(
        "azure sas url",
        "https://acmelogs.blob.core.windows.net/logs/a.txt?sv=2022-11-02&sp=r&se=2026-01-01"
        "&sig=dNgybugGA2G5Eob3ScoZj8dOqsFu07YgYy5CRP%2B6lJo%3D\n",
        "dNgybugGA2G5Eob3ScoZj8dOqsFu07YgYy5CRP%2B6lJo%3D",
        "azure-sas-token",
    ),
    _c(
        "azure client secret",
        "AZURE_CLIENT_SECRET is YdW8Q~w-lq6i2PS4zZpMb7r.bAdoj1oWZpepOMw2\n",
        "YdW8Q~w-lq6i2PS4zZpMb7r.bAdoj1oWZpepOMw2",
        "azure-client-secret",
    ),
    _c(
        "bearer header",
        "curl -H 'Authorization: Bearer O_1Eea4-ga3Iy-o-tC.OrVz4LdC6D9qQOEkdmvOa'\n",
        "O_1Eea4-ga3Iy-o-tC.OrVz4LdC6D9qQOEkdmvOa",
        "bearer-token",
    ),
    _c("password env line", "DB_PASSWORD=Tr0ub4dor&3\n", "Tr0ub4dor&3", "password-assignment"),
    _c(
        "password json",
        '{"user": "svc", "password": "correct-horse-battery"}\n',
        "correct-horse-battery",
        "password-assignment",
    ),
    _c("password markdown", "- **Password:** hunter22x\n", "hunter22x", "password-assignment"),
    _c(
        "hex api key in context",
        "api_key: b47617b8c9778986d5a9e03608336358\n",
        "b47617b8c9778986d5a9e03608336358",
        "secret-assignment",
    ),
    _c(
        "client secret yaml",
        'client_secret: "q8Wm2ZtL0pX4nR7c"\n',
        "q8Wm2ZtL0pX4nR7c",
        "secret-assignment",
    ),
    _c(
        "unlabelled random token",
        "The deploy token for staging: xcBIptcJWsi9H2p0KNPFPN8RqDdN1GIXtBznwN1P\n",
        "xcBIptcJWsi9H2p0KNPFPN8RqDdN1GIXtBznwN1P",
        "high-entropy-string",
    ),
    _c(
        "discord bot token",
        "Discord: MOOBXGyNqdRoEBlcYQstKNlcZt.m1iWJO.EnXfCrjFNLXgqkFMjeQnHMHJTz9\n",
        "MOOBXGyNqdRoEBlcYQstKNlcZt.m1iWJO.EnXfCrjFNLXgqkFMjeQnHMHJTz9",
        "discord-token",
    ),
    # Known misses: each says what the scanner cannot see.
    Case(
        "password in prose",
        "The wifi password is Lumen-Falcon-88 for guests.\n",
        "Lumen-Falcon-88",
        "password-assignment",
        caught=False,
        why="no name = value shape and too short for the entropy rule",
    ),
    Case(
        "basic auth header",
        "Authorization: Basic c3ZjOmh1bnRlcjIyeA==\n",
        "c3ZjOmh1bnRlcjIyeA==",
        "basic-auth-header",
        caught=False,
        why="base64 of user:password is 20 characters, under the entropy rule's 32",
    ),
    Case(
        "bare hex key",
        "datadog 3f2b8c1d9e0a4f5b6c7d8e9f0a1b2c3d\n",
        "3f2b8c1d9e0a4f5b6c7d8e9f0a1b2c3d",
        "secret-assignment",
        caught=False,
        why="bare hex is left alone: it cannot be told from a hash",
    ),
)

LOOK_ALIKES: tuple[Case, ...] = (
    Case("git commit sha", "Fixed in 11f6ad8ec52a2984abaafd7c3b516503785c2072 (see 11f6ad8).\n"),
    Case(
        "sha256 digest", "sha256 2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\n"
    ),
    Case(
        "docker digest",
        "image@sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\n",
    ),
    Case("uuid", "request 0c9e7d2a-51f4-4b1e-9a0d-3f6b2e8c7a15 failed\n"),
    Case("uppercase uuid", "GUID {3F2504E0-4F89-11D3-9A0C-0305E82C3301}\n"),
    Case("base64 png data uri", f"![logo](data:image/png;base64,{PNG_B64})\n"),
    Case(
        "aws documented example key id", "AWS docs use AKIAIOSFODNN7EXAMPLE as the sample key ID.\n"
    ),
    Case(
        "aws documented example secret",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY  # from the AWS docs\n",
    ),
    Case("long word", "Longest word: pneumonoultramicroscopicsilicovolcanoconiosis.\n"),
    Case("long identifier", "Call AbstractSingletonProxyFactoryBeanConfigurationHelper2 once.\n"),
    Case("url with user, no password", "Clone https://alice@git.example.com/team/repo.git\n"),
    Case("url with port", "API at https://api.example.com:8443/v2/items?page=3\n"),
    Case(
        "google docs url",
        "Spec: https://docs.google.com/document/d/"
        "1cZRYy8MXktz99uxH_xnImo52USPzpfM1ix8hix26nmz/edit\n",
    ),
    Case("file path", "Tests live in /home/alice/projects/memfs/tests/fixtures/Mount2Helpers.py\n"),
    Case("password required prose", "password: required for the admin panel\n"),
    Case("placeholder api key", "api_key: <your-api-key>\n"),
    Case("placeholder quoted", 'API_KEY = "your_api_key_here"\n'),
    Case("env reference", 'password = os.environ["DB_PASSWORD"]\n'),
    Case("templated password", "password: ${DB_PASSWORD}\n"),
    Case("masked password", "password: ********\n"),
    Case("password policy", "password_min_length = 12\n"),
    Case("secret name", "secret_name: prod-db-credentials\n"),
    Case("max tokens", "max_tokens: 4096\n"),
    Case("tokenizer", "tokenizer: cl100k_base\n"),
    Case(
        "ssh public key",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPI2/dDeknQl22S0fgVM58VLxWHv1FhXk5VFQWq5mcjk "
        "alice@laptop\n",
    ),
    Case(
        "sri hash",
        '<script integrity="sha384-11LCxR+6DimqGQVwqdQlPkQHegWNMpf6OlYw1b0BJiL5fC'
        'isrtMTtcg7uZDKp9qF">\n',
    ),
    Case("certificate", f"{CERTIFICATE}\n"),
    Case(
        "stripe publishable key",
        "Checkout uses pk_live_51Hc3x2L8mQnR4tYvZp0aBcDe (public by design).\n",
    ),
    Case("invalid jwt shape", "header eyJhbGciOiJub25lIn0.bm90IGpzb24.x is not a token\n"),
    Case("redaction marker", "key: [REDACTED:aws-access-key] and [REDACTED:url-password]\n"),
    Case("markdown rule", "|--------------------------------------|----------|\n"),
    Case("semver and time", "v1.24.3-rc.4+build.2025.08.18 at 2025-08-18T12:34:56.789Z\n"),
    Case("ipv6", "listen [2001:0db8:85a3:0000:0000:8a2e:0370:7334]:443\n"),
    Case("md5 and short shas", "md5 d41d8cd98f00b204e9800998ecf8427e; commits a1b2c3d, 9f8e7d6\n"),
    Case("base64 jpeg data uri", f"<img src='data:image/jpeg;base64,{PNG_B64[::-1]}'>\n"),
    Case("null token", "token: null\napi_key = None\n"),
    Case("profile name", "export AWS_PROFILE=prod-admin\n"),
    Case("passwordless", "passwordless login is enabled for the team\n"),
    Case("ethereum address", "Donations: 0x52908400098527886E0F7030069857D2E4169EE7\n"),
    Case("java class path", "org.springframework.boot.autoconfigure.SpringBootApplication2\n"),
    Case("long number", "invoice 12345678901234567890123456789012345678\n"),
    Case("youtube url", "Talk: https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s\n"),
    Case("ssh command", "ssh -i ~/.ssh/id_ed25519 deploy@build.example.com\n"),
    Case("model id", "Use claude-sonnet-4-5-20250929 with max_tokens 4096.\n"),
    Case("prose about keys", "Stripe secret keys start with sk_live_ and GitHub's with ghp_.\n"),
    # Identifiers, paths and labelled digests: long runs of letters and digits that are
    # not random (the entropy rule's false positives before the identifier check).
    Case(
        "camel-case class name",
        "Subclass ConcurrentHashMapV8TreeBinEntrySetView2Impl, not the base.\n",
    ),
    Case("kotlin class path", "kotlinx.coroutines.internal.LockFreeLinkedListNode2Companion\n"),
    Case("ios delegate name", "Adopt UICollectionViewDataSourcePrefetching2DelegateV3Bridge.\n"),
    Case(
        "swing state name",
        "See InternalFrameTitlePaneMaximizeButtonWindowNotFocusedState1 in Nimbus.\n",
    ),
    Case(
        "python path",
        "Patched /usr/lib/python3/dist-packages/SomeModule3Helper/AnotherThing9 locally.\n",
    ),
    Case(
        "java source path",
        "Open src/main/java/org/springframework/boot/jdbc/DataSource2PropertiesBinder.java\n",
    ),
    Case(
        "sha512 base64 digest",
        "sha512: z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7"
        "kxvUdBeoGlODJ6+SfaPg==\n",
    ),
    Case("sha256 base64 digest", "digest=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"),
    Case("etag", 'ETag: W/"XkR3pQ9vLmN2bT7yU5wZ1aC4dF8gH0jKsEoIuYtRqWe"\n'),
    Case(
        "method name with digits",
        "getOrCreateUserSessionTokenCacheForTenant2 returns the cached session.\n",
    ),
)
