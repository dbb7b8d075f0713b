"""The lab's OpenID Connect issuer: single sign-on for people, client-credentials tokens for
machines, from the npm ``oidc-provider`` (MIT) run by Node.js (``lab/oidc/issuer.mjs``).

What it serves, on a loopback port of its own:

- **a web client** (``lagwatch-web``: authorization code with PKCE, its secret sent in the
  token request's body) whose redirect URI is the stack's web server's ``/oidc/callback/``
  (plus ``$LAGWATCH_LAB_OIDC_REDIRECT_URIS``, space-separated, for a product run elsewhere);
- **a confidential machine client** (``lagwatch-kafka``: client credentials, HTTP Basic)
  whose access tokens are RS256 JWTs for the audience ``kafka`` (resource indicator
  ``urn:lagwatch:kafka``, the default for that client, so a request need not name it),
  living ``$LAGWATCH_LAB_OIDC_TOKEN_TTL_S`` seconds (300 by default; a refresh test sets
  60), verifiable against the issuer's JWKS;
- **users** alice (``lagwatch-admins``), bob (``lagwatch-operators``), carol
  (``lagwatch-viewers``) and dave (in no group), with a ``groups`` claim.

The client secrets and the users' passwords are generated once per run directory
(``services.run_secret``: files of mode 0600) and given to the issuer in its environment,
never on its command line (stack.json records that) nor in a log; ``endpoints`` names only
addresses. The signing key is a file of the run directory too, so a restart keeps the JWKS;
sessions and grants live in the issuer's memory (oidc-provider's development adapter: a
restart logs people out, which a lab may). oidc-provider 9 asks for Node.js 22 and warns on
20, on which it runs here.

The service is optional: ``python -m lab up --services oidc,...``. With it in the stack, the
product's processes get the ``LAGWATCH_OIDC_*`` settings that turn single sign-on on
(``services.django_env`` → :func:`product_env`).
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from pathlib import Path

from lab.services import Context, ServiceSpec, run_secret

WEB_CLIENT_ID = "lagwatch-web"
MACHINE_CLIENT_ID = "lagwatch-kafka"
AUDIENCE = "kafka"
RESOURCE = "urn:lagwatch:kafka"  # the resource indicator (RFC 8707: an absolute URI)
TOKEN_TTL_VAR = "LAGWATCH_LAB_OIDC_TOKEN_TTL_S"
REDIRECT_URIS_VAR = "LAGWATCH_LAB_OIDC_REDIRECT_URIS"
# JSON {"bob": ["lagwatch-viewers"]}: other groups for some users, read at each (re)start, so
# a test takes a group away from a person and restarts the issuer.
GROUPS_VAR = "LAGWATCH_LAB_OIDC_GROUPS"
DEFAULT_TOKEN_TTL_S = 300
CALLBACK_PATH = "/oidc/callback/"
ISSUER_DIR = Path(__file__).resolve().parent / "oidc"

# user → the groups its `groups` claim lists (the product maps them to roles: product_env)
USERS: dict[str, tuple[str, ...]] = {
    "alice": ("lagwatch-admins",),
    "bob": ("lagwatch-operators",),
    "carol": ("lagwatch-viewers",),
    "dave": (),
}
GROUP_ROLES = {
    "lagwatch-admins": "admin",
    "lagwatch-operators": "operator",
    "lagwatch-viewers": "viewer",
}


def issuer_url(ctx: Context) -> str:
    return ctx.url("oidc")


def discovery_url(ctx: Context) -> str:
    return issuer_url(ctx) + "/.well-known/openid-configuration"


def jwks_url(ctx: Context) -> str:
    return issuer_url(ctx) + "/jwks"


def token_url(ctx: Context) -> str:
    return issuer_url(ctx) + "/token"


def web_client_secret(ctx: Context) -> str:
    return run_secret(ctx, "oidc-web-client-secret")


def machine_client_secret(ctx: Context) -> str:
    """The secret of ``MACHINE_CLIENT_ID``, for a Kafka client's
    ``sasl.oauthbearer.client.secret`` (read it from here; never print it)."""
    return run_secret(ctx, "oidc-machine-client-secret")


def password(ctx: Context, user: str) -> str:
    if user not in USERS:
        raise KeyError(f"the lab issuer has no user {user!r}; it has {', '.join(USERS)}")
    return run_secret(ctx, f"oidc-password-{user}", nbytes=12)


def token_ttl_s() -> int:
    text = os.environ.get(TOKEN_TTL_VAR, "").strip()
    value = int(text) if text.isdigit() else DEFAULT_TOKEN_TTL_S if not text else 0
    if value < 1:
        raise ValueError(f"{TOKEN_TTL_VAR}={text!r}: a whole number of seconds, at least 1")
    return value


def redirect_uris(ctx: Context) -> list[str]:
    uris = os.environ.get(REDIRECT_URIS_VAR, "").split()
    if "web" in ctx.ports:
        port = ctx.ports["web"]
        uris += [f"http://{host}:{port}{CALLBACK_PATH}" for host in ("127.0.0.1", "localhost")]
    return uris


def product_env(ctx: Context) -> dict[str, str]:
    """The settings that point the product's single sign-on at this issuer."""
    return {
        "LAGWATCH_OIDC_ISSUER": issuer_url(ctx),
        "LAGWATCH_OIDC_CLIENT_ID": WEB_CLIENT_ID,
        "LAGWATCH_OIDC_CLIENT_SECRET": web_client_secret(ctx),
        "LAGWATCH_OIDC_GROUPS_CLAIM": "groups",
        "LAGWATCH_OIDC_GROUP_ROLES": ",".join(f"{g}={r}" for g, r in GROUP_ROLES.items()),
        # The lab's issuer is plain HTTP on loopback; a real one is HTTPS.
        "LAGWATCH_OIDC_ALLOW_HTTP": "1",
    }


def user_groups() -> dict[str, list[str]]:
    """Each user's groups: ``USERS``, with ``$LAGWATCH_LAB_OIDC_GROUPS`` over it."""
    groups = {name: list(listed) for name, listed in USERS.items()}
    override = json.loads(os.environ.get(GROUPS_VAR) or "{}")
    unknown = set(override) - set(USERS)
    if unknown:
        raise ValueError(f"{GROUPS_VAR} names unknown users: {', '.join(sorted(unknown))}")
    groups.update({name: [str(g) for g in listed] for name, listed in override.items()})
    return groups


def _env(ctx: Context) -> dict[str, str]:
    env = dict(os.environ)
    users = {
        name: {"password": password(ctx, name), "groups": groups, "name": name.title()}
        for name, groups in user_groups().items()
    }
    env.update(
        LAB_OIDC_ISSUER=issuer_url(ctx),
        LAB_OIDC_PORT=str(ctx.ports["oidc"]),
        LAB_OIDC_TOKEN_TTL_S=str(token_ttl_s()),
        LAB_OIDC_AUDIENCE=AUDIENCE,
        LAB_OIDC_RESOURCE=RESOURCE,
        LAB_OIDC_WEB_CLIENT_ID=WEB_CLIENT_ID,
        LAB_OIDC_MACHINE_CLIENT_ID=MACHINE_CLIENT_ID,
        LAB_OIDC_WEB_CLIENT_SECRET=web_client_secret(ctx),
        LAB_OIDC_MACHINE_CLIENT_SECRET=machine_client_secret(ctx),
        LAB_OIDC_COOKIE_KEY=run_secret(ctx, "oidc-cookie-key"),
        LAB_OIDC_KEY_FILE=str(ctx.run_dir / "oidc-signing-key.json"),
        LAB_OIDC_REDIRECT_URIS=" ".join(redirect_uris(ctx)),
        LAB_OIDC_USERS=json.dumps(users),
        NODE_ENV="production",  # oidc-provider's development warnings are noise here
    )
    return env


def node() -> str:
    found = shutil.which("node") or shutil.which("nodejs")
    if not found:
        raise FileNotFoundError("node not found: scripts/setup installs Node.js")
    return found


def _prepare(ctx: Context, env: dict[str, str], log: Path) -> None:
    if not (ISSUER_DIR / "node_modules" / "oidc-provider").is_dir():
        raise FileNotFoundError(
            f"{ISSUER_DIR}/node_modules has no oidc-provider: run scripts/setup "
            "(it runs `npm ci` there)"
        )


def _reset(ctx: Context) -> None:
    (ctx.run_dir / "oidc-signing-key.json").unlink(missing_ok=True)


def _argv(ctx: Context) -> list[str]:
    return [node(), str(ISSUER_DIR / "issuer.mjs")]


def _ready(ctx: Context, log: str) -> bool:
    with urllib.request.urlopen(discovery_url(ctx), timeout=2) as answer:
        return json.load(answer).get("issuer") == issuer_url(ctx)


OIDC_SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec(
        name="oidc",
        ports=("oidc",),
        env=_env,
        prepare=_prepare,
        reset=_reset,
        argv=_argv,
        ready=_ready,
        endpoints=lambda ctx: {
            "oidc_issuer": issuer_url(ctx),
            "oidc_jwks": jwks_url(ctx),
            "oidc_token": token_url(ctx),
        },
        ready_timeout_s=30.0,
        optional=True,
    ),
)
