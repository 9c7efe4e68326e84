"""zk_fin_lanes' interior-loop terms (pure host code, no GPU needed): the build options rnapipe.gpu.zuker's
fin_lanes_groups derives from a model's size terms, checked on the CPU engine's own loop energies
(rnapipe.energy.interior_energy). Within a term the kernel adds one size term to the minimum of its loops'
window elements, so every loop it groups must cost the same once the closing pairs and their mismatches are fixed:
bulges of one size whichever side (ZF_GROUP01), 1 x n loops of one size whichever side (ZF_GROUP01), and generic
loops of one size whose asymmetry is ZF_GROUPS or more; ZF_GROUPS is the least such asymmetry. That the kernel
with these options folds exactly is tests/test_zuker_emulated.py's and the GPU tests' part. Also host code: the
shared memory the launch gives zk_fin_lanes' 16-bit window follows the window's pitch as the build takes it."""

from __future__ import annotations

import pytest

from rnapipe import energy as E
from rnapipe.gpu import zuker as gpu

SPECIAL = {(2, 2), (2, 3), (3, 2)}          # the generic-sized loops with tables of their own


def _options(model):
    opts = dict(o[2:].split("=") for o in gpu.fin_lanes_groups(model))
    return int(opts["ZF_GROUPS"]), opts.get("ZF_GROUP01") == "1"


@pytest.mark.parametrize("temperature", [0, 24, 37, 55, 70, 100])
def test_grouped_loops_cost_the_same(temperature):
    model = gpu._gpu_model({"temperature": temperature})
    T = model.tables()
    cap, group01 = _options(model)

    def energy(n1, n2):                     # C-G closing G-C; i+1 A, j-1 U, p-1 G, q+1 C
        return int(E.interior_energy(T, n1, n2, 1, 2, 1, 4, 3, 2))

    top = E.MAXLOOP
    assert group01 and all(energy(0, s) == energy(s, 0) for s in range(3, top + 1))
    assert all(energy(1, s - 1) == energy(s - 1, 1) for s in range(4, top + 1))

    def values(s, a):                       # the generic loops of size s with asymmetry >= a
        return {energy(n1, s - n1) for n1 in range(2, s - 1)
                if abs(2 * n1 - s) >= a and (n1, s - n1) not in SPECIAL}

    assert all(len(values(s, cap)) <= 1 for s in range(4, top + 1)), cap
    if cap > 0:                              # the least: one asymmetry less groups loops of different costs
        assert any(len(values(s, cap - 1)) > 1 for s in range(4, top + 1)), cap


def test_the_default_model_groups_from_asymmetry_five():
    """At 37 °C Ninio's term (60 dcal/mol a nucleotide of asymmetry) reaches its cap (300) at five."""
    assert _options(gpu._gpu_model({})) == (5, True)


def test_the_16_bit_window_bytes_follow_the_pitch(monkeypatch):
    """fin_lanes_shared(True) takes FIN_AUX16_PITCH as it is at the call (fin_lanes_window builds with it): 3 x 62
    rows of 16-bit elements, each row ``pitch`` wide, so 8 more per row are 3 x 62 x 8 x 2 bytes more."""
    before = gpu.fin_lanes_shared(True)
    monkeypatch.setattr(gpu, "FIN_AUX16_PITCH", gpu.FIN_AUX16_PITCH + 8)
    assert f"-DZF_PA={gpu.FIN_AUX16_PITCH}" in gpu.fin_lanes_window(True)
    assert gpu.fin_lanes_shared(True) - before == 3 * 62 * 8 * 2
