"""Accounts, sessions, API keys, and turning a Bearer token into a Caller."""
