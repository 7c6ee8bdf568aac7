pragma circom 2.1.6;

// Issue 45: a statement of two public inputs (x, y) and their product. Its
// twin statement_swapped.circom declares them in the other order, so its
// witness graph puts x's value where this circuit holds y: a graph swapped
// in makes a witness that satisfies this circuit for another statement
// (x and y exchanged), which only the statement check refuses.
template Product() {
    signal input x;
    signal input y;
    signal output z;
    z <== x * y;
}

component main {public [x, y]} = Product();
