"""The MCP tools: each hands the caller and its raw arguments to the same service function as REST."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
import pydantic_core
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations

from slugline import __version__
from slugline.accounts import service as accounts
from slugline.analytics import service as analytics
from slugline.common import outputs
from slugline.common.caller import Caller
from slugline.common.errors import Invalid, ServiceError
from slugline.common.inputs import LinkName
from slugline.common.validation import parse, without_nulls
from slugline.compat import without_sdk_tracing
from slugline.fetch import analyze
from slugline.links import bulk, idempotency, qr
from slugline.links import service as links
from slugline.mcp import inputs, resources
from slugline.mcp.context import principal
from slugline.runtime import Runtime
from slugline.search import service as search
from slugline.web.request import client_ip

Operation = Callable[[Runtime, Caller, dict[str, Any]], Awaitable[dict[str, Any] | CallToolResult]]

INSTRUCTIONS = (
    "Slugline manages this account's short links. Use list_links to find links (q filters, #tag by hashtag) or "
    "search_links for a ranked search with highlights, get_link for one link by id, slug or short URL, create_link "
    "to shorten a URL (create_links for many at once), update_link / delete_link with a link's id, get_qr_code "
    "for its QR image, get_analytics for click figures and get_link_clicks for a link's latest clicks; preview_url "
    "reads a web page's title, description and image before you shorten it. A public-only key (get_me scope "
    "'public') never sees private or password links: they answer 'link not found'."
)
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
FETCH = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True)
CREATE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)
CHANGE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


async def _call(ctx: Context, operation: Operation) -> Any:
    """Run a service operation for the tool's caller with its raw arguments; a ServiceError becomes a tool error
    carrying the REST message.

    Typed Any: the SDK takes either the result the tool's annotation describes or a CallToolResult."""
    rt, caller = principal(ctx)
    params = ctx.request_context.params or {}
    arguments = dict(params.get("arguments") or {})
    try:
        answer = await operation(rt, caller, arguments)
    except ServiceError as exc:
        return CallToolResult(content=[TextContent(type="text", text=exc.message)], is_error=True)
    return answer if isinstance(answer, CallToolResult) else links.plain(answer)


def _as_sent(answer: dict[str, Any]) -> CallToolResult:
    """The answer as its structured content exactly, fields absent from it left absent (the SDK would write an
    output model's defaulted field as null, and REST and MCP would differ)."""
    text = pydantic_core.to_json(answer, indent=2).decode()
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=answer)


def _link_id(arguments: dict[str, Any]) -> str:
    link_id = arguments.pop("id", None)
    if not isinstance(link_id, str) or not link_id:
        raise Invalid("id is required: " + inputs.LINK_ID["description"].lower())
    return link_id


async def _me(rt: Runtime, caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    return accounts.me(caller)


async def get_me(ctx: Context) -> outputs.Me:
    result: outputs.Me = await _call(ctx, _me)  # no I/O once the caller is known: no thread
    return result


async def list_links(ctx: Context) -> outputs.LinkPage:
    result: outputs.LinkPage = await _call(ctx, links.list_links)
    return result


def _once(
    name: str, status: int, create: Callable[[Runtime, Caller, dict[str, Any]], Awaitable[dict[str, Any]]]
) -> Operation:
    """`create` under the arguments' idempotency_key (`links.idempotency`), as REST's Idempotency-Key header."""

    async def run(rt: Runtime, caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
        key = arguments.pop("idempotency_key", None)
        if key is not None and not isinstance(key, str):
            raise Invalid("idempotency_key must be a string")
        _, answer, _ = await idempotency.once(
            rt, caller, key, name, arguments, status, lambda: create(rt, caller, arguments)
        )
        return answer

    return run


async def create_link(ctx: Context) -> outputs.NewLink:
    result: outputs.NewLink = await _call(ctx, _once("create_link", 201, links.create_link))
    return result


async def create_links(ctx: Context) -> dict[str, Any]:
    ip = client_ip(getattr(ctx.request_context.request, "scope", None) or {})  # a bulk call counts per item
    made = _once("create_links", 200, lambda rt, caller, args: bulk.create_links(rt, caller, args, ip))
    result: dict[str, Any] = await _call(ctx, made)
    return result


async def update_link(ctx: Context) -> outputs.Link:
    result: outputs.Link = await _call(
        ctx, lambda rt, caller, args: links.update_link(rt, caller, _link_id(args), args)
    )
    return result


async def delete_link(ctx: Context) -> outputs.Deleted:
    result: outputs.Deleted = await _call(ctx, lambda rt, caller, args: links.delete_link(rt, caller, _link_id(args)))
    return result


async def _analytics(rt: Runtime, caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    """The account's analytics, or with `link_id` (null: not given) that one link's, as its REST route answers."""
    link_id = arguments.pop("link_id", None)
    if link_id is not None and not isinstance(link_id, str):
        raise Invalid("link_id must be a string: " + inputs.LINK_ID["description"].lower())
    return await analytics.get_analytics(rt, caller, arguments, link_id)


async def get_analytics(ctx: Context) -> outputs.Analytics:
    result: outputs.Analytics = await _call(ctx, _analytics)
    return result


async def _link(rt: Runtime, caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    """The link named by exactly one of id, slug or short_url (its last path segment is the slug)."""
    kind, name = parse(LinkName, without_nulls(arguments)).name()
    link_id = name if kind == "id" else await anyio.to_thread.run_sync(links.link_named, rt, caller, name)
    return await links.get_link(rt, caller, link_id)


async def get_link(ctx: Context) -> outputs.Link:
    result: outputs.Link = await _call(ctx, _link)
    return result


async def search_links(ctx: Context) -> outputs.SearchResult:
    result: outputs.SearchResult = await _call(
        ctx, lambda rt, caller, args: search.search_links(rt, caller, without_nulls(args))
    )
    return result


async def _qr_code(rt: Runtime, caller: Caller, arguments: dict[str, Any]) -> CallToolResult:
    """The QR image as image content (base64, PNG or SVG), with a line naming the short URL it opens."""
    link = await links.get_link(rt, caller, _link_id(arguments))  # a hidden link's 404 before any 422
    image, media_type = await anyio.to_thread.run_sync(qr.qr_code, rt, caller, link["id"], arguments)
    line = f"QR code ({media_type}) of {link['short_url']}; scans count as source 'qr'"
    return CallToolResult(
        content=[
            ImageContent(type="image", data=base64.b64encode(image).decode("ascii"), mime_type=media_type),
            TextContent(type="text", text=line),
        ]
    )


async def get_qr_code(ctx: Context) -> CallToolResult:
    result: CallToolResult = await _call(ctx, _qr_code)
    return result


async def get_link_clicks(ctx: Context) -> outputs.ClickPage:
    result: outputs.ClickPage = await _call(
        ctx, lambda rt, caller, args: analytics.list_clicks(rt, caller, _link_id(args), args)
    )
    return result


async def _preview(rt: Runtime, caller: Caller, arguments: dict[str, Any]) -> CallToolResult:
    return _as_sent(await analyze.analyze(rt, without_nulls(arguments)))


async def preview_url(ctx: Context) -> outputs.PageInfo:
    result: outputs.PageInfo = await _call(ctx, _preview)
    return result


NOT_SEEN = (
    " 'link not found' means no link of this account has it, or this key cannot see it (a public-only key: a "
    "private or password link)."
)

TOOLS: list[tuple[Callable[..., Any], str, ToolAnnotations, dict[str, Any], str]] = [
    (
        get_me,
        "Who am I",
        READ,
        inputs.NO_ARGUMENTS,
        "The account behind this API key: username, plan, key scope ('full' sees every link, 'public' only public "
        "and unlisted ones) and created_at. The same JSON as GET /api/v1/me.",
    ),
    (
        list_links,
        "List links",
        READ,
        inputs.LIST_LINKS,
        "List the account's links, newest first unless sort/dir say otherwise, one page at a time (pagination tells "
        "total and pages). Use q to search. A public-only key never sees private or password links.",
    ),
    (
        create_link,
        "Create a short link",
        CREATE,
        inputs.CREATE_LINK,
        "Shorten destination_url. Optional slug (else a random one), title, description, note, hashtags, visibility "
        "(default public; 'password' needs password), auto_meta and idempotency_key (a retry with the same key and "
        "arguments within 24 hours returns the first answer instead of making a second link). "
        "rules sends visitors elsewhere by who they are: an ordered list (at most 20) of {if: {country, device, os, "
        "browser, language: lists of values}, to: URL}; the first rule whose conditions all hold sends the visitor "
        "to its `to`, else destination_url, e.g. [{if: {country: ['FR'], device: ['mobile']}, to: "
        "'https://example.com/fr'}]. variants splits the visitors no rule sends elsewhere between destinations by "
        "weight (an A/B split): 2 to 10 of {to: URL, weight: 1-1000}, each visitor kept on one for the day; "
        "get_analytics with the link's id then counts clicks and visitors per variant. Returns the new link "
        "with its short_url (and, when auto_meta could not read the page, meta_error saying why). A taken slug is an "
        "error; a public-only key cannot create private or password links.",
    ),
    (
        create_links,
        "Create many short links",
        CREATE,
        inputs.CREATE_LINKS,
        f"Create up to {bulk.MAX_ITEMS} links in one call: `links` holds create_link's arguments for each (without "
        "auto_meta). Returns results in the same order, each {index, status, link} (201) or {index, status, error} "
        "(the error create_link would give), and the succeeded and failed counts. With atomic: true, all are made or "
        "none: the first failure is the tool's error, naming its index. idempotency_key: a retry with the same key and "
        "arguments within 24 hours returns the first answer. Counts as one request per link against the rate limit.",
    ),
    (
        update_link,
        "Update a link",
        CHANGE,
        inputs.UPDATE_LINK,
        "Change a link by id." + inputs.UPDATE_NOTE + " A new slug changes the short URL and the old one stops "
        "working. rules replaces the link's redirect rules and variants its weighted variants (null or [] clears "
        "them), as in create_link. Returns the "
        "updated link; 'link not found' means this key cannot see a link with that id.",
    ),
    (
        delete_link,
        "Delete a link",
        CHANGE,
        inputs.DELETE_LINK,
        "Delete a link by id, permanently, with its click history; its short URL stops working at once. Cannot be "
        "undone. Returns {deleted: true, id}.",
    ),
    (
        get_analytics,
        "Click analytics",
        READ,
        inputs.GET_ANALYTICS,
        "Clicks on the account's links, or with link_id on one link, bots excluded: total clicks, unique visitors "
        "(distinct per UTC day, summed), a zero-filled series by interval (hour, day, week or month), devices, "
        "browsers, operating systems, sources, referrers, countries (ISO codes) and cities, and the 10 most clicked "
        "links; with link_id, a link with variants (A/B split) also gets each variant's clicks and unique visitors. "
        "The period is the last "
        "`days` days (default 30) or from-to (ISO dates, UTC, both included, at most 365 days); interval hour needs "
        "7 days or fewer. source, device, browser, os, referrer, country (e.g. FR), city and variant (an index from "
        "0) filter every figure (all must hold, any case). A "
        "public-only key's figures leave out private and password links, whose link_id answers 'link not found'.",
    ),
    (
        get_link,
        "Get a link",
        READ,
        inputs.GET_LINK,
        "One link, named by exactly one of id, slug or short_url (the short URL's last path segment is the slug): "
        "its id, slug, short_url, destination_url, title, description, note, hashtags, visibility, clicks and "
        "timestamps. The same JSON as GET /api/v1/links/{id}." + NOT_SEEN,
    ),
    (
        search_links,
        "Search links",
        READ,
        inputs.SEARCH_LINKS,
        "Ranked search over the account's links: each term matches as a prefix, terms of 5 or more characters "
        "with one typo, in slug, title, destination_url, description, note and hashtags. Returns the total and "
        "up to `limit` hits, best first, each with the link, its score and highlights (field name to its text "
        "with <mark>...</mark> around the matches). The same JSON as GET /api/v1/search. A public-only key "
        "never finds private or password links.",
    ),
    (
        get_qr_code,
        "QR code of a link",
        READ,
        inputs.GET_QR_CODE,
        "The QR code of a link's short URL (with ?src=qr, so scans count as source 'qr') as an image: PNG "
        "(image/png, base64) or SVG (image/svg+xml), `size` pixels square with a quiet zone of `margin` modules; "
        "then one line of text naming the short URL. The same image as GET /api/v1/links/{id}/qr." + NOT_SEEN,
    ),
    (
        get_link_clicks,
        "A link's latest clicks",
        READ,
        inputs.GET_LINK_CLICKS,
        "One link's clicks, newest first, a page at a time (pagination tells total and pages): each click's time "
        "(UTC), device ('bot' for bots, which are included here), browser, os, source and referrer host. The same "
        "JSON as GET /api/v1/links/{id}/clicks. For totals and breakdowns use get_analytics." + NOT_SEEN,
    ),
    (
        preview_url,
        "Preview a web page",
        FETCH,
        inputs.PREVIEW_URL,
        "Fetch a public http(s) page, as a browser would, and say what it tells about itself: final_url after "
        "redirects (listed in redirects), status, content_type, title, description, image, favicon and "
        "site_name. A page that could not be fetched answers reachable: false with fetch_error saying why; a URL "
        "that points at a private or local address is refused. Useful before create_link, to fill in a title. "
        "The same JSON as GET /api/v1/analyze.",
    ),
]


def _tool(fn: Callable[..., Any], title: str, annotations: ToolAnnotations, schema: dict[str, Any], doc: str) -> Tool:
    structured = fn is not get_qr_code  # an image is content for the model, not data with a schema
    tool = Tool.from_function(fn, title=title, description=doc, annotations=annotations, structured_output=structured)
    # The functions take no parameters of their own (they pass the raw arguments on), so publish the real schema.
    return tool.model_copy(update={"parameters": schema})


def build_server(tracing: bool = False) -> MCPServer:
    """The MCP server with its tools. `tracing`: keep the SDK's OpenTelemetry span per message, as when a tracer
    provider is set up (see `slugline.app.telemetry`); without one the span is a no-op that still cost ~7% of a call.
    """
    # log_level: the SDK calls logging.basicConfig with it and a rich handler, which only takes effect where nothing
    # configured logging first (slugline.asgi does, with plain tracebacks); WARNING is Python's own default level.
    server = MCPServer(
        "slugline",
        title="Slugline",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=[_tool(*spec) for spec in TOOLS],
    )
    resources.register(server)
    if not tracing:  # the SDK's documented opt-out: drop it from the middleware list
        server.middleware[:] = without_sdk_tracing(server.middleware)
    return server
