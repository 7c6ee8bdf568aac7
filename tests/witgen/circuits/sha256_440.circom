pragma circom 2.0.0;
include "circomlib/circuits/sha256/sha256.circom";
// circomlib's SHA-256 of a 55-byte message (one block with its padding);
// the 256 digest bits are public outputs.
template Digest(n) {
    signal input in[n];
    signal output out[256];
    component h = Sha256(n);
    for (var i = 0; i < n; i++) h.in[i] <== in[i];
    for (var i = 0; i < 256; i++) out[i] <== h.out[i];
}
component main = Digest(440);
