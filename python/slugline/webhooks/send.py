"""One delivery: a signed POST to the endpoint through the fetcher's address rules.

The URL's host is resolved and every address checked (public only, unless the operator allows private networks),
and the connection goes to a checked address (`fetch.fetcher.PinnedBackend`), so a name cannot be re-pointed at an
internal service between the check and the connection. Redirects are not followed (a 3xx is a failure), the whole
attempt has `webhooks_timeout_seconds`, and at most `MAX_ANSWER` bytes of the answer are read.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Collection, Sequence

import httpcore

from slugline import __version__
from slugline.fetch.fetcher import IPNetwork, PinnedBackend, UnsafeURLError, checked_addresses, parse_url

USER_AGENT = f"Slugline-Webhooks/{__version__}"
MAX_ANSWER = 16 << 10  # bytes of an endpoint's answer read (and dropped): a receiver cannot hold a worker's memory


async def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    allow_networks: Sequence[IPNetwork],
    ports: Collection[int],
    timeout: float,  # noqa: ASYNC109 - the whole attempt's budget, applied with asyncio.timeout
) -> tuple[int | None, str | None]:
    """(HTTP status, None) when the endpoint answered, 2xx or not; (status or None, why) otherwise."""
    try:
        target = parse_url(url)
        async with asyncio.timeout(timeout):
            addrs = await checked_addresses(target, allow_networks, ports)
            sent = [
                ("Host", target.host_header),
                ("User-Agent", USER_AGENT),
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(body))),
                *headers.items(),
            ]
            pool = httpcore.AsyncConnectionPool(network_backend=PinnedBackend(addrs), retries=0)
            u = httpcore.URL(scheme=target.scheme, host=target.host, port=target.port, target=target.path)
            async with pool, pool.stream("POST", u, headers=sent, content=body) as resp:
                read = 0
                async for chunk in resp.aiter_stream():
                    read += len(chunk)
                    if read >= MAX_ANSWER:
                        break
                status = resp.status
    except UnsafeURLError as exc:
        return None, str(exc)
    except TimeoutError:
        return None, f"timed out after {timeout:g} s"
    except socket.gaierror:
        return None, "could not resolve host"
    except (OSError, httpcore.NetworkError, httpcore.TimeoutException, httpcore.ProtocolError) as exc:
        return None, f"could not connect: {type(exc).__name__}"
    if not 200 <= status < 300:
        return status, f"the endpoint answered {status}"
    return status, None
