"""The dashboard's sessions through HTTP in process: the cookie and its flags, CSRF, security headers, the login
limit, signing out, the plan rule, and that dashboard paths pass the redirect layer."""

from __future__ import annotations

from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.app import create_app
from slugline.runtime import Runtime
from slugline.settings import Settings
from tests.dashboard.pages import PASSWORD, csrf_of, new_link, sign_up
from tests.support.helpers import SQLITE_ONLY, ClientFactory


def test_root_sends_visitors_to_sign_in_and_owners_to_their_links(client: TestClient) -> None:
    # 302 as the contract says: these pages only send the visitor on; forms answer 303.
    for path in ("/", "/app/links"):
        res = client.get(path, follow_redirects=False)
        assert (res.status_code, res.headers["location"]) == (302, "/app/login")
    sign_up(client, "bob")
    for path in ("/", "/app/login", "/app/register"):
        res = client.get(path, follow_redirects=False)
        assert (res.status_code, res.headers["location"]) == (302, "/app/")


@SQLITE_ONLY
def test_pages_carry_a_strict_policy_and_the_session_cookie_its_flags(client: TestClient) -> None:
    page = client.get("/app/login")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert page.headers["x-frame-options"] == "DENY"
    assert "<script>" not in page.text  # no inline script: the policy would refuse it
    res = client.post(
        "/app/register",
        data={"username": "cara", "password": PASSWORD, "csrf_token": csrf_of(client, "/app/register")},
        follow_redirects=False,
    )
    cookie = res.headers["set-cookie"].lower()
    assert cookie.startswith("slugline_session=svc_sess_")
    assert "httponly" in cookie
    assert "samesite=lax" in cookie
    assert "secure" not in cookie  # plain http here; served over https it is Secure


@SQLITE_ONLY
def test_the_session_cookie_is_secure_over_https(runtime: Runtime, settings: Settings) -> None:
    with TestClient(create_app(settings, runtime), base_url="https://sl.test") as tc:
        token = csrf_of(tc, "/app/register")
        res = tc.post(
            "/app/register",
            data={"username": "dora", "password": PASSWORD, "csrf_token": token},
            follow_redirects=False,
        )
    assert "secure" in res.headers["set-cookie"].lower()


@SQLITE_ONLY
def test_a_form_without_the_csrf_token_is_refused(owner: TestClient) -> None:
    res = owner.post("/app/links/new", data={"destination_url": "https://example.com/x"})
    assert res.status_code == 403
    forged = owner.post("/app/links/new", data={"destination_url": "https://example.com/x", "csrf_token": "0" * 64})
    assert forged.status_code == 403
    assert owner.post("/app/logout", data={}).status_code == 403
    assert "No links yet" in owner.get("/app/links").text


@SQLITE_ONLY
def test_sign_in_needs_the_token_of_the_visitors_own_form(client: TestClient, runtime: Runtime) -> None:
    accounts.register(runtime, {"username": "erin", "password": PASSWORD})
    res = client.post("/app/login", data={"username": "erin", "password": PASSWORD}, follow_redirects=False)
    assert res.status_code == 403
    res = client.post(
        "/app/login",
        data={"username": "erin", "password": PASSWORD, "csrf_token": csrf_of(client, "/app/login")},
        follow_redirects=False,
    )
    assert res.status_code == 303


@SQLITE_ONLY
def test_sign_in_attempts_share_the_login_limit(make_client: ClientFactory) -> None:
    client, runtime = make_client(rate_limit_login=2)
    accounts.register(runtime, {"username": "fay", "password": PASSWORD})
    wrong = {"username": "fay", "password": "not it at all"}
    statuses = [
        client.post("/app/login", data={**wrong, "csrf_token": csrf_of(client, "/app/login")}).status_code
        for _ in range(3)
    ]
    assert statuses == [401, 401, 429]
    api = client.post("/api/v1/auth/login", json={"username": "fay", "password": PASSWORD})
    assert api.status_code == 429  # the same bucket as the form


@SQLITE_ONLY
def test_signing_out_revokes_the_session_itself(owner: TestClient) -> None:
    token = owner.cookies["slugline_session"]
    me = {"Authorization": f"Bearer {token}"}
    assert owner.get("/api/v1/me", headers=me).status_code == 200
    res = owner.post("/app/logout", data={"csrf_token": csrf_of(owner, "/app/links")}, follow_redirects=False)
    assert res.headers["location"] == "/app/login"
    assert owner.get("/api/v1/me", headers=me).status_code == 401
    owner.cookies.set("slugline_session", token)  # a copy of the cookie kept elsewhere is worth nothing now
    assert owner.get("/app/links", follow_redirects=False).headers["location"] == "/app/login"


def test_a_free_account_sees_the_plan_notice_not_its_links(client: TestClient, runtime: Runtime) -> None:
    sign_up(client, "gil")
    for path in ("/app/links", "/app/analytics", "/app/links/new"):
        page = client.get(path)
        assert page.status_code == 403
        assert "developer plan" in page.text
    settings = client.get("/app/settings")
    assert settings.status_code == 200
    assert "developer plan" in settings.text
    assert "slugline accounts set-plan gil developer" in settings.text


@SQLITE_ONLY
def test_dashboard_paths_pass_the_redirect_layer_and_slugs_still_redirect(owner: TestClient) -> None:
    new_link(owner, destination_url="https://example.com/fast", slug="fast")
    res = owner.get("/fast", follow_redirects=False)
    assert (res.status_code, res.headers["location"]) == (302, "https://example.com/fast")
    assert owner.get("/app", follow_redirects=False).headers["location"] == "/app/"  # a reserved word, not a slug
    assert owner.get("/app/static/dashboard-6.css").headers["content-type"].startswith("text/css")


@SQLITE_ONLY
def test_creating_accounts_shares_the_registration_limit(make_client: ClientFactory) -> None:
    client, _ = make_client(rate_limit_register=2)
    statuses = []
    for name in ("reg-one", "reg-two", "reg-three"):
        client.cookies.clear()  # signed out, as a new visitor from the same address
        form = {"username": name, "password": PASSWORD, "csrf_token": csrf_of(client, "/app/register")}
        statuses.append(client.post("/app/register", data=form, follow_redirects=False).status_code)
    assert statuses == [303, 303, 429]
    assert client.post("/api/v1/auth/register", json={"username": "reg-four", "password": PASSWORD}).status_code == 429


@SQLITE_ONLY
def test_pages_count_against_the_same_buckets_as_the_api(make_client: ClientFactory) -> None:
    """A signed-in page draws from its IP's anonymous bucket and its session's own, as an API call with the session
    token does: the dashboard is no way around the API's limits, and a session does not lift its IP's limit."""
    client, runtime = make_client(rate_limit_anonymous=6)
    sign_up(client, "hal")  # the form and its post: two of the address's six
    accounts.set_plan(runtime, "hal", "developer")
    me = {"Authorization": f"Bearer {client.cookies['slugline_session']}"}
    assert client.get("/api/v1/me", headers=me).status_code == 200
    assert [client.get("/app/links", params={"q": f"zzz{i}"}).status_code for i in range(4)] == [200, 200, 200, 429]
    refused = client.get("/app/links")
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "rate limit exceeded" in refused.text and refused.headers["content-type"].startswith("text/html")
    assert client.get("/api/v1/me", headers=me).status_code == 429  # the session's own bucket is spent too
    client.cookies.clear()
    assert client.get("/api/v1/public/nothing").status_code == 429  # and its address's, without the session
    assert client.get("/app/login").status_code == 429
