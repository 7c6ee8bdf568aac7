#!/usr/bin/env python3
"""Proving through zkfarm-api with Python's `requests` (docs/api.md).

Uploads a circuit's proving key and wasm, registers the circuit, submits one
job of circom inputs (one partition per input.json), waits for it with a long
poll, and writes each partition's proof.json and public.json, which
`snarkjs groth16 verify` accepts.

    python3 docs/api_example.py --api https://prover.example:8443 \\
        --token-file ~/.zkfarm-token --ca ca.pem \\
        --zkey circuit.zkey --wasm circuit.wasm --out proofs input0.json input1.json

The tests run this file as it is (tests/api/test_api.py).
"""
import argparse
import json
import os
import sys

import requests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True, help="https://HOST:PORT of zkfarm-api")
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--ca", help="PEM file of the CA that signed the API's certificate")
    ap.add_argument("--zkey", required=True)
    ap.add_argument("--wasm", required=True)
    ap.add_argument("--name", default="example")
    ap.add_argument("--out", required=True)
    ap.add_argument("inputs", nargs="+", help="circom input.json files")
    args = ap.parse_args()

    session = requests.Session()
    with open(args.token_file) as f:
        session.headers["Authorization"] = "Bearer " + f.read().strip()
    api = args.api.rstrip("/")

    def call(method, path, **kw):
        # verify on each request: requests lets REQUESTS_CA_BUNDLE override Session.verify.
        r = session.request(method, api + path, verify=args.ca or True, **kw)
        if r.status_code >= 400:
            err = r.json().get("error", {})
            sys.exit(f"{method} {path}: HTTP {r.status_code} {err.get('code')}: {err.get('message')}")
        return r.json()

    # 1. Upload the key and the wasm: streamed from the open files.
    ids = {}
    for part in ("zkey", "wasm"):
        with open(getattr(args, part), "rb") as f:
            ids[part] = call("POST", "/v1/uploads", data=f,
                             headers={"Content-Type": "application/octet-stream"})["upload"]["id"]
    # 2. Register the circuit (zkfarmd builds its witness generator once).
    session.delete(f"{api}/v1/circuits/{args.name}", verify=args.ca or True)  # a previous run's, if any
    circuit = call("POST", "/v1/circuits", json={"name": args.name, **ids})["circuit"]
    print(f"circuit {circuit['name']}: {circuit['n_vars']} signals, {circuit['n_public']} public")
    # 3. Submit the inputs as one job; the idempotency key makes a retry safe.
    inputs = [json.load(open(p)) for p in args.inputs]
    key = "example-" + os.path.basename(args.out)
    job = call("POST", "/v1/jobs", json={"circuit": args.name, "inputs": inputs, "priority": "normal",
                                         "idempotency_key": key})["job"]
    print(f"job {job['id']}: {job['partitions']} partitions")
    # 4. Wait: each GET returns when the job changes, or after wait_ms.
    seen = {"state": "", "done": -1}
    while job["state"] not in ("done", "failed", "cancelled"):
        job = call("GET", f"/v1/jobs/{job['id']}",
                   params={"wait_ms": 20000, "seen_state": job["state"], "seen_done": job["done"]})["job"]
        if (job["state"], job["done"]) != (seen["state"], seen["done"]):
            print(f"job {job['id']}: {job['state']}, {job['done']}/{job['partitions']} proved")
            seen = {"state": job["state"], "done": job["done"]}
    if job["state"] != "done":
        sys.exit(f"job {job['id']} {job['state']}: {job.get('error')}")
    # 5. Download every partition's proof.json and public.json, a page at a time.
    os.makedirs(args.out, exist_ok=True)
    start = 0
    while start is not None:
        page = call("GET", f"/v1/jobs/{job['id']}/results", params={"from": start})
        for r in page["results"]:
            for name, text in (("proof", r["proof"]), ("public", r["public"])):
                with open(os.path.join(args.out, f"{r['partition']}.{name}.json"), "w") as f:
                    f.write(text)
        start = page["next"]
    print(f"job {job['id']}: proofs in {args.out}")


if __name__ == "__main__":
    main()
