pragma circom 2.1.6;

// statement.circom with its inputs declared in the other order (see there).
template Product() {
    signal input y;
    signal input x;
    signal output z;
    z <== x * y;
}

component main {public [x, y]} = Product();
