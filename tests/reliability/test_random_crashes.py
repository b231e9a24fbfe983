"""
Randomized crashes: a real server killed at a random point of a random turn, many times over.

Each round picks a turn shape (echo rounds, a webhook, a client tool answered over HTTP, an approval)
and a crash (`WAYPOINT_FAULT_AT` at a random boundary, or SIGKILL after a random delay), drives the
turn through the customer page forms, restarts the server as often as it dies and answers whatever
waits. Only global invariants are asserted. `WAYPOINT_SOAK_ROUNDS` sets the number of rounds
(`make soak` runs many), `WAYPOINT_SOAK_SEED` replays a run; the seed is printed either way.
"""

import os
import random

import pytest

from tests.fakes.receiver import Receiver
from tests.reliability.harness import Lab
from tests.servers import ServerDatabase

pytestmark = pytest.mark.postgres

ROUNDS = int(os.environ.get("WAYPOINT_SOAK_ROUNDS", "3"))
SEED = int(os.environ.get("WAYPOINT_SOAK_SEED") or random.SystemRandom().randrange(1, 10**9))


@pytest.fixture(scope="module")
def lab():
    database = ServerDatabase("crash")
    with Receiver() as receiver:
        lab = Lab(seed=SEED, database=database, receiver=receiver)
        print(f"\nrandom crash rounds: {ROUNDS}, seed {SEED} (rerun with WAYPOINT_SOAK_SEED={SEED})")
        try:
            lab.run(ROUNDS)
            print(lab.describe())
            yield lab
        finally:
            lab.stop()
            database.drop()


class TestRandomCrashes:
    def test_every_turn_settles_after_its_crashes(self, lab):
        assert lab.problems == [], lab.describe()
        assert lab.rows.running() == [], lab.describe()

    def test_no_accepted_result_is_lost(self, lab):
        assert lab.lost_results() == [], lab.describe()

    def test_no_key_is_delivered_again_unless_a_person_approved_its_reattempt(self, lab):
        assert lab.duplicate_deliveries() == {}, lab.describe()

    def test_every_conversation_verifies_and_replays_to_its_stores(self, lab):
        assert lab.verify_failures() == {}, lab.describe()

    def test_no_transcript_shows_a_partial_answer(self, lab):
        assert lab.rows.partial_answers() == [], lab.describe()
