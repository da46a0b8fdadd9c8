"""Webhooks: an account's endpoints hear of its links' changes and clicks, signed per Standard Webhooks.

`endpoints` is the CRUD every interface calls; the migration's triggers (0015) and `outbox.clicks_written` put
messages in the outbox inside the transactions that make the changes; `worker.delivering` runs the deliverer in each
worker process, which claims due messages (`outbox`), posts them (`send`) and records the attempt (`log`).
"""
