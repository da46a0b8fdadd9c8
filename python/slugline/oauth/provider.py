"""The SDK's authorization-server provider protocol over our storage: the SDK's handlers parse and check the OAuth
requests (PKCE S256, exact redirect URIs, code expiry, client authentication); this answers what they ask.

One provider per request: the issuer and the audience come from the request's base URL (or SLUGLINE_PUBLIC_URL), a
Client ID Metadata Document is fetched on the budget of the request's client address, and a token request's PKCE
verifier is at hand when its code is loaded (`grants.redeem` checks it before anything else happens to the code).
"""

from __future__ import annotations

import uuid

import anyio.to_thread
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from slugline import _core
from slugline.common.clock import as_utc
from slugline.common.errors import RateLimited
from slugline.oauth import clients, documents, grants, metadata, pending, redirects
from slugline.oauth.tokens import (
    ACCESS_PREFIX,
    CODE_PREFIX,
    REFRESH_PREFIX,
    SCOPES,
    Issued,
    mcp_resource,
    same_resource,
)
from slugline.runtime import Runtime

ALL_SCOPES = " ".join(SCOPES)


def client_secret(rt: Runtime, client_id: str) -> str:
    """A registered client's secret, derived from the server secret: nothing secret is stored, and every worker and
    instance derives the same one."""
    return _core.keyed_hash(rt.secret, f"oauth-client-secret:{client_id}")


def could_be_registered(client_id: str) -> bool:
    """Whether `client_id` has the form of the ids registration hands out (the SDK's `str(uuid4())`). Anything else
    is no client of ours, and is not sent to the database: PostgreSQL refuses a string with a NUL in it outright."""
    try:
        return str(uuid.UUID(client_id)) == client_id
    except ValueError:
        return False


def _token(issued: Issued) -> OAuthToken:
    return OAuthToken(
        access_token=issued.access_token,
        token_type="Bearer",
        expires_in=issued.expires_in,
        scope=issued.scope,
        refresh_token=issued.refresh_token,
    )


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    def __init__(self, rt: Runtime, base: str, ip: str, code_verifier: str | None = None) -> None:
        self.rt, self.base, self.ip, self.code_verifier = rt, base.rstrip("/"), ip, code_verifier

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if documents.is_document_url(client_id):
            try:
                client = await documents.resolve(self.rt, client_id, self.ip)
            except (documents.DocumentError, RateLimited):
                return None
            return client.model_copy(update={"scope": client.scope or ALL_SCOPES})
        return await anyio.to_thread.run_sync(self._registered, client_id)

    def _registered(self, client_id: str) -> OAuthClientInformationFull | None:
        if not could_be_registered(client_id):
            return None
        data = clients.load(self.rt, client_id)
        if data is None:
            return None
        # A registration stored before the redirect URI rule keeps only the URIs it accepts: never redirected to.
        data["redirect_uris"] = redirects.accepted(data.get("redirect_uris") or ())
        if data.get("token_endpoint_auth_method") != "none":
            data["client_secret"] = client_secret(self.rt, client_id)
        return OAuthClientInformationFull.model_validate({**data, "client_id": client_id})

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Keep a registration (RateLimited, not caught by the SDK's handler, when the caller's address holds too
        many unused ones: `api.oauth` answers it)."""
        if (problem := metadata.problem(client_info)) is not None:
            raise RegistrationError("invalid_client_metadata", problem)
        if (problem := redirects.problem(client_info.redirect_uris or ())) is not None:
            raise RegistrationError("invalid_redirect_uri", problem)
        if client_info.client_secret is not None:
            client_info.client_secret = client_secret(self.rt, client_info.client_id or "")
        data = client_info.model_dump(mode="json", exclude={"client_id", "client_secret"}, exclude_none=True)
        await anyio.to_thread.run_sync(clients.store, self.rt, client_info.client_id or "", data, self.ip)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        resource = params.resource or mcp_resource(self.base)
        if not same_resource(resource, mcp_resource(self.base)):
            raise AuthorizeError("invalid_target", f"resource must be this server's MCP endpoint, {self.base}/mcp")
        request = pending.Pending(
            client_id=client.client_id or "",
            redirect_uri=str(params.redirect_uri),
            redirect_explicit=params.redirect_uri_provided_explicitly,
            code_challenge=params.code_challenge,
            state=params.state,
            scope=" ".join(params.scopes or []),
            resource=resource,
        )
        return f"{self.base}/oauth/consent?request={pending.sign(self.rt, request)}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        found = await anyio.to_thread.run_sync(
            grants.redeem, self.rt, authorization_code, client.client_id or "", self.code_verifier
        )
        if found is None or found.token.code_challenge is None or found.token.redirect_uri is None:
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=[found.grant.scope],
            expires_at=as_utc(found.token.expires_at).timestamp(),
            client_id=found.grant.client_id,
            code_challenge=found.token.code_challenge,
            redirect_uri=AnyUrl(found.token.redirect_uri),
            redirect_uri_provided_explicitly=found.token.redirect_explicit,
            resource=found.token.resource,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        return await self._exchange(authorization_code.code, CODE_PREFIX, "code", client.client_id)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        args = (self.rt, refresh_token, REFRESH_PREFIX, "refresh", client.client_id)
        found = await anyio.to_thread.run_sync(grants.load, *args)
        if found is None:
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=found.grant.client_id,
            scopes=[found.grant.scope],
            expires_at=int(as_utc(found.token.expires_at).timestamp()),
            resource=found.token.resource,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        return await self._exchange(refresh_token.token, REFRESH_PREFIX, "refresh", client.client_id)

    async def _exchange(self, token: str, prefix: str, kind: str, client_id: str | None) -> OAuthToken:
        def run() -> Issued | None:
            found = grants.load(self.rt, token, prefix, kind, client_id)
            return None if found is None else grants.exchange(self.rt, found)

        issued = await anyio.to_thread.run_sync(run)
        if issued is None:
            what = "authorization code" if kind == "code" else "refresh token"
            raise TokenError("invalid_grant", f"this {what} was already used")
        return _token(issued)

    async def load_access_token(self, token: str) -> AccessToken | None:
        # Used by revocation (RFC 7009) only; calls to /mcp are checked by `tokens.authenticate`.
        found = await anyio.to_thread.run_sync(grants.load, self.rt, token, ACCESS_PREFIX, "access")
        if found is None:
            return None
        expires = int(as_utc(found.token.expires_at).timestamp())
        return AccessToken(token=token, client_id=found.grant.client_id, scopes=[found.grant.scope], expires_at=expires)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await anyio.to_thread.run_sync(grants.revoke, self.rt, token.token)
