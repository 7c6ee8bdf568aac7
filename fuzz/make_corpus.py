#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/TARGET/ (docs/fuzzing.md).

Seeds: the small real files of tests/fixtures (keys, witnesses, constraint
systems, proofs), every message the farm sends, and hand-made frames that
reach the decoder's limits at once: deep nesting, counts and lengths of
2^32-1, large bins, ext types. Deterministic: running it again gives the same
files (names are content hashes, as libFuzzer names its own). Regression
seeds for fixed crashes live beside these (fuzz/corpus/TARGET/regress-*), as
do the inputs scripts/fuzz.sh --merge added (named by their SHA-1); neither is
touched.

Usage: fuzz/make_corpus.py   (from anywhere; needs only python3)
"""
import hashlib
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")

# BN254 base field modulus (proof coordinates are mod q, Montgomery form).
Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583


def write(target, data, name=None):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = name or "seed-" + hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


# --- MessagePack, enough of the spec for seeds -----------------------------

def mp(v):
    """MessagePack bytes of v (dict, list, str, bytes, bool, None, int, float)."""
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        if v >= 0:
            for marker, fmt, lim in ((0xCC, ">B", 1 << 8), (0xCD, ">H", 1 << 16), (0xCE, ">I", 1 << 32), (0xCF, ">Q", 1 << 64)):
                if v < lim:
                    return bytes([marker]) + struct.pack(fmt, v)
        for marker, fmt, lim in ((0xD0, ">b", 1 << 7), (0xD1, ">h", 1 << 15), (0xD2, ">i", 1 << 31), (0xD3, ">q", 1 << 63)):
            if -lim <= v:
                return bytes([marker]) + struct.pack(fmt, v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        if len(b) < 32:
            return bytes([0xA0 | len(b)]) + b
        if len(b) < 256:
            return b"\xd9" + bytes([len(b)]) + b
        return b"\xda" + struct.pack(">H", len(b)) + b
    if isinstance(v, bytes):
        if len(v) < 256:
            return b"\xc4" + bytes([len(v)]) + v
        if len(v) < 65536:
            return b"\xc5" + struct.pack(">H", len(v)) + v
        return b"\xc6" + struct.pack(">I", len(v)) + v
    if isinstance(v, list):
        head = bytes([0x90 | len(v)]) if len(v) < 16 else b"\xdc" + struct.pack(">H", len(v))
        return head + b"".join(mp(x) for x in v)
    if isinstance(v, dict):
        head = bytes([0x80 | len(v)]) if len(v) < 16 else b"\xde" + struct.pack(">H", len(v))
        return head + b"".join(mp(k) + mp(x) for k, x in v.items())
    raise TypeError(type(v))


def msg(t, **fields):
    m = {"v": 1, "t": t}
    m.update(fields)
    return m


PART = dict(job=17, partition=3, slot=2, generation=9)


def decode_seeds():
    t = "protocol_decode_fuzz"
    proof = bytes((i * 7) & 0xFF for i in range(256))
    messages = [
        msg("READY", worker="synth-0", kind="synth", version="0.1.0", pid=4242, backend="cpu"),
        msg("HEARTBEAT", worker="gpu-0"),
        msg("SYNTH", offset=1 << 33, size=3 << 20, zkey="/data/keys/chain.zkey", wtns="/data/w/0.wtns", **PART),
        msg("PROVE", offset=0, size=4096, zkey="/data/keys/chain.zkey", **PART),
        msg("SYNTH_DONE", ok=False, error="/data/w/0.wtns: section 2: value 3 not below the prime", **PART),
        msg("PROVE_DONE", ok=True, proof=proof, **PART),
        msg("SHUTDOWN"),
        msg("ABORT", **PART),
        msg("submit", zkey="/k/chain.zkey", wtns=["/w/%d.wtns" % i for i in range(20)], priority="high", out="/proofs"),
        msg("stop", timeout_s=30),
        msg("job", job=12),
        msg("REPLY", ok=True, status={"queue": {"synth": 4, "prove": 1}, "state": "running", "pid": -1},
            jobs=[{"id": 1, "state": "done", "partitions": 10, "error": None, "ratio": 0.5}]),
        msg("READY", worker="\u00e9\u20ac\U0001d11e", pid=-(1 << 40), version="", backend="x" * 40),
    ]
    for m in messages:
        write(t, mp(m))
    # Every type in one array, values at the edges of their ranges.
    every = (b"\x83" + mp("v") + mp(1) + mp("t") + mp("X") + mp("d") + b"\xdc\x00\x17" + b"\x05\xe0\xc0\xc2\xc3"
             + b"\xcc\xff" + b"\xcd\xff\xff" + b"\xce\xff\xff\xff\xff" + b"\xcf" + b"\xff" * 8
             + b"\xd0\x80" + b"\xd1\x80\x00" + b"\xd2\x80\x00\x00\x00" + b"\xd3\x80" + b"\x00" * 7
             + b"\xca\x3f\xc0\x00\x00" + b"\xcb\xc0\x04" + b"\x00" * 6
             + b"\xd9\x03abc" + b"\xda\x00\x02de" + b"\xdb\x00\x00\x00\x01f"
             + b"\xc4\x02\x00\xff" + b"\xc5\x00\x01\x7f" + b"\xc6\x00\x00\x00\x00"
             + b"\xdd\x00\x00\x00\x02\x01\x92\x02\x90" + b"\xde\x00\x01\xa1k\xdf\x00\x00\x00\x01\xa0\x80")
    write(t, every, "seed-every-type")
    # Nesting: 16 levels (the limit, accepted), 17 (refused), and deep frames
    # like the attack sweep's (500,000 levels), cut to 20,000 so that the
    # seeds stay small; deep enough to overflow a recursive reader's stack.
    def nested(n):
        return b"\x83" + mp("v") + mp(1) + mp("t") + mp("X") + mp("d") + b"\x91" * n + b"\x07"
    write(t, nested(15), "seed-depth-16")
    write(t, nested(16), "seed-depth-17")
    write(t, b"\x91" * 20000 + b"\xc0", "seed-deep-array")
    write(t, b"\x81\xa0" * 10000 + b"\xc0", "seed-deep-map")
    write(t, b"\x83" + mp("v") + mp(1) + mp("t") + mp("X") + mp("d") + b"\x81\xa1k" * 5000 + b"\x90", "seed-deep-map-in-message")
    # Counts and lengths that lie: 2^32-1 elements in 10 bytes, and friends.
    write(t, b"\xdd\xff\xff\xff\xff\x01\x02\x03\x04\x05", "seed-array32-huge")
    write(t, b"\xdf\xff\xff\xff\xff\xa0\x01\xa0\x02\xa0", "seed-map32-huge")
    write(t, b"\x81\xa1d\xdb\xff\xff\xff\xffab", "seed-str32-huge")
    write(t, b"\x81\xa1d\xc6\xff\xff\xff\xffab", "seed-bin32-huge")
    write(t, b"\x81\xa1d\xdc\xff\xff" + b"\x90" * 64, "seed-array16-short")
    # Large values: a 30 KB bin (bin 16) and a 30 KB string (str 16) in a message.
    write(t, mp(msg("PROVE_DONE", ok=True, proof=bytes(30000), **PART)), "seed-big-bin")
    write(t, mp(msg("SYNTH_DONE", ok=False, error="e" * 30000, **PART)), "seed-big-str")
    # A map of 2000 entries and an array of 6000 elements.
    write(t, mp(msg("X", d={"k%d" % i: i for i in range(2000)})), "seed-wide-map")
    write(t, mp(msg("X", d=list(range(6000)))), "seed-wide-array")
    # Ext types (refused) and a non-str key (refused).
    write(t, b"\x83" + mp("v") + mp(1) + mp("t") + mp("X") + mp("d") + b"\xd8\x01" + b"x" * 16, "seed-fixext16")
    write(t, b"\x83" + mp("v") + mp(1) + mp("t") + mp("X") + mp("d") + b"\xc9\x00\x00\x00\x02\x01xy", "seed-ext32")
    write(t, b"\x82" + mp("v") + mp(1) + b"\x01" + mp("X"), "seed-int-key")


# BLS12-381's base field modulus: its proofs have 48-byte coordinates (R = 2^384).
Q_BLS = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab


def mont(x, q=None):
    if q == Q_BLS:
        return ((x << 384) % Q_BLS).to_bytes(48, "little")
    return ((x << 256) % Q).to_bytes(32, "little")


def proof_bytes(path):
    with open(path) as f:
        p = json.load(f)
    if p.get("curve") == "bls12381":
        m = lambda x: mont(x, Q_BLS)  # noqa: E731
        a = [int(v) for v in p["pi_a"][:2]]
        b = [[int(v) for v in c] for c in p["pi_b"][:2]]
        c = [int(v) for v in p["pi_c"][:2]]
        return m(a[0]) + m(a[1]) + m(b[0][0]) + m(b[0][1]) + m(b[1][0]) + m(b[1][1]) + m(c[0]) + m(c[1])
    a = [int(v) for v in p["pi_a"][:2]]
    b = [[int(v) for v in c] for c in p["pi_b"][:2]]
    c = [int(v) for v in p["pi_c"][:2]]
    return (mont(a[0]) + mont(a[1]) + mont(b[0][0]) + mont(b[0][1]) + mont(b[1][0]) + mont(b[1][1])
            + mont(c[0]) + mont(c[1]))


def proof_seeds():
    t = "groth16_proof_fuzz"
    for name in sorted(os.listdir(FIXTURES)):
        if name.endswith(".0.proof.json"):
            write(t, proof_bytes(os.path.join(FIXTURES, name)))
    # A BLS12-381 proof (384 bytes), snarkjs's own.
    write(t, proof_bytes(os.path.join(FIXTURES, "shared", "chain_bls12381.0.proof.json")), "seed-bls12381-chain")
    write(t, bytes(256), "seed-infinity")  # three points at infinity: valid
    write(t, b"\xff" * 256, "seed-noncanonical")
    write(t, Q.to_bytes(32, "little") + bytes(224), "seed-q")


def file_seeds():
    for target, names in (
        # seed-bls12381-testkey.zkey, a BLS12-381 key of 8 constraints, is
        # checked in as made by `zkfarm-testkey --curve bls12381 --constraints 6
        # --public 1 --seed 7` (no circom fixture that small exists for it).
        ("groth16_zkey_fuzz", ["allpub.zkey", "nopub.zkey"]),
        ("groth16_wtns_fuzz", ["allpub.0.wtns", "nopub.0.wtns", "pow2.0.wtns", "manypub.0.wtns"]),
        ("groth16_r1cs_fuzz", ["allpub.r1cs", "nopub.r1cs"]),
    ):
        for n in names:
            write(target, fixture(n), "seed-" + n)
    # Containers at their limits: a header declaring 2^32-1 sections, a section
    # of size 2^64-1, and an empty section table.
    for target, magic, version in (("groth16_zkey_fuzz", b"zkey", 1), ("groth16_wtns_fuzz", b"wtns", 2),
                                   ("groth16_r1cs_fuzz", b"r1cs", 1)):
        head = magic + struct.pack("<I", version)
        write(target, head + struct.pack("<I", 0xFFFFFFFF) + struct.pack("<IQ", 1, 4) + b"\x01\x00\x00\x00", "seed-many-sections")
        write(target, head + struct.pack("<I", 1) + struct.pack("<IQ", 1, 0xFFFFFFFFFFFFFFFF), "seed-huge-section")
        write(target, head + struct.pack("<I", 0), "seed-no-sections")


if __name__ == "__main__":
    decode_seeds()
    proof_seeds()
    file_seeds()
