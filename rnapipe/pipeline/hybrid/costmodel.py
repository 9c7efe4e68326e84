"""Predicted folding time per sequence on one device, from timed samples of a few lengths.

The CPU engine folds every length the same way: its cost is the fit ``a·L³ + b·L² + c`` (a·L³ the fill,
b·L² what grows with the matrices, c the fixed cost of a record) through its samples, a smooth curve that one
disturbed sample moves little (on a busy machine one sample can be 2.4 x slower than its neighbours on either
side). A GPU engine changes its fill at set lengths (:data:`LENGTHS` times both sides of each change), and its
time per sequence there is no smooth function of the length: between the lengths timed it is interpolated,
straight in log-log (a power law from one timed length to the next); below the shortest a sequence costs what
one of that length does; beyond the longest it grows as ``L ** tail`` from there, ``tail`` the slope of the
last two lengths kept within 1-3 (the fill's order is 3 and a GPU's slope at 1,600 nt some 2: it errs on the
side of a long record looking cheap on the GPU, which leaves it to the GPU). A cost made with no timed lengths
is its fit alone.

A device's profile is measured through the same path a run takes (:meth:`~..folding.folder.Folder.fold_packed`: packing,
engine, unpacking), on random sequences of each length class, in batches large enough for the engine's
throughput (the rate a streamed run sees, not one sequence's latency). Profiles are kept per host (its CPU
count, its GPU model, the rnapipe version, the algorithm and options) in a JSON file under the user's cache
directory, and reused until ``--reprofile``.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..._version import __version__
from ...io.writers import atomic_output

# lengths timed by a profile (nt): the GPU's Zuker engine changes its fill after 480 nt (rnapipe.gpu.zuker.
# SHORT_MAX_N: zs_fold_smem to the tiled fill, where the two cross; zs_fold, up to 600, only where forced), both
# sides are timed (tests/test_hybrid.py checks these against the engine's own limits)
LENGTHS = (30, 68, 120, 200, 232, 300, 400, 480, 481, 600, 601, 800, 1200, 1600)
# lengths the CPU is timed at where the profile's lengths are the default ones: its cost is a smooth fit of three
# terms, which a few lengths from short to long determine; 480 and 600 keep a timed K for --device auto
# (:func:`.auto.best_gain`) in the range where the GPU's fills meet
CPU_LENGTHS = (30, 68, 200, 480, 600, 1200)
SAMPLE_SECONDS = 0.25          # each length is timed on about this much work (after a warm-up call)
COST_MODEL = "interpolated-2"  # in each profile's key: a profile of another model (or other lengths, or timed
                               # otherwise: -2, a GPU length's last batch timed twice) is remade
GPU_FILLS = 8                  # in each profile's key: the GPU engine's fills, counted up when one changes speed, so
                               # that a profile timed with the old ones is remade
TABLE_MAX = 1 << 16            # seconds of every length up to here kept in a table (one gather per batch)


@dataclass(frozen=True)
class Cost:
    """Seconds per sequence: interpolated between ``lengths`` (timed, ascending) and their ``per_seq`` seconds,
    ``L ** tail`` beyond (see the module's docstring); without them ``a·L³ + b·L² + c`` (all ≥ 0)."""

    a: float
    b: float
    c: float
    lengths: tuple = ()
    per_seq: tuple = ()
    tail: float = 3.0

    def __post_init__(self):
        object.__setattr__(self, "lengths", tuple(int(x) for x in self.lengths))
        object.__setattr__(self, "per_seq", tuple(float(x) for x in self.per_seq))
        if len(self.lengths) != len(self.per_seq) or any(t <= 0 for t in self.per_seq) or \
                any(b <= a for a, b in zip(self.lengths, self.lengths[1:])):
            raise ValueError("a cost's lengths must ascend, one positive time each")

    def polynomial(self, lens) -> np.ndarray:
        x = np.asarray(lens, dtype=np.float64)
        return (self.a * x + self.b) * x * x + self.c

    def _curve(self, lens) -> np.ndarray:
        x = np.maximum(np.asarray(lens, dtype=np.float64), 1.0)
        logs = np.log(np.asarray(self.lengths, dtype=np.float64))
        logt = np.log(np.asarray(self.per_seq, dtype=np.float64))
        lx = np.log(x)
        out = np.exp(np.interp(lx, logs, logt))        # constant below the first length and beyond the last
        beyond = lx > logs[-1]
        out[beyond] *= np.exp(self.tail * (lx[beyond] - logs[-1]))
        return out

    @functools.cached_property
    def _table(self) -> np.ndarray:
        return self._curve(np.arange(TABLE_MAX + 1))

    def seconds(self, lens) -> np.ndarray:
        if not self.lengths:
            return self.polynomial(lens)
        x = np.asarray(lens)
        if x.dtype.kind in "iu" and x.size and int(x.max(initial=0)) <= TABLE_MAX and int(x.min()) >= 0:
            return self._table[x]
        return self._curve(x)

    def total(self, sum_len3, sum_len2, records) -> np.ndarray:
        """Seconds of groups of records of about one length each (a shard: one length bin), from their sums
        of L³, L² and counts: with timed lengths ``records`` × the seconds of one record of the group's
        cube-mean length, without them the fit over the sums."""
        s3 = np.asarray(sum_len3, dtype=np.float64)
        n = np.asarray(records, dtype=np.float64)
        if not self.lengths:
            return self.a * s3 + self.b * np.asarray(sum_len2, dtype=np.float64) + self.c * n
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.where(n > 0, np.cbrt(s3 / np.maximum(n, 1.0)), 0.0)
        return n * self._curve(mean)

    @classmethod
    def fit(cls, lens, seconds) -> "Cost":
        """The coefficients ≥ 0 with the least relative squared error over the samples (``seconds``: per
        sequence at each length): every subset of the three terms solved by least squares, the best one
        whose coefficients are all ≥ 0 kept."""
        x = np.asarray(lens, dtype=np.float64)
        y = np.asarray(seconds, dtype=np.float64)
        if x.size == 0 or np.any(y <= 0):
            raise ValueError("a cost model needs positive times")
        columns = np.stack([x ** 3, x ** 2, np.ones_like(x)], axis=1) / y[:, None]     # relative error
        best, best_err = None, np.inf
        for k in range(1, 4):
            for terms in itertools.combinations(range(3), k):
                coef, *_ = np.linalg.lstsq(columns[:, terms], np.ones_like(x), rcond=None)
                if np.any(coef < 0):
                    continue
                full = np.zeros(3)
                full[list(terms)] = coef
                err = float(np.sum((columns @ full - 1.0) ** 2))
                if err < best_err:
                    best, best_err = full, err
        if best is None:                      # cannot happen with a single positive term, kept for clarity
            raise ValueError("no non-negative fit")
        return cls(*map(float, best))

    @classmethod
    def measured(cls, samples: dict) -> "Cost":
        """A GPU's cost of timed ``samples`` ({length: seconds per sequence}): interpolated, with the fit beside;
        ``tail`` the slope of the last two lengths, kept within 1-3 (see the module's docstring)."""
        lens = sorted(int(k) for k in samples)
        secs = [float(samples[k]) for k in lens]
        fit = cls.fit(lens, secs)
        tail = 3.0
        if len(lens) > 1:
            tail = float(np.clip(np.log(secs[-1] / secs[-2]) / np.log(lens[-1] / lens[-2]), 1.0, 3.0))
        return cls(fit.a, fit.b, fit.c, tuple(lens), tuple(secs), tail)


def _random_sequences(length: int, count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed + length)
    codes = np.frombuffer(b"ACGU", dtype=np.uint8)[rng.integers(0, 4, size=(count, length))]
    return [row.tobytes().decode("ascii") for row in codes]


def measure(folder, lengths=LENGTHS, seconds: float = SAMPLE_SECONDS, longest: int | None = None,
            warm_each: bool = True) -> dict:
    """Seconds per sequence of ``folder`` (a :class:`~rnapipe.pipeline.folding.folder.Folder`) at each length, on
    random sequences in batches of at least ``seconds`` of work; lengths above ``longest`` are left out.

    ``warm_each``: a warm-up call of 16 sequences before each length (a GPU engine compiles and allocates per
    length class), else one warm-up of a few short sequences before the first (a CPU engine folds every length
    with the same compiled code); the first timed batch is then two rounds of the engine's threads. With
    ``warm_each`` the last batch, the largest, is timed twice and the lesser time kept: a GPU engine allocates its
    matrices in the first call of a batch larger than any before (the tiled Zuker fill: tens of GB, a third of such a
    batch's time at 600 nt), a cost a run pays once, not per batch."""
    from ..records import Records

    threads = max(1, int(getattr(folder, "threads", 1) or 1))
    out = {}
    if not warm_each:
        _fold_random(folder, 20, threads, 1)                          # compiles (or loads) the engine
    for length in lengths:
        if longest is not None and length > longest:
            continue
        if warm_each:
            _fold_random(folder, length, 16, 1)                        # warm-up (compiles, allocates)
        # whole rounds of the engine's threads (a CPU engine folds one sequence per thread: 16 long sequences on
        # 15 threads take two rounds, which would count each as twice its share)
        count = (max(2 * threads, 16) if warm_each else 2 * threads) // threads * threads
        while True:
            seqs = _random_sequences(length, count, 2)
            records = Records.from_lists([str(k) for k in range(count)], seqs, range(count))
            start = time.perf_counter()
            folder.fold_packed([records])
            spent = time.perf_counter() - start
            if spent >= seconds or count >= 1 << 20:
                break
            count = min(1 << 20, max(count * 2, int(count * 1.2 * seconds / max(spent, 1e-6))))
            count = -(-count // threads) * threads
        if warm_each:
            start = time.perf_counter()
            folder.fold_packed([records])
            spent = min(spent, time.perf_counter() - start)
        out[length] = spent / count
    return out


def _fold_random(folder, length: int, count: int, seed: int) -> None:
    from ..records import Records

    folder.fold_packed([Records.from_lists([str(k) for k in range(count)], _random_sequences(length, count, seed),
                                           range(count))])


def call_seconds(folder, repeat: int = 7) -> float:
    """The fixed cost of one engine call: the median time to fold one 20-nt sequence."""
    from ..records import Records

    one = Records.from_lists(["0"], _random_sequences(20, 1, 3), [0])
    folder.fold_packed([one])
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        folder.fold_packed([one])
        runs.append(time.perf_counter() - start)
    return float(np.median(runs))


def host_key(algorithm: str, variant: str, options: dict, gpu_name: str | None, cpu_threads: int) -> dict:
    """A profile's key (lengths: the default LENGTHS, which follow the GPU engine's fills, so that a profile timed
    before the fills changed is remade rather than read)."""
    return {"rnapipe": __version__, "cost": COST_MODEL, "gpu_fills": GPU_FILLS, "machine": platform.machine(),
            "cpu_threads": cpu_threads, "gpu": gpu_name, "algorithm": algorithm, "variant": variant,
            "options": {k: v for k, v in sorted(options.items()) if v is not None}, "lengths": list(LENGTHS)}


def cache_path(key: dict) -> Path:
    base = Path(os.environ.get("RNAPIPE_CACHE") or os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return base / "rnapipe" / f"profile-{digest}.json"


@dataclass
class Profile:
    """Measured seconds per sequence by device and length, and each device's :class:`Cost` of them."""

    key: dict
    samples: dict            # device -> {length: seconds per sequence}
    costs: dict              # device -> Cost
    calls: dict = field(default_factory=dict)     # device -> seconds of one engine call (fixed cost)

    def to_json(self) -> str:
        return json.dumps({"key": self.key, "samples": {d: {str(k): v for k, v in s.items()}
                                                        for d, s in self.samples.items()},
                           "costs": {d: asdict(c) for d, c in self.costs.items()}, "calls": self.calls},
                          indent=1)

    @classmethod
    def from_json(cls, text: str) -> "Profile":
        data = json.loads(text)
        return cls(data["key"], {d: {int(k): v for k, v in s.items()} for d, s in data["samples"].items()},
                   {d: Cost(**c) for d, c in data["costs"].items()}, data["calls"])

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path) as handle:
            handle.write(self.to_json())

    @classmethod
    def load(cls, path: Path, key: dict) -> "Profile | None":
        try:
            profile = cls.from_json(path.read_text())
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return profile if profile.key == json.loads(json.dumps(key, default=str)) else None

    @classmethod
    def fitted(cls, key: dict, samples: dict, calls: dict | None = None) -> "Profile":
        costs = {d: Cost.fit(list(s), list(s.values())) if d == "cpu" else Cost.measured(s)
                 for d, s in samples.items()}
        return cls(key, samples, costs, dict(calls or {}))
