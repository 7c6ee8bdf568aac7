pragma circom 2.0.0;
// A circuit whose generator can fail: an assertion on an input (a != 7), a
// log line, and a loop that never ends for loop = 1 (x doubles, never 0
// mod p; loop must be 0 to satisfy t·loop = 0). c = a·b[0] + b[1]; a is public.
template Checks() {
    signal input a;
    signal input b[2];
    signal input loop;
    signal output c;
    log("a is", a);
    assert(a != 7);
    var x = loop;
    while (x != 0) {
        x = x * 2;
    }
    signal t;
    t <-- x;
    t * loop === 0;
    c <== a * b[0] + b[1];
}
component main {public [a]} = Checks();
