"""The operator's commands on an account's webhook endpoints: `slugline webhooks list|attempts|enable|disable`.

What an operator needs when an account's receiver misbehaves: which endpoints it has and whether they are on, the
delivery log of one, and turning one off (its messages wait) or back on (they are delivered). Each calls the service
function the REST API and the dashboard call, as the account's owner (`accounts.operator`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slugline.runtime import Runtime

EXAMPLES = """examples:
  slugline webhooks list --account ada
  slugline webhooks attempts --account ada whe_3c9a1f2e7b6d5a40
  slugline webhooks disable --account ada whe_3c9a1f2e7b6d5a40
  slugline webhooks enable --account ada whe_3c9a1f2e7b6d5a40   (what waited is delivered)"""
COLUMNS = ["id", "url", "events", "enabled", "disabled_reason", "failing_since"]
ATTEMPT_COLUMNS = ["attempted_at", "type", "message_id", "status", "error", "duration_ms"]


def webhooks_list(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.accounts import service as accounts
    from slugline.webhooks import endpoints

    return endpoints.list_endpoints(rt, accounts.operator(rt, args.account))["data"]


def webhooks_attempts(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.accounts import service as accounts
    from slugline.webhooks import endpoints

    return endpoints.list_attempts(rt, accounts.operator(rt, args.account), args.id)["data"]


def _switch(on: bool) -> Callable[[Runtime, argparse.Namespace], Any]:
    def run(rt: Runtime, args: argparse.Namespace) -> Any:
        from slugline.accounts import service as accounts
        from slugline.webhooks import endpoints

        return endpoints.update_endpoint(rt, accounts.operator(rt, args.account), args.id, {"enabled": on})

    return run


def add(group: Any, command: Callable[..., Any], table: Callable[[Any, list[str]], None], fields: Any) -> None:
    """The commands on `group` (made by `admin.add_commands` with its `command` helper)."""
    made = command(group, "list", webhooks_list, lambda rows: table(rows, COLUMNS), "list an account's endpoints")
    made.add_argument("--account", required=True, metavar="NAME")
    made = command(
        group,
        "attempts",
        webhooks_attempts,
        lambda rows: table(rows, ATTEMPT_COLUMNS),
        "an endpoint's last 100 delivery attempts, newest first",
    )
    made.add_argument("--account", required=True, metavar="NAME")
    made.add_argument("id", metavar="ENDPOINT_ID")
    for name, on, help in (
        ("enable", True, "turn an endpoint back on: what waited is delivered"),
        ("disable", False, "turn an endpoint off: its messages wait, new events are not recorded for it"),
    ):
        made = command(group, name, _switch(on), lambda hook: fields(hook, COLUMNS), help)
        made.add_argument("--account", required=True, metavar="NAME")
        made.add_argument("id", metavar="ENDPOINT_ID")
