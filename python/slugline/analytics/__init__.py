"""Analytics and click logs of an account's links, with unique-visitor counts."""
