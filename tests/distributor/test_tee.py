from svclog.distributor.tee import SampledTee
from svclog.model import Labels, StreamColumns


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _stream(n, app="a"):
    return StreamColumns(Labels({"app": app}.items()), list(range(n)), [f"l{i}" for i in range(n)])


def test_below_the_rate_everything_is_sent_with_weight_one():
    sent = []
    tee = SampledTee(sent.extend, max_lines_per_second=100, clock=Clock())
    tee.offer("t", [_stream(40)])
    tee.offer("t", [_stream(40)])
    assert tee.flush() == 2
    # the two pushes' copies of one stream travel joined, in push order
    assert [(t, len(s[0]), w) for t, s, w in sent] == [("t", 80, 1)]
    assert sent[0][1][0].ts == list(range(40)) * 2


def test_above_the_rate_lines_are_strided_and_weighted_so_counts_hold():
    sent = []
    clock = Clock()
    tee = SampledTee(sent.extend, max_lines_per_second=100, clock=clock)
    for _ in range(10):
        tee.offer("t", [_stream(100)])
    tee.flush()
    estimated = sum(len(s[0]) * w for _, s, w in sent)
    assert 900 <= estimated <= 1100  # 1000 real lines
    assert sum(len(s[0]) for _, s, _ in sent) < 400  # far fewer were sent


def test_tenants_have_separate_budgets():
    sent = []
    tee = SampledTee(sent.extend, max_lines_per_second=100, clock=Clock())
    tee.offer("busy", [_stream(1000)])
    tee.offer("quiet", [_stream(10)])
    tee.flush()
    weights = {t: w for t, _, w in sent}
    assert weights["quiet"] == 1 and weights["busy"] == 10


def test_buffer_is_bounded_and_drops_are_counted():
    tee = SampledTee(lambda b: None, max_lines_per_second=10**9, max_buffered_lines=50, clock=Clock())
    tee.offer("t", [_stream(40)])
    tee.offer("t", [_stream(40)])
    assert tee.dropped_lines == 40
