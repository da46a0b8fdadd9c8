"""Logs, request ids and the access log.

`SLUGLINE_LOG_FORMAT=text` keeps the plain `time [LEVEL] logger: message` lines; `json` writes one JSON object per
line (`JsonFormatter`) with the request's context when the record was made while one was being answered: its id,
route template, status (once the response has begun), time so far and account. Nothing secret goes in: no header
is copied, no body, no query string (where OAuth codes and state travel), and the client's address only with
`SLUGLINE_LOG_IPS=true`.

Every HTTP answer carries `X-Request-ID`: the one a trusted proxy sent (`web.proxies` marks the requests that came
through one) when it is a sane token, else 16 random hex digits made here. `RequestLog` wraps every request but the
redirect layer's shortest path, which only puts an id in its headers (see `slugline.redirects.layer`).
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from random import getrandbits
from time import perf_counter
from typing import Any

import orjson

from slugline import compat
from slugline.settings import Settings

REQUEST_ID_HEADER = b"x-request-id"
REQUEST_ID_KEY = "slugline.request_id"  # the request's id (bytes), on its ASGI scope
PROXIED_KEY = "slugline.proxied"  # on the scope of a request that came through a trusted proxy (`web.proxies`)
ROUTE_KEY = "slugline.route"  # the route template of a request the redirect layer answered itself
STATUS_KEY = "slugline.status"  # the response's status once it has begun
STARTED_KEY = "slugline.started"  # perf_counter() when the request arrived
IDENTITY_KEYS = ("slugline.identity", "slugline.visitor")  # `web.identity` (API, MCP) and `dashboard.session`
SANE_ID = re.compile(rb"[A-Za-z0-9._-]{1,128}")
TEXT_FORMAT = "%(asctime)s [%(levelname)s] %(name)s: %(message)s"
ACCESS_LOGGER = "slugline.access"

access_log = logging.getLogger(ACCESS_LOGGER)
_current: ContextVar[dict[str, Any] | None] = ContextVar("slugline_request", default=None)


def request_id(scope: dict[str, Any]) -> bytes:
    """The id of this request: a trusted proxy's `X-Request-ID` (the last one sent) when it is up to 128 characters
    of `A-Z a-z 0-9 . _ -`, else 16 random hex digits. Random without a system call: `random` reseeds itself in each
    forked worker, and an id needs to be unique, not unpredictable."""
    if PROXIED_KEY in scope:
        sent = None
        for name, value in scope["headers"]:
            if name == REQUEST_ID_HEADER:
                sent = value
        if sent is not None and SANE_ID.fullmatch(sent):
            return bytes(sent)
    return b"%016x" % getrandbits(64)


def route_of(scope: dict[str, Any]) -> str | None:
    """The template of the route that answered (`/api/v1/links/{link_id}`), None when none matched. FastAPI keeps a
    route of an included router as it was declared (without the prefix) and the full template beside it, where its
    own telemetry reads it; a mount's template is its prefix and `/{path}`, a plain route's (/mcp) its path."""
    template = scope.get(ROUTE_KEY)
    if template is None:
        template = compat.route_template(scope) or getattr(scope.get("route"), "path_format", None)
    if template is None and "endpoint" in scope:
        root = scope.get("root_path", "")
        template = f"{root}/{{path}}" if root and root != scope.get("app_root_path", "") else scope.get("path")
    return None if template is None else str(template)


def account_of(scope: dict[str, Any]) -> int | None:
    """The signed-in account, once the request's caller has been resolved (API key, session token or cookie)."""
    for key in IDENTITY_KEYS:
        caller = getattr(scope.get(key), "caller", None)
        if caller is not None:
            return int(caller.account_id)
    return None


def request_fields(scope: dict[str, Any], ips: bool) -> dict[str, Any]:
    """What a log line made while answering this request says of it."""
    fields: dict[str, Any] = {}
    rid = scope.get(REQUEST_ID_KEY)
    if rid is not None:
        fields["request_id"] = rid.decode("ascii")
    fields["method"] = scope.get("method")
    fields["route"] = route_of(scope)
    status = scope.get(STATUS_KEY)
    if status is not None:
        fields["status"] = status
    started = scope.get(STARTED_KEY)
    if started is not None:
        fields["duration_ms"] = round((perf_counter() - started) * 1000, 3)
    account = account_of(scope)
    if account is not None:
        fields["account_id"] = account
    if ips and scope.get("client"):
        fields["ip"] = str(scope["client"][0])
    return fields


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (ISO 8601, UTC), level, logger, message, the request's fields when there is
    one, and `exc` with the formatted traceback of an exception. The client's address only with `ips`."""

    def __init__(self, ips: bool = False) -> None:
        super().__init__()
        self.ips = ips

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "request", None)
        if fields is None:
            scope = _current.get()
            if scope is not None:
                fields = request_fields(scope, self.ips)
        if fields:
            entry.update(fields)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(entry, default=str).decode()


def formatter(settings: Settings) -> logging.Formatter:
    return JsonFormatter(settings.log_ips) if settings.log_format == "json" else logging.Formatter(TEXT_FORMAT)


def configure(settings: Settings) -> None:
    """The root logger's one handler (stderr) with the chosen format, at WARNING; the access log at INFO when on.
    Loggers of other packages (Granian's workers, the MCP SDK, ...) propagate to it and share the format. Taking the
    root logger first also keeps the MCP SDK's `logging.basicConfig` (rich tracebacks) from installing itself."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(settings))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    access_log.setLevel(logging.INFO if settings.access_log else logging.WARNING)


def announce(settings: Settings, logger: str, message: str) -> None:
    """A message of `slugline serve` before logging is set up (the embedded database's migration): printed as it is,
    or as a JSON line."""
    if settings.log_format != "json":
        print(message, flush=True)
        return
    record = logging.LogRecord(logger, logging.INFO, __file__, 0, message, None, None)
    print(JsonFormatter().format(record), flush=True)


GRANIAN_ACCESS_NO_IP = '"%(method)s %(path)s %(protocol)s" %(status)d %(dt_ms).3f'


def granian_options(settings: Settings) -> dict[str, Any]:
    """Granian's own log set-up in JSON too (its server messages, and `slugline serve --access-log`, whose lines then
    leave out the client's address unless `SLUGLINE_LOG_IPS=true`); nothing for text, Granian's default."""
    if settings.log_format != "json":
        return {}
    json_formatter = {"()": "slugline.web.logs.JsonFormatter"}
    options: dict[str, Any] = {"log_dictconfig": {"formatters": {"generic": json_formatter, "access": json_formatter}}}
    if not settings.log_ips:
        options["log_access_format"] = GRANIAN_ACCESS_NO_IP
    return options


class RequestLog:
    """Around every request but the redirect layer's shortest path: an id in `X-Request-ID` of whatever answers,
    the request as the context of what is logged meanwhile, and with `access` one line per request on
    `slugline.access` once it is answered."""

    __slots__ = ("access", "ips", "observe")

    def __init__(self, access: bool = False, ips: bool = False) -> None:
        self.access, self.ips = access, ips
        self.observe: Callable[[dict[str, Any]], None] | None = None  # given each answered request (metrics)

    async def __call__(self, app: Any, scope: dict[str, Any], receive: Any, send: Any) -> None:
        rid = scope[REQUEST_ID_KEY] = request_id(scope)
        scope[STARTED_KEY] = perf_counter()
        token = _current.set(scope)

        async def answer(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                scope[STATUS_KEY] = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), (REQUEST_ID_HEADER, rid)]}
            await send(message)

        try:
            await app(scope, receive, answer)
        except Exception:  # a crash: 500 if nothing was sent (cancelled, the client left: status 0, none)
            scope.setdefault(STATUS_KEY, 500)
            raise
        finally:
            if self.access:
                log_access(scope, self.ips)
            if self.observe is not None:
                self.observe(scope)
            _current.reset(token)


def log_access(scope: dict[str, Any], ips: bool) -> None:
    """The access-log line of an answered request: method, path (never the query string), status, duration, id,
    route template and account, and the client's address with `SLUGLINE_LOG_IPS=true`."""
    fields = request_fields(scope, ips)
    fields["path"] = scope.get("path")
    fields.setdefault("status", 0)  # the client left before an answer began
    text = f"{fields['method']} {fields['path']} {fields['status']} {fields.get('duration_ms', 0):.1f} ms"
    text += f" id={fields.get('request_id')}"
    if "account_id" in fields:
        text += f" account={fields['account_id']}"
    if "ip" in fields:
        text += f" ip={fields['ip']}"
    access_log.info(text, extra={"request": fields})
