"""Documents for the knowledge tests: a help centre in Markdown, and PDFs made byte by byte."""

from __future__ import annotations

import io

HELP_CENTRE = {
    "Returns": """# Returns

## Returning an item

You can send back any item within 30 days of delivery for a full refund. Clothes that do not fit,
shoes in the wrong size and gifts can all come back, unworn and with their labels on.

Print the prepaid label from your order page, pack the item and drop it at any post office.

## Items that cannot come back

Earrings, swimwear and personalised items cannot be returned for hygiene reasons.
""",
    "Shipping": """# Shipping

## Delivery times

Standard delivery takes 3 to 5 working days; express delivery arrives the next working day when
you order before 2 pm.

## Tracking a parcel

Every parcel has a tracking number in the confirmation email. Follow it on the carrier's page to
see where your parcel is.
""",
    "Payments": """# Payments

## Cards and wallets

We take Visa, Mastercard, American Express, Apple Pay and PayPal. Your card is charged when the
order ships, not when you place it.
""",
}


def pdf(pages: list[str]) -> bytes:
    """A minimal, valid PDF with one line of Helvetica text per page (pypdf reads its text layer)."""
    objects: list[bytes] = []
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font = 3 + 2 * len(pages)
    for i, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode()
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
                       f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode())
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def encrypted_pdf(pages: list[str], password: str = "secret") -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf(pages))))
    writer.encrypt(user_password=password, owner_password=password, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
