"""
Hashing and signing of log entries.

Pure: no Django. `hash = sha256(prev_hash || canonical(entry))` where canonical is RFC 8785 JSON of
the entry's identity and content; the signature is Ed25519 over the hash.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from nacl.bindings import crypto_sign, crypto_sign_open, crypto_sign_seed_keypair
from nacl.exceptions import BadSignatureError

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


@functools.lru_cache(maxsize=4096)  # a log repeats its partition, kinds, actors, turns and times
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
    # The same key in libsodium's form (seed, then public key). Every entry is signed as it is
    # written, and libsodium signs in two thirds of OpenSSL's time here; Ed25519 signatures are
    # deterministic, so the bytes are the same.
    secret: bytes = field(repr=False)

    def sign(self, digest_hex: str) -> str:
        return base64.b64encode(crypto_sign(bytes.fromhex(digest_hex), self.secret)[:64]).decode("ascii")

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
    return SigningKey(key_id=key_id_for(private.public_key()), private=private, secret=crypto_sign_seed_keypair(raw)[1])


def public_key_from_b64(public_b64: str) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(base64.b64decode(public_b64.strip(), validate=True))


def _signature_bytes(signature_b64: str) -> bytes | None:
    """The 64 bytes of a signature written in standard base64; None for any other text."""
    try:
        raw = base64.b64decode(signature_b64, validate=True)
    except ValueError:
        return None
    # b64decode ignores the unused low bits of the last character: without this check a
    # flipped bit there would leave the signature "valid" though its stored text changed.
    if len(raw) != 64 or base64.b64encode(raw).decode("ascii") != signature_b64:
        return None
    return raw


def _opens(signed: bytes, public: bytes) -> bool:
    """Check the Ed25519 signature that starts `signed` (64 bytes, then the message) with libsodium."""
    try:
        crypto_sign_open(signed, public)
    except BadSignatureError:
        return False
    return True


def signature_valid(public: Ed25519PublicKey, digest_hex: str, signature_b64: str) -> bool:
    """Check one signature; any malformed input counts as invalid."""
    raw = _signature_bytes(signature_b64)
    try:
        digest = bytes.fromhex(digest_hex)
    except ValueError:
        return False
    return raw is not None and _opens(raw + digest, public.public_bytes_raw())


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
    # The payload as stored, when it is stored as text: the hash covers these very characters.
    payload_text: str | None = None


# A StoredEntry's fields as a plain tuple, in the same order: verify reads thousands of entries
# and needs no object for each.
Row = tuple[str, int, str, str, Any, str, str, str, str, str, str, str | None]
as_row = attrgetter(*(f.name for f in fields(StoredEntry)))
SEQ, PREV_HASH, HASH = 1, 7, 8


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    checked: int
    first_bad_seq: int | None = None
    problem: str = ""
    # When ok: the hash of the last entry checked, where a later verification may go on from (not
    # part of the verdict: two verifications that agree are equal whichever entry they ended at).
    last_hash: str = field(default="", compare=False)


def _mismatch(payload: Any, text: str | None) -> str:
    """Name what differs in an entry whose hash does not match: its payload's spelling, or its content."""
    if text is not None:
        try:
            if rfc8785.dumps(payload).decode("utf-8") != text:
                return "payload is not stored in its canonical form"
        except ValueError:
            return "payload is not stored in its canonical form"
    return "hash does not match the content"


def _check(row: Row, prev_hash: str, public_keys: dict[str, bytes]) -> tuple[str, bytes, bytes]:
    """
    Check everything of one entry but the Ed25519 equation of its signature.

    Returns (problem, signed message, raw public key); the problem is "" when the entry holds so
    far, and then its signature is checked with `_opens(signed message, public key)`.
    """
    partition, seq, kind, turn_id, payload, actor, created_at, stored_prev, stored_hash, signature_b64, key_id, text = row
    if stored_prev != prev_hash:
        return "prev_hash does not link to the entry before", b"", b""
    if not isinstance(payload, dict):
        return "payload is not a JSON object", b"", b""
    try:
        # Hashing the stored text itself, not a re-serialisation of what it parses to: a payload
        # re-spelled by one byte no longer matches, so the text needs no separate canonical check.
        body = canonical_from_text(
            partition=partition, seq=seq, kind=kind, turn_id=turn_id, actor=actor, created_at=created_at,
            payload_text=rfc8785.dumps(payload).decode("utf-8") if text is None else text,
        )
    except ValueError:
        return _mismatch(payload, text), b"", b""
    digest = hashlib.sha256(prev_hash.encode("ascii") + body)
    if digest.hexdigest() != stored_hash:
        return _mismatch(payload, text), b"", b""
    public = public_keys.get(key_id)
    if public is None:
        return f"unknown key id {key_id!r}", b"", b""
    signature = _signature_bytes(signature_b64)
    if signature is None:
        return "signature does not verify", b"", b""
    return "", signature + digest.digest(), public


def _raw(public_keys: dict[str, Ed25519PublicKey]) -> dict[str, bytes]:
    """The keys as libsodium takes them: 32 raw bytes each."""
    return {key_id: public.public_bytes_raw() for key_id, public in public_keys.items()}


def entry_problem(entry: StoredEntry, prev_hash: str, public_keys: dict[str, Ed25519PublicKey]) -> str:
    """Say why one entry is not authentic when chained onto `prev_hash`; "" when it is."""
    problem, signed, public = _check(as_row(entry), prev_hash, _raw(public_keys))
    if problem:
        return problem
    return "" if _opens(signed, public) else "signature does not verify"


_CHUNK = 500  # signatures per task: ~30 ms of work, small enough to share out evenly
_THREADS = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _first_forged(signed: list[tuple[bytes, bytes]]) -> int | None:
    """
    Return the index of the first (signed message, raw public key) whose signature fails; None when all verify.

    libsodium runs without the GIL, so chunks of the list verify on several threads at once.
    """
    found = [len(signed)]  # the lowest failing index seen so far: later chunks need no checking

    def first_in(start: int) -> int | None:
        if start > found[0]:
            return None
        for i in range(start, min(start + _CHUNK, len(signed))):
            if not _opens(*signed[i]):
                found[0] = min(found[0], i)
                return i
        return None

    starts = range(0, len(signed), _CHUNK)
    if _THREADS == 1 or len(starts) <= 1:
        return next((i for i in map(first_in, starts) if i is not None), None)
    with ThreadPoolExecutor(_THREADS, thread_name_prefix="verify") as pool:
        return next((i for i in pool.map(first_in, starts) if i is not None), None)


def verify_rows(
    rows: list[Row], public_keys: dict[str, Ed25519PublicKey], *, after: tuple[int, str] = (0, GENESIS)
) -> VerifyResult:
    """
    Recompute every hash and signature of a partition given as rows (see `Row`), in stored order.

    Detects a changed byte (hash or signature mismatch), a deleted entry (a gap in `seq` or a
    broken `prev_hash` link) and reordering (`seq` out of order). Names the first entry that fails.
    `after` (seq, hash): the rows go on from that entry, verified before; `checked` counts it and
    every entry before it.
    """
    keys = _raw(public_keys)
    start, prev = after
    signed, failure = [], None
    for expected_seq, row in enumerate(rows, start=start + 1):
        seq = row[SEQ]
        if seq != expected_seq:
            failure = VerifyResult(False, expected_seq - 1, seq, f"expected seq {expected_seq}, found {seq}")
            break
        problem, message, public = _check(row, prev, keys)
        if problem:
            failure = VerifyResult(False, expected_seq - 1, seq, problem)
            break
        signed.append((message, public))
        prev = row[HASH]
    # Signatures are checked after the cheap checks, but only those of the entries before the
    # first failure, so a bad signature before it is still the one reported.
    forged = _first_forged(signed)
    if forged is not None:
        return VerifyResult(False, start + forged, start + forged + 1, "signature does not verify")
    return failure or VerifyResult(True, start + len(rows), last_hash=prev)


def verify_chain(entries: list[StoredEntry], public_keys: dict[str, Ed25519PublicKey]) -> VerifyResult:
    """Recompute every hash and signature of a partition, in stored order (see `verify_rows`)."""
    return verify_rows([as_row(entry) for entry in entries], public_keys)
