"""Every length and range the service enforces, named once: input models, columns, the fetcher and the click
store all read them from here, so a documented bound and an enforced one cannot drift apart."""

from __future__ import annotations

# Links
MAX_URL = 2048
MAX_SLUG = 64
MAX_TITLE = 255
MAX_DESCRIPTION = 1024
MAX_NOTE = 4096
MAX_TAGS = 30
MAX_TAG = 64
MIN_LINK_PASSWORD, MAX_LINK_PASSWORD = 4, 128
MAX_CLICKS_LIMIT = 1_000_000_000_000  # a link's max_clicks; far beyond any campaign, well within BIGINT
MAX_PREVIEW_TITLE = 255  # a social card's title (Open Graph readers cut far shorter ones)
MAX_PREVIEW_DESCRIPTION = 1024

# Accounts
MIN_USERNAME, MAX_USERNAME = 3, 32
MIN_PASSWORD = 8
MAX_PASSWORD = 1024  # argon2 would take any length; this only bounds the work one request can ask for

# OAuth clients' metadata (Dynamic Client Registration, which is stored, and Client ID Metadata Documents): real
# ones are a few hundred bytes, with a name, a redirect URI or two and a handful of short lists.
MAX_CLIENT_METADATA = 16 << 10  # bytes of one client's metadata as JSON
MAX_REDIRECT_URIS = 10
MAX_CLIENT_LIST = 10  # entries of each other list (contacts, grant_types, response_types)

# Queries
MAX_QUERY = 512
MAX_PER = 100
MAX_PAGE = 1_000_000
MAX_SEARCH_LIMIT = 100
MAX_DAYS = 365

# Clicks (stored values are cut to these lengths)
MAX_SOURCE = 255
MAX_REFERRER = 255
MAX_BROWSER = 32
MAX_OS = 32
# What a buffered click keeps of its raw headers, cut when it is recorded: a User-Agent is only classified (real
# ones are far shorter), and of a referrer only the host is stored (scheme, host and port fit well within this).
MAX_CLICK_USER_AGENT = 512
MAX_CLICK_REFERRER = 512

# QR images
MIN_QR_SIZE, MAX_QR_SIZE = 64, 2048
MAX_QR_MARGIN = 16

# Clicks
MAX_PLACE = 100  # characters of a click's region or city (the core cuts them there: `rust_core/geo.rs`)
