"""People in a real browser (Playwright driving Debian's Chromium): the product's web server
and the lab's OIDC issuer (oidc-provider, lab/oidc_issuer.py) as processes of a lab stack,
each person logging in through the issuer's own login form; then every page, charts drawn,
without one Content-Security-Policy violation.

alice (lagwatch-admins) is an admin, bob (lagwatch-operators) an operator, carol
(lagwatch-viewers) and dave (in no group) viewers: each sees their role, and only the actions
it allows. A wrong password stays at the issuer. When bob's group is taken away at the issuer,
his next login makes him a viewer. A local account still logs in beside single sign-on.

The pages' data (tests/ui/people_world.py) is written into the stack's database by a process
of its own before the browser opens them.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, Page, expect, sync_playwright

from lab import oidc_issuer
from lab.stack import Stack
from tests.ui.test_browser import CHROMIUM_ARGS, PAGE_MS

pytestmark = pytest.mark.lab


class SsoWorld:
    def __init__(self, stack: Stack, endpoints: dict[str, str]) -> None:
        self.stack = stack
        self.web_url = endpoints["web"].rstrip("/")
        self.ctx = stack._context(stack._read_state())
        self.ids: dict[str, int] = {}

    def password(self, user: str) -> str:
        return oidc_issuer.password(self.ctx, user)

    def manage(self, *args: str) -> str:
        return self.python("manage.py", *args)

    def python(self, *args: str) -> str:
        return subprocess.run(
            [self.ctx.python, *args],
            cwd=self.ctx.repo,
            env=self.stack.django_env(),
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SsoWorld]:
    stack = Stack(tmp_path_factory.mktemp("sso"))
    endpoints = stack.up(["oidc", "web"])
    try:
        world = SsoWorld(stack, endpoints)
        world.ids = json.loads(world.python("-m", "tests.ui.people_world").strip().splitlines()[-1])
        yield world
    finally:
        stack.down()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    expect.set_options(timeout=PAGE_MS)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


# Every CSP violation a page causes, as the page itself sees it (before any of its scripts).
WATCH_CSP = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(
  `${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} at ${e.sourceFile}:${e.lineNumber} ${e.sample}`));
"""


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.add_init_script(WATCH_CSP)
    try:
        yield context.new_page()
    finally:
        context.close()


def sso_login(pg: Page, world: SsoWorld, user: str, password: str | None = None) -> None:
    """From the product's login page through the issuer's form, back to the product."""
    pg.goto(world.web_url + "/")
    expect(pg).to_have_url(re.compile(r"/accounts/login/"))
    pg.click("#sso-login")
    expect(pg).to_have_url(re.compile(r"/interaction/"))  # the issuer's own page
    pg.fill("#login", user)
    pg.fill("#password", password if password is not None else world.password(user))
    pg.click("#sign-in")


def role_shown(pg: Page) -> str:
    return pg.locator(".session [title='Your role']").inner_text().strip()


def can_silence(pg: Page, world: SsoWorld) -> bool:
    pg.goto(world.web_url + "/alerts/silences/")
    expect(pg.locator("h1", has_text="Silences")).to_be_visible()
    return pg.locator("form.card button", has_text="Silence").count() == 1


def can_edit_rules(pg: Page, world: SsoWorld) -> bool:
    pg.goto(world.web_url + "/alerts/rules/")
    return pg.locator("a", has_text="New rule").count() == 1


@pytest.mark.parametrize(
    ("user", "role", "silence", "rules"),
    [
        ("alice", "admin", True, True),
        ("bob", "operator", True, False),
        ("carol", "viewer", False, False),
        ("dave", "viewer", False, False),
    ],
)
def test_each_person_logs_in_through_the_issuer_with_the_role_of_their_groups(
    world: SsoWorld, page: Page, user: str, role: str, silence: bool, rules: bool
) -> None:
    sso_login(page, world, user)
    expect(page.locator("h2", has_text="Groups by status")).to_be_visible()
    expect(page.locator(".session button", has_text=f"Log out {user}")).to_be_visible()
    assert role_shown(page) == role
    assert can_silence(page, world) is silence
    assert can_edit_rules(page, world) is rules
    # What the page hides, the server refuses too.
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    answer = page.request.post(
        world.web_url + "/alerts/silences/",
        form={"cluster_pattern": "*", "group_pattern": "*", "topic_pattern": "*",
              "until": "2099-01-01 00:00", "reason": "test"},
        headers={"X-CSRFToken": csrf, "Referer": world.web_url + "/alerts/silences/"},
        max_redirects=0,
    )  # fmt: skip
    assert (answer.status == 403) is not silence, answer.status


def test_a_wrong_password_stays_at_the_issuer(world: SsoWorld, page: Page) -> None:
    sso_login(page, world, "alice", password="not-her-password")
    expect(page.locator("#error")).to_have_text("Unknown user or wrong password.")
    expect(page).to_have_url(re.compile(r"/interaction/"))
    page.goto(world.web_url + "/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))


def test_losing_the_group_at_the_issuer_loses_the_role_at_the_next_login(
    world: SsoWorld, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = browser.new_context()
    try:
        pg = first.new_page()
        sso_login(pg, world, "bob")
        expect(pg.locator(".session [title='Your role']")).to_have_text("operator")
    finally:
        first.close()
    monkeypatch.setenv(oidc_issuer.GROUPS_VAR, json.dumps({"bob": ["lagwatch-viewers"]}))
    world.stack.stop_service("oidc")
    world.stack.start_service("oidc")
    try:
        second = browser.new_context()
        try:
            pg = second.new_page()
            sso_login(pg, world, "bob")
            expect(pg.locator(".session [title='Your role']")).to_have_text("viewer")
            assert can_silence(pg, world) is False
        finally:
            second.close()
        assert world.manage("lagwatch_user", "bob", "--show").strip().endswith("viewer")
    finally:
        monkeypatch.delenv(oidc_issuer.GROUPS_VAR)
        world.stack.stop_service("oidc")
        world.stack.start_service("oidc")


def test_a_local_account_still_logs_in_beside_single_sign_on(world: SsoWorld, page: Page) -> None:
    out = world.manage("lagwatch_user", "--role", "operator", "local-op", "--create")
    password = out.strip().splitlines()[-1]  # printed once, after the role
    page.goto(world.web_url + "/")
    page.fill("input[name=username]", "local-op")
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    expect(page.locator(".session [title='Your role']")).to_have_text("operator")
    # The issuer's users are not local accounts: no password of theirs works here.
    login = requests.Session()
    form = login.get(world.web_url + "/accounts/login/", timeout=30)
    token: Any = login.cookies.get("csrftoken")
    answer = login.post(
        world.web_url + "/accounts/login/",
        data={"username": "alice", "password": world.password("alice"),
              "csrfmiddlewaretoken": token},
        headers={"Referer": form.url},
        allow_redirects=False,
        timeout=30,
    )  # fmt: skip
    assert answer.status_code == 200 and "didn" in answer.text


PAGES = [
    "/", "/groups/", "/groups/{group}/", "/partitions/{partition}/", "/clusters/prod/",
    "/sources/", "/jobs/", "/producers/", "/alerts/", "/alerts/{alert}/", "/alerts/rules/",
    "/alerts/rules/new/", "/alerts/rules/{rule}/", "/alerts/channels/",
    "/alerts/channels/new/", "/alerts/silences/", "/reports/", "/reports/schedules/",
    "/audit/", "/admin/", "/admin/monitoring/cluster/", "/admin/monitoring/cluster/{cluster}/change/",
    "/admin/auth/user/", "/admin/accounts/auditentry/", "/admin/api/apitoken/add/",
]  # fmt: skip
# Pages whose charts must be drawn (Plotly ran under the policy).
CHARTS = {"/": "#fig-heatmap", "/groups/{group}/": "#fig-lag",
          "/partitions/{partition}/": "#fig-offsets"}  # fmt: skip


def test_every_page_passes_the_content_security_policy(world: SsoWorld, page: Page) -> None:
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if "Content Security" in m.text else None)
    page.goto(world.web_url + "/accounts/login/")
    assert "script-src 'self'" in (page.context.request.get(page.url).headers
                                   .get("content-security-policy", ""))  # fmt: skip
    sso_login(page, world, "alice")
    expect(page.locator("h2", has_text="Groups by status")).to_be_visible()
    # Her account, made or updated by single sign-on, is in the audit log she may read.
    logged = page.request.get(world.web_url + "/api/v1/audit/?object_type=user").json()
    made = [e for e in logged["results"] if e["object"] == "alice" and e["via"] == "sso"]
    assert made and made[-1]["action"] == "created", logged["results"]
    assert made[-1]["client_address"] == "127.0.0.1"
    seen: dict[str, list[str]] = {}
    for template in PAGES:
        url = template.format(**world.ids)
        answer = page.goto(world.web_url + url)
        assert answer is not None and answer.status == 200, (url, answer and answer.status)
        assert answer.headers.get("content-security-policy"), url
        if template in CHARTS:
            expect(page.locator(f"{CHARTS[template]}.js-plotly-plot")).to_be_visible()
            page.locator(CHARTS[template]).hover()  # Plotly's hover labels, styled at run time
        page.wait_for_load_state("networkidle")
        violations = page.evaluate("window.__csp")
        if violations:
            seen[url] = violations
    assert not seen, seen
    assert not console, console
