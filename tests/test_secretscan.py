"""Tests for ctxkeeper.core.secretscan: vendor tokens, assignments, URLs and their look-alikes."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import time
import uuid

import pytest

from ctxkeeper.core.errors import PreviouslyRejectedError, SecretDetectedError
from ctxkeeper.core.model import contract_floors
from ctxkeeper.core.secretscan import check_fields, find_secret, scan_fields
from ctxkeeper.write.capture import check_candidate
from ctxkeeper.write.verbs import deprecate_entry, record_entry, update_entry, user_actor
from tests.conftest import constraint_fields, snapshot_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONValue
    from ctxkeeper.core.store import Store

FLOORS = contract_floors()

# No complete secret is written as a literal here (push protection and scanners would flag the
# repository): every positive is assembled at import time from a prefix and seeded random text.
_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"
_HEX = string.digits + "abcdef"
_BASE32 = string.ascii_uppercase + "234567"
_DIGITS = string.digits


def _rand(length: int, alphabet: str = _ALNUM, *, seed: int = 0) -> str:
    rng = random.Random(f"{seed}:{length}:{alphabet}")
    return "".join(rng.choice(alphabet) for _ in range(length))


def _b64url_json(value: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _pem(label: str) -> str:
    body = "\n".join(_rand(64, _B64, seed=line) for line in range(4))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


_GITHUB_PAT = "gh" + "p_" + _rand(36)
_JWT = ".".join(
    (
        _b64url_json({"alg": "HS256", "typ": "JWT"}),
        _b64url_json({"sub": "svc-deploy", "iat": "1718000000"}),
        _rand(43, _URLSAFE),
    )
)
_DISCORD_ID = base64.b64encode(("8" + _rand(17, _DIGITS)).encode()).decode().rstrip("=")
_SHA1 = hashlib.sha1(b"ctxkeeper").hexdigest()
_SHA256 = hashlib.sha256(b"ctxkeeper").hexdigest()
_UUID = str(uuid.UUID(int=0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0))

POSITIVES = [
    pytest.param(
        "Deploy uses AKIA" + _rand(16, _BASE32) + " for the artifact bucket.",
        "AWS access key id",
        id="aws-access-key-id",
    ),
    pytest.param(
        "temporary creds ASIA" + _rand(16, _BASE32, seed=1) + " from STS",
        "AWS access key id",
        id="aws-sts-key-id",
    ),
    pytest.param(
        "export AWS_SECRET_ACCESS_KEY=" + _rand(40, _B64),
        "AWS secret access key",
        id="aws-secret-env",
    ),
    pytest.param(
        "[default]\naws_secret_access_key = " + _rand(40, _B64, seed=1),
        "AWS secret access key",
        id="aws-secret-credentials-file",
    ),
    pytest.param(
        '{"type": "service_account", "project_id": "acme", "private_key": '
        '"' + _pem("PRIVATE KEY").replace("\n", "\\n") + '"}',
        "GCP service account key",
        id="gcp-service-account-json",
    ),
    pytest.param("maps key AIza" + _rand(35, _URLSAFE), "Google API key", id="google-api-key"),
    pytest.param(
        "client_secret GOCSPX-" + _rand(28, _URLSAFE),
        "Google OAuth client secret",
        id="google-oauth-client-secret",
    ),
    pytest.param(
        "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey="
        + _rand(86, _B64)
        + "==;EndpointSuffix=core.windows.net",
        "Azure storage account key",
        id="azure-storage-connection-string",
    ),
    pytest.param(
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey="
        + _rand(43, _B64)
        + "=",
        "Azure shared access key",
        id="azure-service-bus",
    ),
    pytest.param("GITHUB_TOKEN=" + _GITHUB_PAT, "GitHub token", id="github-classic-pat"),
    pytest.param("gh" + "o_" + _rand(36, seed=1), "GitHub token", id="github-oauth"),
    pytest.param("gh" + "s_" + _rand(36, seed=2), "GitHub token", id="github-app-installation"),
    pytest.param(
        "github" + "_pat_" + _rand(22) + "_" + _rand(59), "GitHub token", id="github-fine-grained"
    ),
    pytest.param(
        "gh" + "p_" + "A1b2" * 9, "GitHub token", id="github-low-entropy-but-not-a-filler"
    ),
    pytest.param("glpat-" + _rand(20, _URLSAFE), "GitLab token", id="gitlab-pat"),
    pytest.param(
        "SLACK_BOT_TOKEN=xo"
        + "xb-"
        + _rand(12, _DIGITS)
        + "-"
        + _rand(13, _DIGITS)
        + "-"
        + _rand(24),
        "Slack token",
        id="slack-bot-token",
    ),
    pytest.param(
        "xo"
        + "xp-"
        + "-".join(_rand(12, _DIGITS, seed=n) for n in range(3))
        + "-"
        + _rand(32, _HEX),
        "Slack token",
        id="slack-user-token",
    ),
    pytest.param(
        "xa" + "pp-1-A" + _rand(10, _BASE32) + "-" + _rand(13, _DIGITS) + "-" + _rand(64, _HEX),
        "Slack token",
        id="slack-app-token",
    ),
    pytest.param(
        "alerts go to https://hooks.slack.com/services/T"
        + _rand(8, _BASE32)
        + "/B"
        + _rand(10, _BASE32)
        + "/"
        + _rand(24),
        "Slack webhook URL",
        id="slack-webhook",
    ),
    pytest.param("sk" + "_live_" + _rand(24), "Stripe secret key", id="stripe-live-secret"),
    pytest.param("sk" + "_test_" + _rand(99), "Stripe secret key", id="stripe-test-secret"),
    pytest.param("rk" + "_live_" + _rand(24), "Stripe restricted key", id="stripe-restricted"),
    pytest.param("whsec" + "_" + _rand(32), "Stripe webhook secret", id="stripe-webhook-secret"),
    pytest.param(
        "ANTHROPIC_API_KEY=sk-" + "ant-api03-" + _rand(93, _URLSAFE) + "AA",
        "Anthropic API key",
        id="anthropic-key",
    ),
    pytest.param("sk-" + _rand(48), "OpenAI API key", id="openai-legacy-key"),
    pytest.param("sk-" + "proj-" + _rand(156, _URLSAFE), "OpenAI API key", id="openai-project"),
    pytest.param("//registry.npmjs.org/:_authToken=npm_" + _rand(36), "npm access token", id="npm"),
    pytest.param(
        "password = pypi-AgEIcHlwaS5vcmc" + _rand(120, _URLSAFE), "PyPI API token", id="pypi"
    ),
    pytest.param("HF_TOKEN=hf" + "_" + _rand(34), "Hugging Face token", id="hugging-face"),
    pytest.param("SK" + _rand(32, _HEX), "Twilio API key", id="twilio-api-key"),
    pytest.param(
        "TWILIO_AUTH_TOKEN=" + _rand(32, _HEX, seed=1), "Twilio auth token", id="twilio-auth-token"
    ),
    pytest.param(
        "SG" + "." + _rand(22, _URLSAFE) + "." + _rand(43, _URLSAFE),
        "SendGrid API key",
        id="sendgrid",
    ),
    pytest.param(
        "DISCORD_TOKEN=" + _DISCORD_ID + "." + _rand(6, _URLSAFE) + "." + _rand(38, _URLSAFE),
        "Discord bot token",
        id="discord-bot-token",
    ),
    pytest.param(
        "https://discord.com/api/webhooks/" + _rand(18, _DIGITS) + "/" + _rand(68, _URLSAFE),
        "Discord webhook URL",
        id="discord-webhook",
    ),
    pytest.param(_pem("RSA PRIVATE KEY"), "private key block", id="pem-rsa"),
    pytest.param("key:\n" + _pem("OPENSSH PRIVATE KEY"), "private key block", id="pem-openssh"),
    pytest.param(_pem("PGP PRIVATE KEY BLOCK"), "private key block", id="pem-pgp"),
    pytest.param("curl -H 'Authorization: Bearer " + _JWT + "'", "JSON Web Token", id="jwt"),
    pytest.param(
        "Authorization: Bearer " + _rand(40, _URLSAFE), "bearer token", id="opaque-bearer"
    ),
    pytest.param(
        "DATABASE_URL=postgres://app:" + _rand(16) + "@db.internal:5432/app",
        "URL with inline password",
        id="postgres-url",
    ),
    pytest.param(
        "mongodb+srv://svc:" + _rand(20) + "@cluster0.ab1cd.mongodb.net/prod",
        "URL with inline password",
        id="mongodb-srv-url",
    ),
    pytest.param(
        "redis://:" + _rand(24) + "@cache:6379/0", "URL with inline password", id="redis-no-user"
    ),
    pytest.param(
        "amqp://worker:" + "hunter2" + "@rabbit:5672/",
        "URL with inline password",
        id="amqp-weak-password",
    ),
    pytest.param(
        "mysql://root:" + _rand(12) + "@127.0.0.1/shop", "URL with inline password", id="mysql-url"
    ),
    pytest.param(
        "clone https://deploy:" + _rand(18) + "@git.acme.dev/infra.git",
        "URL with inline password",
        id="https-basic-auth",
    ),
    pytest.param("DB_PASSWORD=" + _rand(20), "password assignment", id="password-env"),
    pytest.param(
        'password: "Summer' + "2024" + '!"', "password assignment", id="password-yaml-quoted"
    ),
    pytest.param(
        "Server=sql01;User Id=sa;Password=Str0ng" + "Pa55;",
        "password assignment",
        id="password-sqlserver-connection-string",
    ),
    pytest.param('{"api_key": "' + _rand(32) + '"}', "API key assignment", id="api-key-json"),
    pytest.param(
        "https://api.weather.example/v1?q=oslo&apikey=" + _rand(32, _HEX),
        "API key assignment",
        id="api-key-query-string",
    ),
    pytest.param("auth_token := " + _rand(24), "token assignment", id="token-go-assignment"),
    pytest.param(
        "refresh_token: " + _rand(24, string.ascii_letters),
        "token assignment",
        id="token-letters-only",
    ),
    pytest.param(
        "SECRET_KEY = '" + _rand(50, _URLSAFE) + "'", "secret assignment", id="django-secret-key"
    ),
    pytest.param("client_secret: " + _rand(40, _HEX), "secret assignment", id="client-secret-yaml"),
]

NEGATIVES = [
    pytest.param(f"Fixed in {_SHA1} after the flaky retry was removed.", id="git-sha"),
    pytest.param(f"The tarball's sha256 is {_SHA256}.", id="sha256-hex"),
    pytest.param(f"Entry {_UUID} supersedes the old one.", id="uuid"),
    pytest.param(
        f"idempotency_token={_UUID} keeps retries from double-charging", id="uuid-token-assignment"
    ),
    pytest.param(
        "The fixture is " + base64.b64encode(b"decisions must explain why, always").decode(),
        id="base64-of-prose",
    ),
    pytest.param("Set password=<your-password> in .env", id="angle-placeholder"),
    pytest.param("password=changeme", id="changeme"),
    pytest.param("api_key=${API_KEY}", id="shell-expansion"),
    pytest.param("token=$TOKEN", id="shell-variable"),
    pytest.param("password=********", id="masked"),
    pytest.param("token: xxxxxxxxxxxxxxxxxxxxxxxx", id="x-filler"),
    pytest.param("api_key: your-api-key-123", id="your-api-key"),
    pytest.param("AWS docs use AKIAIOSFODNN7EXAMPLE as the key id.", id="aws-documented-example"),
    pytest.param(
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        id="aws-documented-secret",
    ),
    pytest.param("gh" + "p_" + "x" * 36, id="github-filler"),
    pytest.param(
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        id="slack-documented-webhook",
    ),
    pytest.param("SLACK_BOT_TOKEN=xoxb-your-token-here", id="slack-placeholder"),
    pytest.param("postgres://user:password@localhost/app", id="postgres-placeholder-password"),
    pytest.param("postgres://postgres:postgres@localhost:5432", id="postgres-docker-default"),
    pytest.param("amqp://guest:guest@localhost:5672", id="amqp-guest-default"),
    pytest.param("postgres://localhost/db", id="postgres-no-password"),
    pytest.param("https://ci:${CI_JOB_TOKEN}@gitlab.acme.dev/x.git", id="url-templated-password"),
    pytest.param('key = os.environ["STRIPE_KEY"]', id="environ-lookup"),
    pytest.param('api_key = os.environ["OPENAI_API_KEY"]', id="environ-assignment"),
    pytest.param("token: GITHUB_TOKEN", id="env-var-name-value"),
    pytest.param("password = settings.DATABASE_PASSWORD", id="dotted-reference"),
    pytest.param("password: 90-day-rotation, enforced by IAM", id="password-policy-prose"),
    pytest.param(
        "The password rotation job runs nightly; the token bucket refills at 50 req/s.",
        id="prose-password-token",
    ),
    pytest.param("secret_name: prod/db/credentials-2024", id="secret-name-key"),
    pytest.param("Bumped ruff to v0.6.9 and mcp to 2.3.0-rc.1+build.5", id="versions"),
    pytest.param("token: v1.2.3-beta.4", id="version-assigned"),
    pytest.param("See src/ctxkeeper/secretscan.py and ~/.ssh/id_ed25519.pub", id="file-paths"),
    pytest.param("secret_file=/etc/acme/tls/server-2024.key", id="path-assigned"),
    pytest.param("Verified at 2025-11-23T14:52:07Z on main.", id="iso-timestamp"),
    pytest.param("token: 2025-11-23T14:52:07Z", id="timestamp-assigned"),
    pytest.param(f"FROM python@sha256:{_SHA256}", id="docker-digest"),
    pytest.param(f"token = sha256:{_SHA256}", id="digest-assigned"),
    pytest.param("Superseded by dec-021-b607 and con-004-91aa.", id="short-ids"),
    pytest.param("Upstream fix: https://github.com/org/repo/pull/1234#issuecomment-99", id="url"),
    pytest.param("Rename task_sk_index and bookmark_live_updates_enabled", id="sk-in-identifiers"),
    pytest.param("We use scikit-learn (sk-learn) for the ranker baseline.", id="sk-dash-word"),
    pytest.param(
        "sk-" + "the-ranker-baseline-compares-bm25-with-embeddings", id="sk-hyphenated-words"
    ),
    pytest.param(
        "-----BEGIN RSA " + "PRIVATE KEY-----\n...\n-----END RSA " + "PRIVATE KEY-----",
        id="pem-without-body",
    ),
    pytest.param(_pem("PUBLIC KEY"), id="pem-public-key"),
    pytest.param(
        _b64url_json({"kid": "k1"}) + "." + _rand(20, _URLSAFE) + "." + _rand(43, _URLSAFE),
        id="jwt-shape-without-alg",
    ),
    pytest.param(
        "eyJ" + "notjson" * 3 + "." + _rand(20, _URLSAFE) + "." + _rand(43, _URLSAFE),
        id="jwt-shape-undecodable",
    ),
    pytest.param(
        "ctxkeeper.capture.record_entry_with_similarity.tombstone_lookup_cache_v2",
        id="dotted-module-path",
    ),
    pytest.param(
        _rand(24, _URLSAFE) + "." + _rand(6, _URLSAFE) + "." + _rand(30, _URLSAFE),
        id="discord-shape-without-id",
    ),
    pytest.param(
        _rand(30, _URLSAFE) + "." + _rand(6, _URLSAFE) + "." + _rand(30, _URLSAFE),
        id="discord-shape-long-first-segment",
    ),
    pytest.param(
        _rand(25, _URLSAFE) + "." + _rand(6, _URLSAFE) + "." + _rand(30, _URLSAFE),
        id="discord-shape-bad-base64",
    ),
    pytest.param("the bearer token is read from the keychain", id="bearer-prose"),
    pytest.param("api_key=process.env.OPENAI_API_KEY", id="js-env-reference"),
    pytest.param("token: ${{ secrets.GITHUB_TOKEN }}", id="actions-expression"),
    pytest.param("password: hunter2", id="short-password"),
    pytest.param("passwordHash: " + _rand(40, _HEX), id="password-suffix-key"),
    pytest.param("max_tokens: 4096 and tokenizer: cl100k-base", id="token-words"),
    pytest.param("token=" + "(" + _rand(20) + ")", id="token-call-expression"),
    pytest.param("https://user:8080@proxy.internal", id="url-port-not-password"),
    pytest.param("new URL('https://abc:xyz@example.com') parses userinfo", id="url-docs-example"),
    pytest.param("private_key: Ed25519PrivateKey | None = None", id="type-annotation"),
    pytest.param("def sign(private_key: SSHCertPrivateKeyTypes) -> bytes", id="acronym-type"),
    pytest.param("refresh_token: RefreshTokenT,", id="type-variable"),
    pytest.param("BasicAuth(username=username, password=password)", id="keyword-argument"),
    pytest.param("user = User(name='sam', password='password1')", id="numbered-placeholder"),
    pytest.param("?access_token=&state=" + _rand(16), id="empty-query-value"),
]


class TestFindSecret:
    @pytest.mark.parametrize(("text", "kind"), POSITIVES)
    def test_detects_kind(self, text: str, kind: str) -> None:
        assert find_secret(text) == kind

    @pytest.mark.parametrize("text", NEGATIVES)
    def test_passes_look_alike(self, text: str) -> None:
        assert find_secret(text) is None

    def test_case_counts(self) -> None:
        assert len(POSITIVES) >= 25
        assert len(NEGATIVES) >= 25

    def test_empty_text(self) -> None:
        assert find_secret("") is None


def _prose(size: int) -> str:
    sentences = (
        "We chose SQLite over Postgres because the plugin must run from a plain checkout.",
        "The password rotation job lives in infra/cron and is owned by the platform team.",
        "Rate limiting uses a token bucket of 50 requests per second per API key holder.",
        "Never log the Authorization header; the middleware strips it before the logger sees it.",
        "Pinned python@sha256 digests in the Dockerfile since image drift broke CI in March.",
        f"Commit {_SHA1} moved ranking into ctxkeeper/rank.py (see dec-021-b607).",
        f"Request {_UUID} timed out at 2025-11-23T14:52:07Z after 30s; retry with backoff.",
        "Secrets come from os.environ['STRIPE_SECRET_KEY'] and are never written to disk.",
        "Bumped mcp to 2.3.0 and ruff to 0.6.9; the lock file pins transitive versions too.",
        "Connection strings look like postgres://user:password@localhost/app in the docs.",
    )
    parts: list[str] = []
    length = 0
    index = 0
    while length < size:
        sentence = sentences[index % len(sentences)]
        parts.append(sentence)
        length += len(sentence) + 1
        index += 1
    return " ".join(parts)


class TestPerformance:
    def test_20kb_of_prose_passes(self) -> None:
        text = _prose(20_000)
        assert len(text) >= 20_000
        assert find_secret(text) is None

    def test_20kb_scan_is_fast(self) -> None:
        text = _prose(20_000)
        best = min(_timed(text) for _ in range(5))
        # The budget is 5 ms; the margin absorbs a loaded CI machine.
        assert best < 0.02

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("a" * 20_000, id="one-long-word"),
            pytest.param("eyJ" * 7_000, id="repeated-jwt-prefix"),
            pytest.param("password=" * 2_300, id="repeated-assignments"),
            pytest.param("x://" + "a:" * 10_000, id="url-shaped-noise"),
            pytest.param(("-----BEGIN " + "PRIVATE KEY-----") * 700, id="repeated-pem-headers"),
            pytest.param("ab-" * 7_000, id="hyphen-chain"),
        ],
    )
    def test_adversarial_input_is_linear(self, text: str) -> None:
        assert min(_timed(text) for _ in range(3)) < 0.05


def _timed(text: str) -> float:
    start = time.perf_counter()
    find_secret(text)
    return time.perf_counter() - start


class TestScanFields:
    def test_clean_entry(self) -> None:
        entry: dict[str, object] = {
            "title": "Use SQLite for the store",
            "rationale": "The password rotation job must not depend on a server.",
            "steps": ["run migrations", "restart"],
            "meta": {"note": "see dec-021-b607"},
            "priority": 3,
            "hard": True,
            "valid_until": None,
        }
        assert scan_fields(entry) is None

    @pytest.mark.parametrize(
        ("fields", "expected"),
        [
            pytest.param(
                {"title": "Rotate keys", "rationale": "old key " + _GITHUB_PAT},
                ("rationale", "GitHub token"),
                id="top-level-string",
            ),
            pytest.param(
                {"steps": ["build", "export DB_PASSWORD=" + _rand(20), "deploy"]},
                ("steps[1]", "password assignment"),
                id="list-item",
            ),
            pytest.param(
                {"meta": {"origin": "import", "notes": {"raw": _JWT}}},
                ("meta.notes.raw", "JSON Web Token"),
                id="nested-dict",
            ),
            pytest.param(
                {"pipeline": [{"name": "ok"}, {"env": ("A=1", "SK" + _rand(32, _HEX))}]},
                ("pipeline[1].env[1]", "Twilio API key"),
                id="dicts-in-lists",
            ),
            pytest.param(
                {"a": "clean", "b": "sk" + "_live_" + _rand(24), "c": _GITHUB_PAT},
                ("b", "Stripe secret key"),
                id="first-hit-wins",
            ),
        ],
    )
    def test_reports_field_path(self, fields: dict[str, object], expected: tuple[str, str]) -> None:
        assert scan_fields(fields) == expected


class TestCheckFields:
    def test_raises_without_echoing_the_value(self) -> None:
        check_fields({"title": "Clean", "steps": ["nothing to see"]})  # the control: no raise
        secret = _rand(20)
        with pytest.raises(SecretDetectedError) as info:
            check_fields({"title": "Clean", "steps": ["ok", f"DB_PASSWORD={secret}"]})
        message = str(info.value)
        assert "steps[1]" in message
        assert "password assignment" in message
        assert secret not in message
        assert info.value.field == "steps[1]"
        assert info.value.secret_kind == "password assignment"


def _split(token: str, joiner: str) -> str:
    """The token with an invisible character after every fourth character."""
    return joiner.join(token[i : i + 4] for i in range(0, len(token), 4))


class TestHiddenCharacters:
    @pytest.mark.parametrize(
        "joiner",
        [
            pytest.param("\u200b", id="zero-width-space"),
            pytest.param("\u200d", id="zero-width-joiner"),
            pytest.param("\u00ad", id="soft-hyphen"),
            pytest.param("\u2060", id="word-joiner"),
            pytest.param("\ufeff", id="byte-order-mark"),
            pytest.param("\u0301", id="combining-mark"),
        ],
    )
    def test_token_split_by_invisible_characters(self, joiner: str) -> None:
        hidden = f"the CI token is {_split(_GITHUB_PAT, joiner)} for now"
        assert find_secret(hidden) == "GitHub token"
        # The control: the same split applied to a documentation filler is still a filler.
        filler = "gh" + "p_" + "x" * 36
        assert find_secret(f"the CI token is {_split(filler, joiner)} for now") is None

    def test_full_width_token(self) -> None:
        wide = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in _GITHUB_PAT)
        assert find_secret(f"token {wide}") == "GitHub token"
        assert find_secret("token \uff47\uff48\uff50") is None


class TestReasons:
    """Reasons of update_entry and deprecate_entry are journaled and echoed: scanned too."""

    @pytest.mark.parametrize("verb", ["deprecate", "update"])
    def test_secret_in_reason_is_refused(self, store: Store, verb: str) -> None:
        recorded = record_entry(store, "constraint", constraint_fields(), actor=user_actor())
        entry_id = str(recorded["id"])
        before = snapshot_dir(store.dir)
        secret = _split(_GITHUB_PAT, "\u200b")
        reason = f"Rotated the deploy credential, the old one was {secret}"

        def write() -> object:
            if verb == "deprecate":
                return deprecate_entry(store, entry_id, reason, actor=user_actor())
            return update_entry(store, entry_id, {"hardness": "soft"}, reason, actor=user_actor())

        with pytest.raises(SecretDetectedError) as info:
            write()
        assert info.value.field == "reason"
        assert "GitHub token" in str(info.value)
        assert _GITHUB_PAT[4:12] not in str(info.value)
        assert snapshot_dir(store.dir) == before
        # The control: a reason that only says where the secret lives is accepted.
        done = deprecate_entry(
            store, entry_id, "Rotated the credential; it lives in the vault now", actor=user_actor()
        )
        assert done["entry"]["status"] == "deprecated"  # type: ignore[index,call-overload]

    def test_tombstone_reason_is_withheld_when_secret_shaped(self) -> None:
        secret_reason = f"superseded, use GITHUB_TOKEN={_GITHUB_PAT} from now on"
        plain_reason = "retired because the provider now deduplicates charges itself"
        for reason, shown in ((secret_reason, False), (plain_reason, True)):
            tombstone: dict[str, JSONValue] = {
                "id": "con-001-abcd",
                "kind": "constraint",
                "status": "deprecated",
                "status_reason": reason,
                "rule": str(constraint_fields()["rule"]),
            }
            with pytest.raises(PreviouslyRejectedError) as info:
                check_candidate("constraint", constraint_fields(), [tombstone], floors=FLOORS)
            message = str(info.value)
            assert (reason in message) is shown
            assert (reason in info.value.reason) is shown
            assert ("withheld" in message) is not shown
            assert _GITHUB_PAT not in message
