pragma circom 2.0.0;
include "poseidon.circom";
// A chain of 64 Poseidon(2) hashes: a circuit whose witness is mostly
// full-size field elements (bench/make_witness_scalars.sh; its values are
// one real-witness row of bench/gpu.sh's MSMs).
template Main() {
  signal input in[2];
  signal output out;
  component h[64];
  for (var i = 0; i < 64; i++) {
    h[i] = Poseidon(2);
    h[i].inputs[0] <== i == 0 ? in[0] : h[i - 1].out;
    h[i].inputs[1] <== in[1];
  }
  out <== h[63].out;
}
component main = Main();
