"""Links: the operations every interface calls, auto_meta, counts, public lookups, QR codes, change events."""
