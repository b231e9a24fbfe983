"""
The demo shop's help centre, which `make run` loads (`manage.py load_demo`) and the demo assistant
answers from: a handful of short articles, as a small shop would write them.
"""

from __future__ import annotations

from datetime import datetime

from apps.knowledge import actions
from apps.knowledge.models import Source

BASE_URL = "https://help.example.com"

ARTICLES = {
    "Returns": """# Returns

## Sending something back
You can send back any item within 30 days of delivery. Pack it in its original box if you still
have it, print the free return label from your order page, and drop the parcel at any post office.

## Items we cannot take back
Gift cards, personalised items and opened earbuds cannot be returned, for hygiene and because they
were made for you.
""",
    "Refunds": """# Refunds

## When your money comes back
Once your return reaches our warehouse we check it within 2 working days and refund the original
payment method. Card refunds show up within 5 to 10 working days, depending on your bank.

## Partial refunds
An item that comes back damaged or incomplete may get a partial refund; we email you a photo and
the amount before we refund it.
""",
    "Shipping": """# Shipping

## Delivery times
Standard delivery takes 2 to 4 working days, express delivery 1 working day when you order before
14:00. You get a tracking link by email as soon as your parcel leaves the warehouse.

## Where we deliver
We deliver to the UK and the EU. Deliveries to the Channel Islands take two extra days.
""",
    "Exchanges": """# Exchanges

## A different size or colour
To swap an item for another size or colour, return it as usual and place a new order: that way the
new one ships at once instead of waiting for the return to arrive.
""",
    "Warranty": """# Warranty

## What the warranty covers
Every item has a two-year warranty against faults in materials and workmanship. Wear and tear,
accidents and repairs by someone else are not covered. Keep your order number: it is your receipt.
""",
}


def load_help_centre(now: datetime) -> list[Source]:
    """
    Add the help centre's articles, or bring them up to date: an article already there with the
    same text is left as it is (its content hash makes the upload a no-op), so loading it again
    adds nothing. They are known by their demo address, never by title: a team's own "Returns" is
    not the demo's.
    """
    out = []
    for title, text in ARTICLES.items():
        url = f"{BASE_URL}/{title.lower()}"
        upload = actions.check_upload(title=title, content=text.encode(), format="markdown", url=url)
        existing = Source.objects.filter(url=url, deleted_at__isnull=True).order_by("created_at").first()
        if existing is None:
            out.append(actions.add_source(upload=upload, now=now).source)
        else:
            out.append(actions.replace_source(source_id=str(existing.id), upload=upload, now=now).source)
    return out
