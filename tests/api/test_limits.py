from apps.ops.limits import hit


class TestFixedWindow:
    def test_counts_up_to_the_limit_then_refuses(self):
        verdicts = [hit(bucket="t1", limit=2, window=60, now=600.0 + i) for i in range(3)]

        assert [v.allowed for v in verdicts] == [True, True, False]

    def test_says_how_long_until_the_window_ends(self):
        verdict = hit(bucket="t2", limit=1, window=60, now=645.2)

        assert verdict.retry_after == 15

    def test_a_new_window_starts_from_zero(self):
        for i in range(3):
            hit(bucket="t3", limit=2, window=60, now=600.0 + i)

        verdict = hit(bucket="t3", limit=2, window=60, now=660.0)

        assert verdict.allowed and verdict.count == 1

    def test_a_limit_of_zero_disables_the_bucket(self):
        verdicts = [hit(bucket="t4", limit=0, window=60, now=600.0) for _ in range(5)]

        assert all(v.allowed for v in verdicts)
