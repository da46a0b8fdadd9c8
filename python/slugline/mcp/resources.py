"""MCP resources and prompts, beside the tools: a link as `slugline://links/{link_id}`, a page of the account's links
as `slugline://links{?q,page}`, and two prompts an owner reaches for (a week's performance, tidying links). Each
reads through the same service functions as the tools and REST, as the caller: a public-only key or grant never
sees a private or password link through them either."""

from __future__ import annotations

from typing import Any

import orjson
from mcp.server.mcpserver import Context, MCPServer, UserMessage
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from slugline.analytics import service as analytics
from slugline.common.errors import NotFound, ServiceError
from slugline.links import service as links
from slugline.mcp.context import principal

LINK_URI = "slugline://links/{link_id}"
LINKS_URI = "slugline://links{?q,page}"
JSON = "application/json"


async def _read(ctx: Context, operation: Any) -> str:
    """The service's answer as JSON text; its refusal as the resource error a client shows (not found: -32602)."""
    rt, caller = principal(ctx)
    try:
        answer = await operation(rt, caller)
    except NotFound as exc:
        raise ResourceNotFoundError(exc.message) from None
    except ServiceError as exc:
        raise ResourceError(exc.message) from None
    return orjson.dumps(links.plain(answer), option=orjson.OPT_INDENT_2).decode()


async def link(link_id: str, ctx: Context) -> str:
    return await _read(ctx, lambda rt, caller: links.get_link(rt, caller, link_id))


async def link_page(ctx: Context, q: str = "", page: str = "1") -> str:
    query = {"q": q, "page": page, "per": 100} if q else {"page": page, "per": 100}
    return await _read(ctx, lambda rt, caller: links.list_links(rt, caller, query))


async def weekly_performance(ctx: Context) -> list[UserMessage]:
    figures = await _read(ctx, lambda rt, caller: analytics.get_analytics(rt, caller, {"days": 7}, None))
    return [
        UserMessage(
            "Summarise how my short links did over the last 7 days, in a few short paragraphs a busy person reads in "
            "a minute: total clicks and unique visitors, the trend day by day (name the best and worst day), the "
            "links that drew most clicks, where visitors came from (sources, referrers) and on what (devices, "
            "browsers). Point out anything unusual. For a closer look at one link, call get_analytics with its "
            "link_id. These are the figures from get_analytics (days=7; bots excluded):\n\n" + figures
        )
    ]


async def tidy_links(ctx: Context) -> list[UserMessage]:
    newest = await _read(ctx, lambda rt, caller: links.list_links(rt, caller, {"per": 100}))
    return [
        UserMessage(
            "Help me tidy my short links. 1) Find duplicates: links whose destination_url is the same (ignoring a "
            "trailing slash and utm_ parameters); for each group, suggest which one to keep (most clicks, best slug) "
            "and which to delete. 2) Find dead destinations: call preview_url on each destination (at most 20 at a "
            "time) and list those whose fetch_error says the page is gone or unreachable. 3) Show both lists as "
            "tables with slug, destination and clicks, and ask me before you call delete_link or update_link on "
            "anything: deleting a link also deletes its click history. My newest 100 links are below (list_links; "
            "page through the rest with list_links page=2, 3, … when pagination says there are more):\n\n" + newest
        )
    ]


def register(server: MCPServer) -> None:
    """The resources and prompts, on `server`."""
    server.resource(
        LINK_URI,
        name="link",
        title="A link",
        description="One of the account's links by id (lnk_...), as get_link answers: its short URL, destination, "
        "title, note, hashtags, visibility and clicks. A link the key cannot see is not found.",
        mime_type=JSON,
    )(link)
    server.resource(
        LINKS_URI,
        name="links",
        title="The account's links",
        description="A page of 100 of the account's links, newest first, as list_links answers (with its "
        "pagination); q searches as list_links' q does, page picks the page (default 1).",
        mime_type=JSON,
    )(link_page)
    server.prompt(
        name="weekly_performance",
        title="Summarise my link performance this week",
        description="A short report of the last 7 days' clicks, with the figures from get_analytics included.",
    )(weekly_performance)
    server.prompt(
        name="tidy_links",
        title="Tidy my links",
        description="Find duplicate links and dead destinations, and propose what to delete or fix (asking first).",
    )(tidy_links)
