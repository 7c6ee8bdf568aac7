pragma circom 2.0.0;
include "circomlib/circuits/poseidon.circom";
// circomlib's Poseidon over three inputs; the hash is the public output.
template Hash3() {
    signal input in[3];
    signal output out;
    component h = Poseidon(3);
    for (var i = 0; i < 3; i++) h.inputs[i] <== in[i];
    out <== h.out;
}
component main = Hash3();
