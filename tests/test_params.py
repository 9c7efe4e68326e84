"""Parameter files: strict parsing, symmetry, temperature rescaling, and agreement with ViennaRNA's own values."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rnapipe import params
from rnapipe.errors import InputError
from rnapipe.params import parser

PACKAGED = params.default_path()


def _tokens_by_section(text: str) -> dict[str, list[str]]:
    """An independent reading of the file: C comments dropped, whitespace-split tokens per '# name' section."""
    out: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines()[1:]:
        if line.startswith("#"):
            name = line[1:].strip()
            out[name] = []
            continue
        line = re.sub(r"/\*.*?\*/", "", line)
        if name is not None:
            out[name].extend(line.split())
    return out


def test_packaged_file_parses_with_expected_shapes():
    ps = params.load()
    assert ps.dg["stack"].shape == (8, 8)
    assert ps.dg["int22"].shape == (8, 8, 5, 5, 5, 5)
    assert ps.scalars["ml_closing"] == (930, 3000)
    assert ps.scalars["terminal_au"] == (50, 370)
    assert ps.max_ninio == 300
    assert ps.loops["Tetraloops"]["CAACGG"] == (550, 690)
    assert len(ps.loops["Triloops"]) == 2 and len(ps.loops["Hexaloops"]) == 4


def test_stack_is_symmetric_in_packaged_file():
    s = params.load().dg["stack"]
    assert (s == s.T).all()


def test_token_round_trip_against_file_text():
    """Every number of the stack, loop-size, dangle and int11 sections lands in the array slot the file
    layout puts it in (row-major over the slice ViennaRNA fills)."""
    text = PACKAGED.read_text()
    sections = _tokens_by_section(text)
    ps = params.load()

    def ints(tokens):
        return [{"DEF": -50, "INF": 10_000_000}.get(t, None) if not re.fullmatch(r"-?\d+", t) else int(t)
                for t in tokens]

    assert ints(sections["stack"]) == ps.dg["stack"][1:, 1:].reshape(-1).tolist()
    assert ints(sections["stack_enthalpies"]) == ps.dh["stack"][1:, 1:].reshape(-1).tolist()
    assert ints(sections["hairpin"]) == ps.dg["hairpin"].tolist()
    assert ints(sections["internal_enthalpies"]) == ps.dh["interior"].tolist()
    assert ints(sections["dangle5"]) == ps.dg["dangle5"][1:].reshape(-1).tolist()
    assert ints(sections["mismatch_multi"]) == ps.dg["mismatch_multi"][1:].reshape(-1).tolist()
    assert ints(sections["int11"]) == ps.dg["int11"][1:, 1:].reshape(-1).tolist()
    assert ints(sections["int21"]) == ps.dg["int21"][1:, 1:].reshape(-1).tolist()
    assert ints(sections["int22"]) == ps.dg["int22"][1:7, 1:7, 1:, 1:, 1:, 1:].reshape(-1).tolist()


def test_corrupted_token_rejected_with_file_and_line(tmp_path):
    # the published corruption: '-140' in the stack table turned into '-1i40'
    lines = PACKAGED.read_text().splitlines()
    start = lines.index("# stack")
    row = start + 2                                     # header, column comment, then the CG row
    assert "-140" in lines[row]
    lines[row] = lines[row].replace("-140", "-1i40", 1)
    bad = tmp_path / "published.par"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        params.parser.read(bad)
    message = str(err.value)
    assert "published.par" in message and f"line {row + 1}" in message and "-1i40" in message


def test_asymmetric_stack_rejected(tmp_path):
    lines = PACKAGED.read_text().splitlines()
    row = lines.index("# stack") + 2
    lines[row] = lines[row].replace("-330", "-331", 1)   # stack[CG][GC] no longer equals stack[GC][CG]
    bad = tmp_path / "asym.par"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="not symmetric"):
        params.parser.read(bad)


def test_wrong_value_count_rejected(tmp_path):
    text = PACKAGED.read_text().replace("# NINIO\n/* Ninio = MIN(max, m*|n1-n2| */\n", "# NINIO\n", 1)
    lines = text.splitlines()
    k = lines.index("# NINIO")
    lines[k + 2] = lines[k + 2] + " 7"
    bad = tmp_path / "count.par"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="NINIO"):
        params.parser.read(bad)


def test_missing_header_and_missing_file(tmp_path):
    bad = tmp_path / "noheader.par"
    bad.write_text("# stack\n")
    with pytest.raises(InputError, match="line 1"):
        params.parser.read(bad)
    with pytest.raises(InputError, match="not found"):
        params.parser.read(tmp_path / "nothing.par")


def test_partial_file_keeps_defaults(tmp_path):
    """A file with only some sections changes those and keeps Turner 2004 elsewhere, as RNAfold -P does."""
    f = tmp_path / "ml.par"
    f.write_text("## RNAfold parameter file v2.0\n\n# ML_params\n 0 0 1000 3000 -90 -220\n\n# END\n")
    ps = params.load(f)
    assert ps.scalars["ml_closing"] == (1000, 3000)
    assert (ps.dg["int22"] == params.load().dg["int22"]).all()


def test_rescale_by_hand():
    # stack CG/CG: dG37 -240, dH -1060; at 20 °C: -1060 - (-1060 + 240) * 293.15 / 310.15 = -284.95 -> -284
    t = params.tables(temperature=20.0)
    assert t.stack[1, 1] == -284
    assert params.tables().stack[1, 1] == -240
    # dangles are clipped to <= 0 (ViennaRNA: "must be <= 0"), mismatches of multiloops too
    hot = params.tables(temperature=95.0)
    assert hot.dangle5.max() <= 0 and hot.mismatch_multi.max() <= 0


def test_tables_are_frozen_int32():
    t = params.tables()
    for name, value in t._asdict().items():
        if isinstance(value, np.ndarray):
            assert not value.flags.writeable, name
            assert value.dtype in (np.int32, np.int8), name


@pytest.mark.parametrize("temperature", [37.0, 20.0, 60.0, 0.0, 73.3])
@pytest.mark.parametrize("dangles", [2, 0])
def test_scaled_tables_equal_viennarna(temperature, dangles):
    """The tables ViennaRNA itself uses (vrna_param_t via RNA.param) equal ours, field by field, where the
    Python bindings expose them (the 3-D and larger tables are checked through energies in test_energy)."""
    RNA = pytest.importorskip("RNA")
    md = RNA.md()
    md.temperature = temperature
    md.dangles = dangles
    p = RNA.param(md)
    t = params.tables(temperature=temperature, dangles=dangles)
    assert np.array_equal(np.array(p.stack), t.stack)
    assert np.array_equal(np.array(p.dangle5), t.dangle5)
    assert np.array_equal(np.array(p.dangle3), t.dangle3)
    assert list(p.hairpin)[:31] == t.hairpin.tolist()
    assert list(p.bulge)[:31] == t.bulge.tolist()
    assert list(p.internal_loop)[:31] == t.interior.tolist()
    sc = t.scalars
    assert (p.MLbase, p.MLclosing, p.MLintern[1], p.ninio[2], p.TerminalAU, p.DuplexInit) == (
        sc[params.SCALAR_ML_BASE], sc[params.SCALAR_ML_CLOSING], sc[params.SCALAR_ML_INTERN],
        sc[params.SCALAR_NINIO], sc[params.SCALAR_TERMINAL_AU], sc[params.SCALAR_DUPLEX_INIT])
    assert p.lxc == t.lxc
    assert list(p.Tetraloop_E)[:len(t.tetra_e)] == t.tetra_e.tolist()
    assert list(p.Triloop_E)[:len(t.tri_e)] == t.tri_e.tolist()
    assert list(p.Hexaloop_E)[:len(t.hexa_e)] == t.hexa_e.tolist()


def test_packaged_file_is_viennarna_default_export(tmp_path):
    """The shipped file is byte for byte what ViennaRNA writes for its compiled-in Turner 2004 set."""
    RNA = pytest.importorskip("RNA")
    out = tmp_path / "export.par"
    RNA.params_load_RNA_Turner2004()
    RNA.params_save(str(out))
    assert out.read_text() == PACKAGED.read_text()


def test_viennarna_reads_our_file_to_the_same_set(tmp_path):
    """Round trip through ViennaRNA's reader: load our file, write it back, same text."""
    RNA = pytest.importorskip("RNA")
    out = tmp_path / "again.par"
    try:
        assert RNA.params_load(str(PACKAGED))
        RNA.params_save(str(out))
    finally:
        RNA.params_load_RNA_Turner2004()
    assert out.read_text() == PACKAGED.read_text()


def test_int22_nonstandard_entries_are_maxima():
    """update_nst: an N inside a 2x2 loop costs the worst case over A, C, G, U at that position."""
    a = params.load().dg["int22"]
    assert a[1, 2, 0, 1, 1, 1] == a[1, 2, 1:, 1, 1, 1].max()
    assert a[1, 2, 1, 1, 1, 0] == a[1, 2, 1, 1, 1, 1:].max()
    assert a[7, 1, 1, 1, 1, 1] == a[1:7, 1, 1, 1, 1, 1].max()


def test_parser_is_strict_about_keywords():
    text = PACKAGED.read_text().replace("# hairpin\n   INF", "# hairpin\n   IMF", 1)
    with pytest.raises(InputError, match="IMF"):
        parser.parse(text, "x.par")
