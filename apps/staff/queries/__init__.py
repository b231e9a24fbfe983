"""
The staff panel's reads, by the pages they serve.

`inspector` (one conversation, with `timeline`, its verified log), `queues` (who waits for a person,
the quarantined turns, the navigation's counts), `admin` (assistants, API keys, personas) and
`words` (how the pages say a run, a call, a wait or a value). Nothing here writes: writes are
in apps/staff/actions.py. The conversation list is apps/staff/listing.py.
"""
