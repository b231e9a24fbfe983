import base64
import dataclasses

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
