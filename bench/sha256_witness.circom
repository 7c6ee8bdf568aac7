pragma circom 2.0.0;
include "sha256/sha256.circom";
// SHA-256 of a 2-block (1024-bit) message: a circuit whose witness is all
// bits, 0 and 1 (bench/make_witness_scalars.sh; its values are one
// real-witness row of bench/gpu.sh's MSMs).
template Main() {
  signal input in[1024];
  signal output out[256];
  component h = Sha256(1024);
  for (var i = 0; i < 1024; i++) h.in[i] <== in[i];
  for (var i = 0; i < 256; i++) out[i] <== h.out[i];
}
component main = Main();
