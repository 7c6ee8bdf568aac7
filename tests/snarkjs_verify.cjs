// Verifies Groth16 proofs with snarkjs's own verifier (the code behind
// `snarkjs groth16 verify`), many in one Node process to save start-up time.
//   node tests/snarkjs_verify.cjs VKEY PUBLIC PROOF [VKEY PUBLIC PROOF ...]
// Prints "OK <proof>" or "INVALID <proof>" per triple; exits 0 if all are OK,
// 1 if any is invalid, 2 on a usage or read error.
const path = require("path");
const fs = require("fs");
const snarkjs = require(path.join(__dirname, "..", "node_modules", "snarkjs"));

async function main(args) {
  if (args.length === 0 || args.length % 3 !== 0) {
    console.error("usage: snarkjs_verify.cjs VKEY PUBLIC PROOF [...]");
    return 2;
  }
  let bad = 0;
  for (let i = 0; i < args.length; i += 3) {
    const vkey = JSON.parse(fs.readFileSync(args[i], "utf8"));
    const pub = JSON.parse(fs.readFileSync(args[i + 1], "utf8"));
    const proof = JSON.parse(fs.readFileSync(args[i + 2], "utf8"));
    const ok = await snarkjs.groth16.verify(vkey, pub, proof);
    console.log((ok ? "OK " : "INVALID ") + args[i + 2]);
    if (!ok) bad++;
  }
  return bad ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err && err.message ? err.message : err);
    process.exit(2);
  });
