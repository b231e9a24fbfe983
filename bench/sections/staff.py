"""
`make bench ARGS="--only staff"`: what a staff action costs on a short and on a long conversation.

Take over and Hand back, as the panel sends them (htmx, with the head the page shows: the answer
is what changed after it) and as plain form posts (the answer a redirect), on a conversation of
about 10 and one of 10,000 log entries, after a page load as a staff member makes before acting.
Each action's verification goes on from the last entry this process verified
(`apps.staff.queries.verification`).
"""

from __future__ import annotations

import re

from bench.conversations import bench_assistant, new_conversation, ten_thousand_events
from bench.measure import timed

SHOWN = re.compile(r'name="shown" value="(\d*)"')


def section_staff(report, *, quick: bool) -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from apps.agent import actions
    from apps.conversations.models import Conversation

    assistant = bench_assistant()
    short = new_conversation(assistant)
    for n in range(2):
        actions.start_turn(conversation_id=short, message=f"hello {n}", persona="guest:bench", edge="api",
                           now=_now())
    long = ten_thousand_events(assistant)
    user = get_user_model().objects.create_user("bench-staff", "bench@example.com", "pw", is_staff=True,
                                                first_name="Bench")
    client = Client()
    client.force_login(user)
    n = 5 if quick else 15
    figures = {}
    for label, cid in (("10", short), ("10,000", long)):
        entries = Conversation.objects.get(id=cid).head_seq
        page = client.get(f"/staff/conversations/{cid}/")  # a page load: the whole log verified
        assert page.status_code == 200
        # The head the page shows, which its forms send: an htmx answer moves it on (the socket would too).
        shown = {"head": SHOWN.search(page.content.decode())[1]}
        for how, headers, status in (("form post", {}, 302), ("htmx", {"HX-Request": "true"}, 200)):
            def act(cid=cid, headers=headers, status=status, shown=shown):
                for path in ("take-over", "hand-back"):
                    answer = client.post(f"/staff/conversations/{cid}/{path}", {"shown": shown["head"]}, headers=headers)
                    assert answer.status_code == status, (path, answer.status_code)
                    if status == 200:
                        shown["head"] = SHOWN.search(answer.content.decode())[1]

            act()
            seconds = [s / 2 for s in timed(act, n)]  # two actions a sample
            row = report.latency_row("staff", f"Take over / Hand back, {how}, {entries:,} log entries", seconds,
                                     note=f"{n} × 2 actions, Django test client")
            figures[(label, how)] = row.p50_ms
    for how in ("form post", "htmx"):
        ratio = figures[("10,000", how)] / figures[("10", how)]
        report.notes.append(f"staff action ({how}): {figures[('10', how)]:.1f} ms at 10 entries, "
                            f"{figures[('10,000', how)]:.1f} ms at 10,000 ({ratio:.1f}×)")
    report.figures.update(staff_action_short_ms=figures[("10", "form post")],
                          staff_action_long_ms=figures[("10,000", "form post")],
                          staff_action_htmx_short_ms=figures[("10", "htmx")],
                          staff_action_htmx_long_ms=figures[("10,000", "htmx")])


def _now():
    from django.utils import timezone

    return timezone.now()
