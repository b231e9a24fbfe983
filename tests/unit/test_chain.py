import base64
import dataclasses
import random

import pytest
import rfc8785

from apps.ledger import chain


def _entries(n: int, key: chain.SigningKey) -> list[chain.StoredEntry]:
    out, prev = [], chain.GENESIS
    for seq in range(1, n + 1):
        payload = {"text": f"message {seq}", "n": seq}
        body = chain.canonical(partition="conv-x", seq=seq, kind="model_round", turn_id="turn_1", payload=payload,
                               actor="agent", created_at="2026-11-30T12:00:00.000000+00:00")
        digest = chain.entry_hash(prev, body)
        out.append(chain.StoredEntry("conv-x", seq, "model_round", "turn_1", payload, "agent",
                                     "2026-11-30T12:00:00.000000+00:00", prev, digest, key.sign(digest), key.key_id))
        prev = digest
    return out


KEY = chain.signing_key_from_seed(base64.b64encode(b"k" * 32).decode())
KEYS = {KEY.key_id: KEY.public}


class TestSigning:
    @pytest.mark.parametrize("seed", [b"k" * 32, bytes(range(32)), bytes(32)])
    def test_signs_as_the_ed25519_of_openssl_does_and_verifies_with_the_public_key(self, seed):
        key = chain.signing_key_from_seed(base64.b64encode(seed).decode())
        for n in range(20):
            digest = chain.entry_hash(chain.GENESIS, f"entry {n}".encode())
            signature = key.sign(digest)
            assert base64.b64decode(signature) == key.private.sign(bytes.fromhex(digest))
            assert chain.signature_valid(key.public, digest, signature)


class TestVerifyChain:
    def test_accepts_an_untouched_chain(self):
        entries = _entries(5, KEY)

        result = chain.verify_chain(entries, KEYS)

        assert result.ok and result.checked == 5

    def test_names_the_entry_whose_payload_changed(self):
        entries = _entries(5, KEY)
        entries[2] = dataclasses.replace(entries[2], payload={"text": "message 3!", "n": 3})

        result = chain.verify_chain(entries, KEYS)

        assert not result.ok and result.first_bad_seq == 3

    def test_detects_a_flipped_signature_byte(self):
        entries = _entries(3, KEY)
        sig = bytearray(base64.b64decode(entries[1].signature))
        sig[0] ^= 1
        entries[1] = dataclasses.replace(entries[1], signature=base64.b64encode(bytes(sig)).decode())

        result = chain.verify_chain(entries, KEYS)

        assert not result.ok and result.first_bad_seq == 2

    def test_detects_a_deleted_entry(self):
        entries = _entries(4, KEY)
        del entries[1]

        result = chain.verify_chain(entries, KEYS)

        assert not result.ok and result.first_bad_seq == 3

    def test_detects_reordering(self):
        entries = _entries(4, KEY)
        entries[1], entries[2] = entries[2], entries[1]

        assert not chain.verify_chain(entries, KEYS).ok

    def test_refuses_a_signature_from_an_unknown_key(self):
        other = chain.signing_key_from_seed(base64.b64encode(b"o" * 32).decode())
        entries = _entries(2, other)

        result = chain.verify_chain(entries, KEYS)

        assert not result.ok and "unknown key" in result.problem

    def test_detects_a_flipped_unused_bit_in_the_signatures_last_character(self):
        entries = _entries(2, KEY)
        sig = entries[1].signature  # 64 bytes: 86 characters and "==", the 86th carrying 4 unused bits
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        flipped = sig[:85] + alphabet[alphabet.index(sig[85]) ^ 1] + sig[86:]
        entries[1] = dataclasses.replace(entries[1], signature=flipped)

        result = chain.verify_chain(entries, KEYS)

        assert base64.b64decode(flipped) == base64.b64decode(sig)
        assert not result.ok and result.first_bad_seq == 2 and result.problem == "signature does not verify"

    def test_detects_a_payload_stored_in_other_than_its_canonical_form(self):
        entries = _entries(2, KEY)
        entries[0] = dataclasses.replace(entries[0], payload_text='{"n": 1, "text": "message 1"}')

        result = chain.verify_chain(entries, KEYS)

        assert not result.ok and result.first_bad_seq == 1 and "canonical" in result.problem

    def test_a_re_spelled_payload_is_named_even_when_json_reads_what_rfc8785_refuses(self):
        entries = _entries(2, KEY)
        entries[1] = dataclasses.replace(entries[1], payload={"text": "message 2", "n": float("nan")},
                                         payload_text='{"n":NaN,"text":"message 2"}')

        result = chain.verify_chain(entries, KEYS)

        assert not result.ok and result.first_bad_seq == 2 and "canonical" in result.problem

    def test_names_a_forged_signature_before_a_later_changed_payload(self):
        entries = _entries(5, KEY)
        entries[1] = dataclasses.replace(entries[1], signature=entries[2].signature)
        entries[3] = dataclasses.replace(entries[3], payload={"text": "changed", "n": 4})

        result = chain.verify_chain(entries, KEYS)

        assert (result.ok, result.checked, result.first_bad_seq, result.problem) == (False, 1, 2, "signature does not verify")

    def test_names_a_changed_payload_before_a_later_forged_signature(self):
        entries = _entries(5, KEY)
        entries[1] = dataclasses.replace(entries[1], payload={"text": "changed", "n": 2})
        entries[3] = dataclasses.replace(entries[3], signature=entries[2].signature)

        result = chain.verify_chain(entries, KEYS)

        assert (result.ok, result.first_bad_seq, result.problem) == (False, 2, "hash does not match the content")


@pytest.fixture(scope="module")
def entries():
    return _entries(3 * 500 + 7, KEY)


class TestVerifyLongChain:
    """Signatures are checked in chunks on several threads; the first bad one must still be the one named."""

    @pytest.fixture(autouse=True)
    def threads(self, monkeypatch):
        monkeypatch.setattr(chain, "_THREADS", 2)

    def test_accepts_it_untouched(self, entries):
        assert chain.verify_chain(entries, KEYS) == chain.VerifyResult(True, len(entries))

    @pytest.mark.parametrize("forged", [[1], [500], [501], [1507], [1200, 40], [1001, 999], [1400, 1500, 1300]])
    def test_names_the_first_forged_signature(self, entries, forged):
        changed = list(entries)
        for seq in forged:
            changed[seq - 1] = dataclasses.replace(changed[seq - 1], signature=entries[seq % len(entries)].signature)

        result = chain.verify_chain(changed, KEYS)

        assert (result.ok, result.checked, result.first_bad_seq) == (False, min(forged) - 1, min(forged))
        assert result.problem == "signature does not verify"

    def test_a_forged_signature_after_a_broken_link_is_not_the_one_named(self, entries):
        changed = list(entries)
        changed[1300] = dataclasses.replace(changed[1300], signature=entries[0].signature)
        changed[700] = dataclasses.replace(changed[700], prev_hash=chain.GENESIS)

        result = chain.verify_chain(changed, KEYS)

        assert (result.first_bad_seq, result.problem) == (701, "prev_hash does not link to the entry before")


PAYLOADS = [
    {},
    {"text": "plain"},
    {"text": "caf\u00e9 \u65e5\u672c \U0001f600 \u2028\u2029 \x7f \ufeff"},
    {"text": 'quote " backslash \\ slash / tab \t newline \n cr \r bs \b ff \f nul \x00 unit \x1f'},
    {"\U0001f600": 1, "\ue000": 2, "a": 3, "B": 4, "": 5, "\u00e9": 6},  # UTF-16 order differs from code points
    {"ints": [0, -0, 1, -1, 2**53 - 1, -(2**53) + 1, 10**15]},
    {"floats": [0.0, -0.0, 1.0, -1.5, 0.1, 1e21, 1e20, 1e-7, 1e-6, 123456789.125, 5e-324, 1.7976931348623157e308]},
    {"nested": {"z": [{"b": None, "a": [True, False, []]}, {}], "a": {"deeper": {"deepest": ["x", 1, 2.5]}}}},
    {"arguments": {"order_id": "A-1", "round": 3}, "call_id": "call_1", "tool": "lookup_order", "ok": True},
]


def _random_value(rng: random.Random, depth: int) -> object:
    pick = rng.randrange(9 if depth < 4 else 6)
    if pick == 0:
        return rng.choice([None, True, False])
    if pick == 1:
        return rng.randint(-(2**53) + 1, 2**53 - 1)
    if pick == 2:
        return rng.choice([rng.uniform(-1e6, 1e6), rng.random() * 10 ** rng.randint(-30, 30), float(rng.randint(-99, 99))])
    if pick in (3, 4, 5):
        return _random_text(rng)
    if pick in (6, 7):
        return {_random_text(rng): _random_value(rng, depth + 1) for _ in range(rng.randrange(5))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(5))]


def _random_text(rng: random.Random) -> str:
    """Mostly printable ASCII with now and then one character that must be escaped or is not ASCII."""
    ranges = [(0x00, 0x20), (0x7F, 0x800), (0x800, 0xD800), (0xE000, 0x10000), (0x10000, 0x110000)]
    out = []
    for _ in range(rng.randrange(12)):
        if rng.random() < 0.8:
            out.append(chr(rng.randrange(0x20, 0x7F)))
        else:
            low, high = rng.choice(ranges)
            out.append(chr(rng.randrange(low, high)))
    return "".join(out)


class TestCanonicalFromText:
    FIELDS = {"partition": "conv-x", "seq": 7, "kind": "model_round", "turn_id": "turn_1", "actor": "agent",
              "created_at": "2026-11-30T12:00:00.123456+00:00"}

    @pytest.mark.parametrize("payload", PAYLOADS)
    def test_is_byte_for_byte_canonical_of_the_parsed_payload(self, payload):
        text = rfc8785.dumps(payload).decode("utf-8")

        assert chain.canonical_from_text(**self.FIELDS, payload_text=text) == chain.canonical(**self.FIELDS, payload=payload)

    @pytest.mark.parametrize("fields", [
        {"actor": "okta:acme:al\u00efce@acme.com", "turn_id": ""},
        {"actor": 'ops:"quoted"\\back', "kind": "repair", "seq": 1},
        {"actor": "ops:back\\slash", "turn_id": "turn/1"},
        {"actor": "ops:\"quoted\"", "kind": "kind\u007f"},
        {"actor": "x\ny\u0001\u007f", "turn_id": "turn_\U0001f600", "seq": 2**53 - 1},
        {"partition": "conv-3bc02855-594b-4ef3-8f52-7a6262155a00", "created_at": "2026-11-30T12:00:00+05:30"},
    ])
    def test_writes_every_other_field_as_canonical_does(self, fields):
        payload = PAYLOADS[-1]
        both = {**self.FIELDS, **fields}

        assert chain.canonical_from_text(**both, payload_text=rfc8785.dumps(payload).decode("utf-8")) == chain.canonical(
            **both, payload=payload
        )

    def test_agrees_with_canonical_on_random_payloads(self):
        rng = random.Random(8785)
        payloads = [{_random_text(rng): _random_value(rng, 0) for _ in range(rng.randrange(1, 6))} for _ in range(500)]
        fields = [{**self.FIELDS, "actor": _random_text(rng), "turn_id": _random_text(rng), "seq": rng.randint(1, 10**9)}
                  for _ in payloads]

        mismatched = [
            payload for payload, f in zip(payloads, fields, strict=True)
            if chain.canonical_from_text(**f, payload_text=rfc8785.dumps(payload).decode("utf-8")) != chain.canonical(**f, payload=payload)
        ]

        assert mismatched == []

    def test_any_other_spelling_of_the_payload_gives_other_bytes(self):
        payload = {"n": 1, "text": "message 1"}

        respelled = [chain.canonical_from_text(**self.FIELDS, payload_text=text)
                     for text in ('{"n": 1, "text": "message 1"}', '{"text":"message 1","n":1}', '{"n":1.0,"text":"message 1"}')]

        assert chain.canonical(**self.FIELDS, payload=payload) not in respelled
