"""Engine calls relayed on the CPU (rnapipe.cpu.batch.Relay): the stream starts a call as the one before it hands
out its last records. The calls' workers never fold on more than the threads asked for together, each call's
results are its own and in order, the drained event comes before the call ends, a stop ends the calls, and a
streamed run with overlapping calls equals the engine's one list."""

from __future__ import annotations

import os
import random
import tempfile
import threading
import time

from rnapipe.cpu import zuker
from rnapipe.cpu.batch import Relay, map_longest_first, relayed


class _Meter:
    """A fold that sleeps a little and counts how many run at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def __call__(self, item):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.002 * len(item))
        with self.lock:
            self.now -= 1
        return item.upper()


def _relayed_calls(relay, calls, meter, threads):
    """Each call of ``calls`` (lists of strings) on a thread of its own, the next started when the last drained
    (as the stream does); returns each call's results and whether its drained event came before its end."""
    out, drained_first = [None] * len(calls), [None] * len(calls)
    threads_of = []
    for k, items in enumerate(calls):
        drained = threading.Event()
        finished = threading.Event()

        def run(k=k, items=items, drained=drained, finished=finished):
            with relayed(relay, drained):
                out[k] = map_longest_first(meter, items, threads)
            drained_first[k] = drained.is_set()
            finished.set()

        t = threading.Thread(target=run)
        t.start()
        threads_of.append(t)
        while not (drained.is_set() or finished.is_set()):
            time.sleep(0.001)
    for t in threads_of:
        t.join()
    return out, drained_first


def test_relayed_calls_share_the_cores_and_keep_their_results():
    rng = random.Random(3)
    calls = [["".join(rng.choice("acgu") for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(20, 60))]
             for _ in range(6)]
    threads = 3
    meter = _Meter()
    out, drained_first = _relayed_calls(Relay(threads), calls, meter, threads)
    assert out == [[s.upper() for s in items] for items in calls]
    assert all(drained_first)
    assert meter.most <= threads
    # without the relay the same calls, started as each drains, would fold on more threads at once: the check
    # above can fail
    meter = _Meter()
    both = [threading.Thread(target=map_longest_first, args=(meter, items, threads)) for items in calls[:2]]
    for t in both:
        t.start()
    for t in both:
        t.join()
    assert meter.most > threads


def test_a_stopped_relay_takes_no_further_group():
    relay = Relay(2)
    relay.stop.set()
    calls = []

    def fold(item):
        calls.append(item)
        return item

    with relayed(relay, threading.Event()):
        map_longest_first(fold, ["a" * 5] * 200, 2)
    assert calls == []


def test_relayed_calls_share_one_memory_gate():
    relay = Relay(4)
    assert relay.gate(100) is relay.gate(50)
    assert relay.gate(70).budget == 70


def test_stream_with_overlapping_cpu_calls_equals_the_one_list(monkeypatch):
    from rnapipe.pipeline.folding import pace as pace_mod
    from rnapipe.pipeline.folding.chunks import chunked
    from rnapipe.pipeline.folding.folder import Folder
    from rnapipe.pipeline.folding.stream import fold_chunks
    from rnapipe.pipeline.input.reader import FastaReader

    rng = random.Random(11)
    seqs = ["".join(rng.choice("ACGU") for _ in range(rng.randint(5, 160))) for _ in range(400)]
    want = zuker.fold_batch(seqs, "default", 2, {})
    # chunks of 8 records, one chunk a call: 50 calls, each on both threads, one starting as the last drains
    monkeypatch.setattr(pace_mod, "UNIT_SECONDS", 1e9)
    monkeypatch.setitem(pace_mod.BATCH_SECONDS, "cpu", 1e-9)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "in.fa")
        with open(path, "w") as handle:
            handle.writelines(f">s{k}\n{s}\n" for k, s in enumerate(seqs))
        folder = Folder("zuker", device="cpu", threads=2)
        pace = pace_mod.Pace("cpu", 2, rate=1e6)
        got = []
        calls = []
        real = folder.fold_packed

        spans = []

        def counted(parts):
            calls.append(sum(len(p) for p in parts))
            began = time.perf_counter()
            try:
                return real(parts)
            finally:
                spans.append((began, time.perf_counter()))

        monkeypatch.setattr(folder, "fold_packed", counted)
        for chunk, res in fold_chunks(chunked(FastaReader([path]), records=8, pace=pace), folder, pace=pace):
            got += res.pairs()
    assert calls == [8] * 50
    spans.sort()
    assert any(b[0] < a[1] for a, b in zip(spans, spans[1:]))      # some call started before the last ended
    assert got == [(int(e), s) for e, s in want]


def test_progress_is_called_one_call_at_a_time_and_counts_every_sequence(monkeypatch):
    """rnapipe.fold's progress callback, with relayed calls that overlap: never entered by two threads at once,
    and its counts add up to the sequences folded."""
    import rnapipe
    from rnapipe.pipeline.folding import pace as pace_mod

    monkeypatch.setattr(pace_mod, "UNIT_SECONDS", 1e9)
    monkeypatch.setitem(pace_mod.BATCH_SECONDS, "cpu", 1e-9)
    monkeypatch.setenv("RNAPIPE_CHUNK_RECORDS", "6")
    rng = random.Random(12)
    seqs = ["".join(rng.choice("ACGU") for _ in range(rng.randint(5, 120))) for _ in range(240)]
    inside = threading.Lock()
    seen = {"total": 0, "overlapped": False}

    def progress(count):
        if not inside.acquire(blocking=False):
            seen["overlapped"] = True
            return
        try:
            time.sleep(0.001)
            seen["total"] += count
        finally:
            inside.release()

    results = rnapipe.fold(seqs, threads=2, progress=progress)
    assert len(results) == len(seqs)
    assert not seen["overlapped"]
    assert seen["total"] == len(seqs)


def test_an_engine_call_takes_no_chunk_past_the_pace_batch(monkeypatch):
    """What a killed run loses is the call in flight: a call gathers parsed chunks only while their summed work
    stays within the pace's batch of work (a single chunk always goes, however large), and every record is
    folded once, in order."""
    from rnapipe.pipeline.folding import pace as pace_mod
    from rnapipe.pipeline.folding.chunks import chunked
    from rnapipe.pipeline.folding.folder import Folder
    from rnapipe.pipeline.folding.stream import fold_chunks
    from rnapipe.pipeline.input.reader import FastaReader

    rng = random.Random(13)
    seqs = ["".join(rng.choice("ACGU") for _ in range(rng.randint(5, 90))) for _ in range(300)]
    rate = 1e7                             # a chunk of 7 records is some 7·10⁶ of work: calls of 1-3 chunks
    monkeypatch.setattr(pace_mod, "UNIT_SECONDS", 1e9)              # chunks cut by records alone
    monkeypatch.setitem(pace_mod.BATCH_SECONDS, "cpu", 2.5)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "in.fa")
        with open(path, "w") as handle:
            handle.writelines(f">s{k}\n{s}\n" for k, s in enumerate(seqs))
        folder = Folder("nussinov", device="cpu", threads=1)
        # the rate stays at ``rate``: the pace never learns from a call here
        pace = pace_mod.Pace("cpu", 1, rate=rate)
        monkeypatch.setattr(pace, "observe", lambda amount, seconds: None)
        batches = []
        real = folder.fold_packed

        def counted(parts):
            batches.append([len(p) for p in parts])
            return real(parts)

        monkeypatch.setattr(folder, "fold_packed", counted)
        order = []
        source = chunked(FastaReader([path]), records=7, pace=pace)
        costs = {}
        for chunk, _ in fold_chunks(source, folder, pace=pace):
            costs[chunk.number] = chunk.cost
            order.append(chunk.number)
    assert order == list(range(len(order)))
    most = 2.5 * rate
    at, multi = 0, 0
    for batch in batches:
        numbers = range(at, at + len(batch))
        at += len(batch)
        if len(batch) > 1:
            multi += 1
            assert sum(costs[n] for n in numbers) <= most
    assert at == len(order)
    assert multi > 0                       # the test gathers at all
