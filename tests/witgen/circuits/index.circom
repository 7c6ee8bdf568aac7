pragma circom 2.0.0;
// A value picked by an input-driven index (issue 32): no static graph can
// say which; the circuit must stay on its generator, and be right.
template Pick() {
    signal input sel;
    signal input v[4];
    signal output out;
    var table[4] = [v[0] * 2, v[1] + 3, v[2] * v[3], 7];
    out <-- table[sel];
}
component main = Pick();
