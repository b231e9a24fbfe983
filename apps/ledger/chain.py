"""
Hashing and signing of log entries.

Pure: no Django. `hash = sha256(prev_hash || canonical(entry))` where canonical is RFC 8785 JSON of
the entry's identity and content; the signature is Ed25519 over the hash.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

GENESIS = "0" * 64

# Printable ASCII without '"' and '\': RFC 8785 spells such a string as itself between quotes.
_PLAIN = re.compile(r'[ !#-\[\]-~]*')
_SAFE_INTEGER = 2**53 - 1


def canonical(
    *, partition: str, seq: int, kind: str, turn_id: str, payload: dict, actor: str, created_at: str
) -> bytes:
    """Return the canonical bytes that an entry's hash covers."""
    return rfc8785.dumps(
        {
            "partition": partition,
            "seq": seq,
            "kind": kind,
            "turn_id": turn_id,
            "payload": payload,
            "actor": actor,
            "created_at": created_at,
        }
    )


def _string(value: str) -> str:
    """RFC 8785 text of a string, without the serialiser for the common plain ones."""
    if isinstance(value, str) and _PLAIN.fullmatch(value):
        return f'"{value}"'
    return rfc8785.dumps(value).decode("utf-8")


def canonical_from_text(
    *, partition: str, seq: int, kind: str, turn_id: str, payload_text: str, actor: str, created_at: str
) -> bytes:
    """
    Return the canonical bytes of an entry whose payload is given as its RFC 8785 text.

    Byte for byte `canonical(...)` when `payload_text` is `rfc8785.dumps(payload)`, without
    serialising the payload again. The text goes in as it is: any other text gives other bytes.
    :raises ValueError: a field cannot be written as RFC 8785 JSON (e.g. a lone surrogate)
    """
    number = str(seq) if type(seq) is int and -_SAFE_INTEGER <= seq <= _SAFE_INTEGER else rfc8785.dumps(seq).decode("utf-8")
    # RFC 8785 orders members by the UTF-16 code units of their keys; these keys are ASCII, so
    # this is their order.
    return (
        f'{{"actor":{_string(actor)},"created_at":{_string(created_at)},"kind":{_string(kind)},'
        f'"partition":{_string(partition)},"payload":{payload_text},"seq":{number},"turn_id":{_string(turn_id)}}}'
    ).encode()


def entry_hash(prev_hash: str, body: bytes) -> str:
    """Chain one entry onto the previous hash."""
    return hashlib.sha256(prev_hash.encode("ascii") + body).hexdigest()


@dataclass(frozen=True)
class SigningKey:
    key_id: str
    private: Ed25519PrivateKey

    def sign(self, digest_hex: str) -> str:
        return base64.b64encode(self.private.sign(bytes.fromhex(digest_hex))).decode("ascii")

    @property
    def public(self) -> Ed25519PublicKey:
        return self.private.public_key()


def key_id_for(public: Ed25519PublicKey) -> str:
    """Name a public key by the first 16 hex digits of its SHA-256, so keys can rotate."""
    raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def signing_key_from_seed(seed_b64: str) -> SigningKey:
    """
    Build a signing key from a base64 32-byte Ed25519 seed.

    :raises ValueError: the seed is not 32 bytes of base64
    """
    raw = base64.b64decode(seed_b64.strip(), validate=True)
    if len(raw) != 32:
        raise ValueError("an Ed25519 seed is 32 bytes")
    private = Ed25519PrivateKey.from_private_bytes(raw)
    return SigningKey(key_id=key_id_for(private.public_key()), private=private)


def public_key_from_b64(public_b64: str) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(base64.b64decode(public_b64.strip(), validate=True))


def signature_valid(public: Ed25519PublicKey, digest_hex: str, signature_b64: str) -> bool:
    """Check one signature; any malformed input counts as invalid."""
    try:
        raw = base64.b64decode(signature_b64, validate=True)
        # b64decode ignores the unused low bits of the last character: without this check a
        # flipped bit there would leave the signature "valid" though its stored text changed.
        if base64.b64encode(raw).decode("ascii") != signature_b64:
            return False
        public.verify(raw, bytes.fromhex(digest_hex))
    except (InvalidSignature, ValueError):
        return False
    return True


@dataclass(frozen=True)
class StoredEntry:
    partition: str
    seq: int
    kind: str
    turn_id: str
    payload: Any
    actor: str
    created_at: str
    prev_hash: str
    hash: str
    signature: str
    key_id: str
    # The payload as stored, when it is stored as text: it must be the canonical form itself.
    payload_text: str | None = None


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    checked: int
    first_bad_seq: int | None = None
    problem: str = ""


def entry_problem(entry: StoredEntry, prev_hash: str, public_keys: dict[str, Ed25519PublicKey]) -> str:
    """Say why one entry is not authentic when chained onto `prev_hash`; "" when it is."""
    if entry.prev_hash != prev_hash:
        return "prev_hash does not link to the entry before"
    if not isinstance(entry.payload, dict):
        return "payload is not a JSON object"
    if entry.payload_text is not None and rfc8785.dumps(entry.payload).decode("utf-8") != entry.payload_text:
        return "payload is not stored in its canonical form"
    body = canonical(
        partition=entry.partition,
        seq=entry.seq,
        kind=entry.kind,
        turn_id=entry.turn_id,
        payload=entry.payload,
        actor=entry.actor,
        created_at=entry.created_at,
    )
    if entry_hash(prev_hash, body) != entry.hash:
        return "hash does not match the content"
    public = public_keys.get(entry.key_id)
    if public is None:
        return f"unknown key id {entry.key_id!r}"
    if not signature_valid(public, entry.hash, entry.signature):
        return "signature does not verify"
    return ""


def verify_chain(entries: list[StoredEntry], public_keys: dict[str, Ed25519PublicKey]) -> VerifyResult:
    """
    Recompute every hash and signature of a partition, in stored order.

    Detects a changed byte (hash or signature mismatch), a deleted entry (a gap in `seq` or a
    broken `prev_hash` link) and reordering (`seq` out of order).
    """
    prev = GENESIS
    for expected_seq, entry in enumerate(entries, start=1):
        if entry.seq != expected_seq:
            return VerifyResult(False, expected_seq - 1, entry.seq, f"expected seq {expected_seq}, found {entry.seq}")
        problem = entry_problem(entry, prev, public_keys)
        if problem:
            return VerifyResult(False, expected_seq - 1, entry.seq, problem)
        prev = entry.hash
    return VerifyResult(True, len(entries))
