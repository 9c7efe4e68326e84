"""The bpp and unpaired formats' compiled text (rnapipe.io.numtext) against Python's own ``%`` formatting, the
slow obvious way: every value as ``"%.6g" % x``, every line built by hand, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from rnapipe.io import numtext
from rnapipe.io.idtext import ID_ERRORS

SPECIAL = [0.0, -0.0, 1.0, 1e-5, 1.5e-5, 0.1234565, 0.5, 0.9999995, 0.99999949, 0.99999951, 1e-4, 9.999995e-5,
           9.9999949e-5, 1e-300, 5e-324, 2.2250738585072014e-308, float("nan"), float("inf"), float("-inf"), -1.5,
           123456.5, 1234567.0, 999999.5, 1e22, 1e100, 1.7976931348623157e308, 0.000123456789, 2.0 ** -16, 0.3, 0.7,
           1 - 1e-16, 1 + 1e-12, 0.1, 0.01, 0.001, 0.0001, 0.00001, 123.456, 100000.0, 12345.6]


def _values() -> list[np.ndarray]:
    rng = np.random.default_rng(24)
    ties = (rng.integers(100000, 999999, 20000) + 0.5) * 10.0 ** rng.integers(-12, -4, 20000).astype(float)
    return [np.array(SPECIAL), rng.random(50000), rng.random(50000) ** 6, 10.0 ** rng.uniform(-330, 2, 50000),
            rng.random(2000) * 1e-310, ties, -rng.random(1000)]


@pytest.mark.parametrize("k", range(7))
def test_bpp_lines_are_pythons(k):
    p = _values()[k]
    i = np.arange(p.size, dtype=np.int32) + 1
    j = (i.astype(np.int64) * 7919 % 100003).astype(np.int32) + i
    rid = "ENST00000397910.8"
    want = "".join(f"{rid}\t{a}\t{b}\t" + "%.6g" % x + "\n" for a, b, x in zip(i.tolist(), j.tolist(), p.tolist()))
    assert numtext.bpp_bytes(rid.encode("ascii"), i, j, p) == want.encode("ascii")


@pytest.mark.parametrize("k", range(7))
def test_unpaired_lines_are_pythons(k):
    u = _values()[k]
    want = "\t".join(["r1"] + [("%.6g" % x) if x > 0.0 else "0" for x in u.tolist()]) + "\n"
    assert numtext.unpaired_bytes(b"r1", u) == want.encode("ascii")


def test_empty_records_and_ids_of_any_bytes():
    rid = "r%1\té\udcff"
    raw = rid.encode("utf-8", ID_ERRORS)
    assert numtext.bpp_bytes(raw, np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0)) == b""
    assert numtext.unpaired_bytes(raw, np.zeros(0)) == raw + b"\n"
    assert numtext.bpp_bytes(raw, np.array([3]), np.array([40]), np.array([0.25])) == raw + b"\t3\t40\t0.25\n"


def test_the_fast_digits_leave_ties_to_python():
    """Values within the margin of a rounding tie take Python's digits; ordinary values do not."""
    x = np.array([0.1234565, 0.12345649999, 0.25, 1e-5])
    R, E, K, FB, FO = numtext._values(x, False)
    assert K.tolist()[2:] == [numtext.FAST, numtext.FAST]
    assert numtext.PYTHON in K.tolist()[:2]
