"""Loop energies and eval_structure: hand-checked examples per loop type, then ViennaRNA on many structures.

The hand examples add up values read off rnapipe/params/rna_turner2004.par (quoted in each comment, with
the table and the row/column used); they do not come from rnapipe's code.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from rnapipe.energy import eval_structure
from rnapipe.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# hairpin of 5 closed by C-G with A...A inside: hairpin[5] = 570; mismatch_hairpin CG block, row A, col A = -150
HP5 = 570 - 150

HAND = [
    # (name, sequence, structure, dangles, temperature, hand value in dcal/mol)
    ("hairpin", "CAAAAAG", "(.....)", 2, 37.0, HP5),
    # stack: C1-G9 on C2-G8: stack CG row, GC column = -330
    ("stack", "CCAAAAAGG", "((.....))", 2, 37.0, -330 + HP5),
    # bulge of 1: bulge[1] = 380 plus the stack across it, stack[CG][GC] = -330
    ("bulge1", "CACAAAAAGG", "(.(.....))", 2, 37.0, 380 - 330 + HP5),
    # bulge of 2: bulge[2] = 280; CG pairs get no terminal AU penalty
    ("bulge2", "CAACAAAAAGG", "(..(.....))", 2, 37.0, 280 + HP5),
    # 1x1: int11 block "CG..GC", row A, col A = 90
    ("int11", "CACAAAAAGAG", "(.(.....).)", 2, 37.0, 90 + HP5),
    # 1x2: int21 block "CG.A..GC" (5' unpaired A), row A (3' side next to the inner pair), col A = 250
    ("int21", "CACAAAAAGAAG", "(.(.....)..)", 2, 37.0, 250 + HP5),
    # 2x2: int22 block "CG.AA..GC", row A, col A = 130
    ("int22", "CAACAAAAAGAAG", "(..(.....)..)", 2, 37.0, 130 + HP5),
    # 3x3 generic: internal[6] = 200, Ninio 0 (symmetric); mismatch_internal CG block row G col A = -100,
    # GC block row A col A = 0
    ("generic3x3", "CGAACAAAAAGAAAG", "(...(.....)...)", 2, 37.0, 200 - 100 + 0 + HP5),
    # 1x4 loop: internal[5] = 200 (size + 1 as ViennaRNA counts 1xn loops), Ninio min(300, 3 * 60) = 180;
    # mismatch_internal_1n CG row A col A = 0 and
    # GC row A col A = 0 (the 1n table holds terminal-AU-like terms only)
    ("int1x4", "CACAAAAAGAAAAG", "(.(.....)....)", 2, 37.0, 200 + 180 + HP5),
    # multiloop G1-C16 with branches C2-G8, C9-G15: ML closing 930, three branches at ML intern -90 each;
    # d2 mismatches from mismatch_multi, CG block row G col C = -110 for every branch here (closing pair seen
    # from inside is CG with G15 on its 5' side and C2 on its 3' side); exterior G1-C16 has no neighbours
    ("multiloop", "GCAAAAAGCAAAAAGC", "((.....)(.....))", 2, 37.0, 930 + 3 * (-90) + 3 * (-110) + 2 * HP5),
    # same with dangles=0: no mismatches
    ("multiloop_d0", "GCAAAAAGCAAAAAGC", "((.....)(.....))", 0, 37.0, 930 + 3 * (-90) + 2 * HP5),
    # exterior loop, d2: mismatch_exterior CG block row A col A = -110
    ("exterior_d2", "ACAAAAAGA", ".(.....).", 2, 37.0, -110 + HP5),
    # exterior, only a 3' neighbour: dangle3 CG row, A column = -110
    ("exterior_dangle3", "CAAAAAGA", "(.....).", 2, 37.0, -110 + HP5),
    # exterior, only a 5' neighbour: dangle5 CG row, A column = DEF = -50
    ("exterior_dangle5", "ACAAAAAG", ".(.....)", 2, 37.0, -50 + HP5),
    ("exterior_d0", "ACAAAAAGA", ".(.....).", 0, 37.0, HP5),
    # special hairpins: the table value is the whole loop. Tetraloop CAACGG 550
    ("tetraloop", "CAACGG", "(....)", 2, 37.0, 550),
    # Triloop CAACG 680
    ("triloop", "CAACG", "(...)", 2, 37.0, 680),
    # Hexaloop ACAGUACU 280, plus the exterior terminal AU penalty 50 for the closing A-U
    ("hexaloop", "ACAGUACU", "(......)", 2, 37.0, 280 + 50),
    # ordinary triloop: hairpin[3] = 540, terminal AU 50 inside, no mismatch; exterior terminal AU 50
    ("triloop_plain", "AAAAU", "(...)", 2, 37.0, 540 + 50 + 50),
    # hairpin of 40: hairpin[30] = 770 + (int)(107.856 * ln(40/30)) = 770 + 31; mismatch CG/A/A -150
    ("hairpin40", "C" + "A" * 40 + "G", "(" + "." * 40 + ")", 2, 37.0, 770 + int(107.856 * math.log(40 / 30)) - 150),
    # 60 °C: stack CG/GC dG37 -330, dH -1340: -1340 - (-1340 + 330) * 333.15/310.15 truncated; the hairpin
    # with hairpin[5] dG 570 dH 360 and mismatch CG/A/A dG -150 dH -910 (mismatch_hairpin_enthalpies,
    # CG block row A col A)
    ("stack_60C", "CCAAAAAGG", "((.....))", 2, 60.0,
     int(-1340 - (-1340 + 330) * (333.15 / 310.15)) + int(360 - (360 - 570) * (333.15 / 310.15))
     + int(-910 - (-910 + 150) * (333.15 / 310.15))),
]


@pytest.mark.parametrize("name,seq,db,dangles,temp,expected", HAND, ids=[h[0] for h in HAND])
def test_hand_checked_loop(name, seq, db, dangles, temp, expected):
    assert eval_structure(seq, db, temperature=temp, dangles=dangles) == expected


@pytest.mark.parametrize("name,seq,db,dangles,temp,expected", HAND, ids=[h[0] for h in HAND])
def test_hand_values_agree_with_viennarna(name, seq, db, dangles, temp, expected):
    RNA = pytest.importorskip("RNA")
    md = RNA.md()
    md.temperature = temp
    md.dangles = dangles
    assert round(RNA.fold_compound(seq, md).eval_structure(db) * 100) == expected


def test_rejects_unreadable_structures():
    """Non-canonical pairs and short hairpins are scored as RNAeval scores them (tests/test_eval.py); a
    structure that cannot be read is refused."""
    with pytest.raises(InputError, match="unbalanced"):
        eval_structure("CAAAAAG", "((....)")
    with pytest.raises(InputError, match="has 7 nt"):
        eval_structure("CAAAAAG", "(....)")


def test_open_chain_is_zero():
    assert eval_structure("ACGUN", ".....") == 0


def _vienna_energy(RNA, seq, db, temp, dangles):
    md = RNA.md()
    md.temperature = temp
    md.dangles = dangles
    return round(RNA.fold_compound(seq, md).eval_structure(db) * 100)


@pytest.mark.parametrize("temp,dangles,count", [(37.0, 2, 400), (37.0, 0, 150), (20.0, 2, 150), (60.0, 2, 150)])
def test_eval_matches_viennarna_on_its_structures(temp, dangles, count):
    """Energy of ViennaRNA's own MFE structures (and of suboptimal ones, which reach loop types an MFE rarely
    uses) agrees with ViennaRNA's energy_of_struct."""
    RNA = pytest.importorskip("RNA")
    rng = random.Random(11 + int(temp) + dangles)
    md = RNA.md()
    md.temperature = temp
    md.dangles = dangles
    checked = 0
    for _ in range(count):
        n = rng.randint(5, 160)
        seq = "".join(rng.choice("ACGU") for _ in range(n))
        if rng.random() < 0.1:
            k = rng.randrange(n)
            seq = seq[:k] + "N" + seq[k + 1:]
        fc = RNA.fold_compound(seq, md)
        structures = [fc.mfe()[0]]
        if n <= 60:
            structures += [s.structure for s in fc.subopt(150)[:5]]
        for db in structures:
            assert eval_structure(seq, db, temperature=temp, dangles=dangles) == round(fc.eval_structure(db) * 100), \
                (seq, db)
            checked += 1
    assert checked >= count


def test_eval_matches_viennarna_on_known_structures():
    """Real sequences with their published structures."""
    RNA = pytest.importorskip("RNA")
    files = sorted((DATA / "known").glob("*.dbn")) if DATA.is_dir() else []
    if not files:
        pytest.skip("../shared/data/known is not here")
    checked = 0
    for path in files:
        lines = path.read_text().split("\n")
        for k in range(0, len(lines) - 2, 3):
            seq, db = lines[k + 1].strip().upper().replace("T", "U"), lines[k + 2].strip()
            if len(seq) != len(db):
                continue
            try:
                ours = eval_structure(seq, db)
            except InputError:
                continue
            assert ours == _vienna_energy(RNA, seq, db, 37.0, 2), (path.name, seq, db)
            checked += 1
            if checked % 200 == 0 and checked >= 600:
                break
    assert checked > 100
