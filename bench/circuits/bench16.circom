pragma circom 2.0.0;
include "circomlib/circuits/poseidon.circom";
include "circomlib/circuits/bitify.circom";
// zkfarm benchmark circuit: a chain of N Poseidon(2) hashes whose intermediate values are
// also decomposed with Num2Bits(254), as in Merkle-path / range-check heavy circuits; about
// half the constraints are Poseidon (non-linear S-boxes and linear MDS mixing), half bit
// decompositions. Step i:
//   a[i]   = Poseidon(h[i], x + i + low64(hbits[i-1]))
//   abits  = Num2Bits(254)(a[i])
//   h[i+1] = a[i] * low64(abits)
//   hbits  = Num2Bits(254)(h[i+1])
// with h[0] = w. One public input x, one private input w, one output out = h[N].
// N is chosen so that nConstraints > 65536: the FFT domain is 2^17.
template Bench(N) {
    signal input x;
    signal input w;
    signal output out;
    signal h[N+1];
    component hs[N];
    component na[N];
    component nh[N];
    h[0] <== w;
    var prevLow = 0;
    for (var i = 0; i < N; i++) {
        hs[i] = Poseidon(2);
        hs[i].inputs[0] <== h[i];
        hs[i].inputs[1] <== x + i + prevLow;
        na[i] = Num2Bits(254);
        na[i].in <== hs[i].out;
        var low = 0;
        var e = 1;
        for (var k = 0; k < 64; k++) {
            low += na[i].out[k] * e;
            e = e + e;
        }
        h[i+1] <== hs[i].out * low;
        nh[i] = Num2Bits(254);
        nh[i].in <== h[i+1];
        prevLow = 0;
        e = 1;
        for (var k = 0; k < 64; k++) {
            prevLow += nh[i].out[k] * e;
            e = e + e;
        }
    }
    out <== h[N];
}
component main {public [x]} = Bench(68);
