pragma circom 2.0.0;
// circomlib gadgets whose witness code branches on inputs, and every field
// operator of circom on input values (issue 32): the witness graph must give
// snarkjs's witness byte for byte, on both sides of every branch.
include "circomlib/circuits/comparators.circom";
include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/mux1.circom";
include "circomlib/circuits/multiplexer.circom";
include "circomlib/circuits/mimc.circom";
include "circomlib/circuits/babyjub.circom";
include "circomlib/circuits/poseidon.circom";

// Each operator on inputs, through `<--` (no constraint: the witness only).
template Ops() {
    signal input x;
    signal input y;
    signal input k;
    signal output o[19];
    o[0] <-- x \ (y + 1);
    o[1] <-- x % (y + 1);
    o[2] <-- x ** k;
    o[3] <-- x << k;
    o[4] <-- x >> k;
    o[5] <-- x & y;
    o[6] <-- x | y;
    o[7] <-- x ^ y;
    o[8] <-- ~x;
    o[9] <-- x < y;
    o[10] <-- x >= y;
    o[11] <-- x != 0 && y != 0;
    o[12] <-- x == 0 || y == 0;
    o[13] <-- !(x > y);
    o[14] <-- -x;
    o[15] <-- x / y;
    o[16] <-- x > y ? x - y : y - x;
    var acc = 0;
    if (x < 100) {
        acc = x * 3;
    } else {
        acc = y + 7;
        if (y == 5) { acc = acc * acc; }
    }
    o[17] <-- acc;
    o[18] <-- (x << 250) >> 3;
}

template Gadgets() {
    signal input a;
    signal input b;
    signal input s;
    signal input k;
    signal output out[10];
    component z = IsZero(); z.in <== a; out[0] <== z.out;
    component e = IsEqual(); e.in[0] <== a; e.in[1] <== b; out[1] <== e.out;
    component lt = LessThan(16); lt.in[0] <== s; lt.in[1] <== k; out[2] <== lt.out;
    component bits = Num2Bits(16); bits.in <== s;
    component num = Bits2Num(16); for (var i = 0; i < 16; i++) num.in[i] <== bits.out[i]; out[3] <== num.out;
    component dec = Decoder(4); dec.inp <== k; out[4] <== dec.success;
    component mux = Mux1(); mux.c[0] <== a; mux.c[1] <== b; mux.s <== out[2]; out[5] <== mux.out;
    component mimc = MiMC7(91); mimc.x_in <== a; mimc.k <== b; out[6] <== mimc.out;
    component add = BabyAdd();
    add.x1 <== 5299619240641551281634865583518297030282874472190772894086521144482721001553;
    add.y1 <== 16950150798460657717958625567821834550301663161624707787222815936182638968203;
    add.x2 <== 5299619240641551281634865583518297030282874472190772894086521144482721001553;
    add.y2 <== 16950150798460657717958625567821834550301663161624707787222815936182638968203;
    out[7] <== add.xout + a * 0;
    component h = Poseidon(2); h.inputs[0] <== a; h.inputs[1] <== b; out[8] <== h.out;
    component ops = Ops(); ops.x <== a; ops.y <== b; ops.k <== k;
    var sum = 0;
    for (var i = 0; i < 19; i++) sum += ops.o[i];
    out[9] <-- sum;
}
component main {public [a]} = Gadgets();
