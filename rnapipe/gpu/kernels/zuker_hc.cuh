// Hard constraints for the short kernels (zuker_short.cu includes it in its ZK_HC builds, which also define
// ZK_HC16): the per-position words made on the device from the constraint lines, as plain host+device code so that
// a C++ build can be checked against the CPU engine (tests/test_zuker_core_host.py). Kept apart from
// zuker_short.cuh so that the builds without hard constraints compile the very same text.
#pragma once
#include "zuker_short.cuh"

// The hard-constraint words (ZkHc, zuker_core.cuh) of one sequence of n nt from its constraint line (L[1 .. n],
// ASCII), as rnapipe.cpu.zuker makes them for the CPU engine (_hc_positions_into, hc_words_fill): a "( )" pair
// closing at least TURN unpaired nucleotides is kept; enc is the 5' end of the innermost kept pair around a
// position; with enforce (--enforceConstraint) the nucleotides of kept pairs and '|' may not stay unpaired; code
// is the partner, else minus the flags (bit 0: 'x' or '>', bit 1: 'x' or '<'); up and dn the unpaired runs from
// and up to the position; H[0].up the span the fill covers (span grown to the longest kept pair, at most 32767),
// H[0]'s other fields and H[n + 1]'s 0. The bracket stacks live in fields not yet written: the matching's in dn,
// the kept pairs' in up.
ZK_HD void zs_hc_words_of(const unsigned char* L, int n, ZkHc* H, bool enforce, int span) {
    for (int k = 0; k <= n + 1; ++k) H[k].code = 0;
    int top = 0;
    for (int k = 1; k <= n; ++k) {                     // the partners
        const unsigned char c = L[k];
        if (c == '(') {
            H[top++].dn = (short)k;
        } else if (c == ')' && top > 0) {
            const int i = H[--top].dn;
            if (k - i - 1 >= ZK_TURN) {
                H[i].code = (short)k;
                H[k].code = (short)i;
            }
        }
    }
    top = 0;
    int reach = span;
    for (int k = 1; k <= n; ++k) {                     // enc
        const int p = H[k].code;
        if (p && p < k) --top;
        H[k].enc = top > 0 ? H[top - 1].up : (short)0;
        if (p > k) {
            H[top++].up = (short)k;
            reach = reach > p - k + 1 ? reach : p - k + 1;
        }
    }
    int dn = 0;
    for (int k = 1; k <= n; ++k) {                     // DN and the flags
        const unsigned char c = L[k];
        const int p = H[k].code;
        dn = enforce && (c == '|' || p > 0) ? 0 : dn + 1;
        H[k].dn = (short)dn;
        if (p == 0) H[k].code = (short)-((c == 'x' || c == '>' ? 1 : 0) | (c == 'x' || c == '<' ? 2 : 0));
    }
    int up = 0;
    for (int k = n; k >= 1; --k) {                     // UP
        up = enforce && (L[k] == '|' || H[k].code > 0) ? 0 : up + 1;
        H[k].up = (short)up;
    }
    H[0].enc = 0;
    H[0].up = (short)(reach < 32767 ? reach : 32767);
    H[0].dn = 0;
    H[n + 1].enc = 0;
    H[n + 1].up = 0;
    H[n + 1].dn = 0;
}
