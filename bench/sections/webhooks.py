"""
webhooks: core turns/s with one subscribed webhook endpoint against none, in one run.
"""

from __future__ import annotations

from bench.conversations import bench_assistant, waypoint_turns
from bench.report import Report


def section_webhooks(report: Report, *, quick: bool) -> None:
    """
    Core turns/s with one subscribed webhook endpoint against none, in one run.

    The endpoint takes every type, so each turn writes its outbox rows (the INSERT … SELECT riding
    in the append's round trip); nothing is sent here: delivery is off the turn's path anyway.
    """
    from apps.webhooks.models import WebhookDelivery, WebhookEndpoint

    assistant = bench_assistant()
    turns = 40 if quick else 120
    rates = {}
    for label in ("none", "one", "none again", "one again"):
        subscribed = label.startswith("one")
        if subscribed:
            endpoint = WebhookEndpoint.objects.create(url="https://hooks.example.com/waypoint", secret="whsec_" + "A" * 44)
        before = WebhookDelivery.objects.count()
        measured = waypoint_turns(assistant, turns=turns, concurrency=1)
        written = WebhookDelivery.objects.count() - before
        if subscribed:
            endpoint.delete()
        what = f"Waypoint turn, sequential, {'one subscribed webhook endpoint' if subscribed else 'no webhook endpoint'}"
        row = report.latency_row("webhooks", what + (" (again)" if "again" in label else ""), measured["latencies"],
                                 wall=measured["wall"], note=f"{written} outbox rows written")
        rates[label] = row.rate
    none, one = (rates["none"] + rates["none again"]) / 2, (rates["one"] + rates["one again"]) / 2
    report.notes.append(f"webhooks: {one:.1f} turns/s with one subscribed endpoint vs {none:.1f} with none ({one / none:.0%})")
    print(report.notes[-1])

