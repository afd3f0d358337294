import pytest

from svclog.compactor.delete_requests import DeleteRequestNotFound, DeletionDisabledError
from svclog.config import LimitsConfig
from svclog.model import ValidationError
from svclog.storage.objstore import ObjectStore
from tests.compactor.helpers import HOUR, NS, T0, Clock, make_compactor

START, END = str(T0 // NS), str(T0 // NS + 3600)


@pytest.fixture
def compactor(tmp_path):
    return make_compactor(ObjectStore(str(tmp_path)), Clock())


def test_create_list_cancel(compactor):
    rid = compactor.create_delete_request("t", '{app="ghost"} |= "boom"', START, END)
    listed = compactor.list_delete_requests("t")
    assert listed == [
        {
            "request_id": rid,
            "start_time": T0 // NS,
            "end_time": T0 // NS + 3600,
            "query": '{app="ghost"} |= "boom"',
            "status": "received",
            "created_at": compactor.clock() // NS,
            "user_id": "",
        }
    ]  # the reference blanks user_id
    assert compactor.list_delete_requests("other") == []
    compactor.cancel_delete_request("t", rid)
    assert compactor.list_delete_requests("t") == []


def test_rfc3339_and_default_end(compactor):
    compactor.create_delete_request("t", '{app="a", env="prod"}', "2026-11-01T00:00:00Z", "2026-11-01T02:00:00Z")
    compactor.create_delete_request("t", '{app="b"}', "2026-11-01T00:00:00.250Z")
    by_query = {r["query"]: r for r in compactor.list_delete_requests("t")}
    first, second = by_query['{app="a", env="prod"}'], by_query['{app="b"}']
    assert (first["start_time"], first["end_time"]) == (1793491200, 1793498400)
    assert second["start_time"] == 1793491200.25 and second["end_time"] == compactor.clock() // NS


@pytest.mark.parametrize(
    "query,start,end",
    [
        (None, START, END),
        ("", START, END),
        ('{app="ghost"', START, END),
        ('{app="a"} | json', START, END),
        ('sum(rate({app="a"}[1m]))', START, END),
        ('{app=~".*"}', START, END),
        ('{app="a"} |~ "("', START, END),
        ('{app="a"}', None, END),
        ('{app="a"}', "yesterday", END),
        ('{app="a"}', "17934912", END),
        ('{app="a"}', END, START),
        ('{app="a"}', START, str(10**10 - 1)),
    ],
)
def test_invalid_requests_are_validation_errors(compactor, query, start, end):
    with pytest.raises(ValidationError):
        compactor.create_delete_request("t", query, start, end)
    assert compactor.list_delete_requests("t") == []


def test_max_interval_splits_filtered_requests_listed_once(compactor):
    rid = compactor.create_delete_request("t", '{app="a"} |= "x"', START, str(T0 // NS + 7200), "30m")
    stored = compactor.requests.get("t", rid)
    assert len(stored.shards) == 4
    assert [s.end_ms - s.start_ms for s in stored.shards] == [1800_000] * 4
    [listed] = compactor.list_delete_requests("t")
    assert (listed["start_time"], listed["end_time"]) == (T0 // NS, T0 // NS + 7200)
    # without line filters a request is not split (as the reference does)
    rid2 = compactor.create_delete_request("t", '{app="a"}', START, str(T0 // NS + 7200), "30m")
    assert len(compactor.requests.get("t", rid2).shards) == 1
    with pytest.raises(ValidationError):
        compactor.create_delete_request("t", '{app="a"} |= "x"', START, END, "1x")
    with pytest.raises(ValidationError):
        compactor.create_delete_request("t", '{app="a"} |= "x"', START, END, "2h")  # longer than the range


def test_cancel_rules(tmp_path):
    clock = Clock()
    compactor = make_compactor(ObjectStore(str(tmp_path)), clock, delete_request_cancel_period=HOUR)
    with pytest.raises(DeleteRequestNotFound):
        compactor.cancel_delete_request("t", "nope")
    late = compactor.create_delete_request("t", '{app="a"}', START, END)
    clock.now += 2 * HOUR
    with pytest.raises(ValidationError, match="deadline"):
        compactor.cancel_delete_request("t", late)
    compactor.cancel_delete_request("t", late, force=True)
    assert compactor.list_delete_requests("t") == []


def test_force_cancel_of_partly_processed_request_lists_it_as_processed(tmp_path):
    clock = Clock()
    compactor = make_compactor(ObjectStore(str(tmp_path)), clock)
    rid = compactor.create_delete_request("t", '{app="a"} |= "x"', START, str(T0 // NS + 7200), "1h")
    stored = compactor.requests.get("t", rid)
    compactor._mark_processed("t", rid, stored.shards[0].seq, 3)
    assert compactor.list_delete_requests("t")[0]["status"] == "50% Complete"
    with pytest.raises(ValidationError, match="partially"):
        compactor.cancel_delete_request("t", rid)
    compactor.cancel_delete_request("t", rid, force=True)
    [listed] = compactor.list_delete_requests("t")
    assert listed["status"] == "processed" and listed["request_id"] == rid
    with pytest.raises(ValidationError, match="already processed"):
        compactor.cancel_delete_request("t", rid, force=True)


def test_disabled_deletion_mode_refuses(tmp_path):
    compactor = make_compactor(ObjectStore(str(tmp_path)), Clock(), LimitsConfig(deletion_mode="disabled"))
    with pytest.raises(DeletionDisabledError):
        compactor.create_delete_request("t", '{app="a"}', START, END)


def _run_paused_in_first_shard(compactor, monkeypatch):
    """Start a pass in a thread that stops inside its first delete shard; returns (thread, release)."""
    import threading

    import svclog.compactor.compactor as module

    entered, release = threading.Event(), threading.Event()
    real = module.apply_delete

    def paused(*args):
        entered.set()
        assert release.wait(30)
        return real(*args)

    monkeypatch.setattr(module, "apply_delete", paused)
    thread = threading.Thread(target=compactor.run_once)
    thread.start()
    assert entered.wait(30), "the pass did not pick the request up"
    return thread, release


def test_force_cancel_while_a_shard_is_processed_lists_it_as_processed(tmp_path, monkeypatch):
    from tests.compactor.helpers import flush, labels, read_all

    store = ObjectStore(str(tmp_path))
    stream = labels(app="a")
    ts = [T0 + i * 600 * NS for i in range(12)]  # two hours, one line every 10 minutes
    flush(store, "t", stream, ts, [f"x {i}" for i in range(12)])
    clock = Clock()
    compactor = make_compactor(store, clock, delete_request_cancel_period=HOUR)
    rid = compactor.create_delete_request("t", '{app="a"} |= "x"', START, str(T0 // NS + 7200), "1h")
    assert len(compactor.requests.get("t", rid).shards) == 2
    clock.now += 2 * HOUR
    thread, release = _run_paused_in_first_shard(compactor, monkeypatch)
    try:
        with pytest.raises(ValidationError, match="in process"):
            compactor.cancel_delete_request("t", rid)
        compactor.cancel_delete_request("t", rid, force=True)  # was a 400 "in process"
        [listed] = compactor.list_delete_requests("t")
        assert (listed["request_id"], listed["status"]) == (rid, "processed")
    finally:
        release.set()
        thread.join(30)
    assert compactor.last_report.delete_shards_processed == 1  # the queued second shard was dropped
    [listed] = compactor.list_delete_requests("t")
    assert listed["status"] == "processed"
    left = [line for _, line in read_all(store, "t")[stream]]
    assert left == [f"x {i}" for i in range(7, 12)]  # [0, 1h] (both ends) is gone, the cancelled rest stays
    with pytest.raises(ValidationError, match="already processed"):
        compactor.cancel_delete_request("t", rid, force=True)


def test_force_cancel_of_a_picked_up_single_shard_request(tmp_path, monkeypatch):
    from tests.compactor.helpers import flush, labels

    store = ObjectStore(str(tmp_path))
    flush(store, "t", labels(app="a"), [T0 + NS], ["x"])
    clock = Clock()
    compactor = make_compactor(store, clock, delete_request_cancel_period=HOUR)
    rid = compactor.create_delete_request("t", '{app="a"}', START, END)
    clock.now += 2 * HOUR
    thread, release = _run_paused_in_first_shard(compactor, monkeypatch)
    try:
        compactor.cancel_delete_request("t", rid, force=True)
        assert [r["status"] for r in compactor.list_delete_requests("t")] == ["processed"]
    finally:
        release.set()
        thread.join(30)
    assert [r["status"] for r in compactor.list_delete_requests("t")] == ["processed"]


def test_request_ids_that_are_not_ours_name_no_request_and_never_reach_the_store(tmp_path):
    from svclog.compactor.delete_requests import DeleteRequestStore
    from svclog.storage.objstore import ObjectStore

    store = DeleteRequestStore(ObjectStore(str(tmp_path)))
    for request_id in ["", "a/b", "..", "\n\n\x7f\x00\r\x00", "é\x00", "x" * 200]:
        assert store.get("t", request_id) is None
