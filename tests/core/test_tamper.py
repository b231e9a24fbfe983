import pytest

from apps.ledger.models import Event
from apps.ledger.replay import verify
from tests.core.logs import few_turns, flip, seqs, swap, tamper, undone

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

COLUMNS = ["payload", "hash", "signature", "prev_hash", "kind", "turn_id", "actor", "key_id"]
WHERE = [0.0, 0.5, 1.0]  # the first, a middle and the last character


@pytest.fixture
def log(start, clock):
    cid = few_turns(start, clock)
    assert verify(cid).ok
    return cid


class TestFlippedBytes:
    @pytest.mark.parametrize("column", COLUMNS)
    def test_flipping_one_byte_of_any_entry_fails_verify_at_that_entry(self, log, column):
        failures = {}

        for seq in seqs(log):
            for where in WHERE:
                with undone():
                    flip(column, log, seq, where)
                    failures[(seq, where)] = verify(log)

        assert len(failures) >= 3 * 20
        assert {key: (r.ok, r.first_bad_seq) for key, r in failures.items()} == {
            (seq, where): (False, seq) for seq, where in failures
        }

    @pytest.mark.parametrize("column", ["signature", "hash"])
    def test_flipping_any_byte_of_the_last_entrys_signature_or_hash_fails(self, log, column):
        last = seqs(log)[-1]
        length = len(getattr(Event.objects.get(conversation_id=log, seq=last), column))
        results = []

        for i in range(length):
            with undone():
                flip(column, log, last, (i + 1) / length)
                results.append(verify(log))

        assert [(r.ok, r.first_bad_seq) for r in results] == [(False, last)] * length

    def test_moving_the_creation_time_by_a_microsecond_fails(self, log):
        second = seqs(log)[1]

        with undone():
            tamper("UPDATE ledger_event SET created_at = created_at + interval '1 microsecond' "
                   "WHERE conversation_id = %(cid)s AND seq = %(seq)s", {"cid": log, "seq": second})
            result = verify(log)

        assert not result.ok and result.first_bad_seq == second and "hash" in result.problem


class TestRemovedEntries:
    @pytest.mark.parametrize("which", ["first", "middle", "last"])
    def test_deleting_an_entry_fails_verify(self, log, which):
        all_seqs = seqs(log)
        seq = {"first": all_seqs[0], "middle": all_seqs[len(all_seqs) // 2], "last": all_seqs[-1]}[which]

        with undone():
            tamper("DELETE FROM ledger_event WHERE conversation_id = %(cid)s AND seq = %(seq)s", {"cid": log, "seq": seq})
            result = verify(log)

        assert not result.ok
        assert f"expected seq {seq}," in result.problem or f"ends at seq {seq - 1}" in result.problem

    def test_deleting_the_newest_entries_and_moving_the_head_back_with_them_still_fails(self, log):
        last = seqs(log)[-1]

        with undone():
            tamper("DELETE FROM ledger_event WHERE conversation_id = %(cid)s AND seq = %(seq)s", {"cid": log, "seq": last})
            tamper("UPDATE conversations SET head_seq = head_seq - 1 WHERE id = %(cid)s", {"cid": log})
            result = verify(log)

        assert not result.ok and result.first_bad_seq == last - 1 and "head hash" in result.problem


class TestReordering:
    @pytest.mark.parametrize("pair", ["first two", "middle two", "second and last", "last two"])
    def test_swapping_two_entries_seq_fails_verify_at_the_first_of_them(self, log, pair):
        all_seqs = seqs(log)
        mid = len(all_seqs) // 2
        a, b = {"first two": (1, 2), "middle two": (mid, mid + 1), "second and last": (2, all_seqs[-1]),
                "last two": (all_seqs[-2], all_seqs[-1])}[pair]

        with undone():
            swap(log, a, b)
            result = verify(log)

        assert not result.ok and result.first_bad_seq == a
