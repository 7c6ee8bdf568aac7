// zkfarm-queue-sim: many simulated hosts against one PostgreSQL queue
// (docs/scaling.md). Each host is a thread with its own connection and the
// real PgQueue: it claims partitions into leases, "proves" them (a fake
// 256-byte proof after --work-ms) and stores them under their lease; every
// second it reads the change feed, every lease/3 it renews and heartbeats,
// every lease/2 it expires leases, as zkfarmd's cluster loop does. No workers,
// no files: what is measured is the queue.
//
// A run: --jobs × --partitions queued, then a baseline of ONE host for
// --baseline-seconds, then --hosts hosts for --seconds. Printed: claims/s of
// each phase and their ratio, p50/p99/max of one claim call and of one
// complete call (ms, the steady clock around each call), and a check that no
// partition was stored twice. bench/queue_sim.sh starts a server for it.
#include <CLI/CLI.hpp>
#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "supervisor/ledger/pg_queue.hpp"

using namespace zkfarm::supervisor;
using Clock = std::chrono::steady_clock;

namespace {

struct Samples {
  std::vector<double> claim_ms, complete_ms;
  uint64_t claims = 0, stored = 0, fenced = 0, errors = 0;
  void add(const Samples& o) {
    claim_ms.insert(claim_ms.end(), o.claim_ms.begin(), o.claim_ms.end());
    complete_ms.insert(complete_ms.end(), o.complete_ms.begin(), o.complete_ms.end());
    claims += o.claims;
    stored += o.stored;
    fenced += o.fenced;
    errors += o.errors;
  }
};

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// One simulated host until `stop`.
Samples run_host(const PgOptions& base, int n, unsigned batch, unsigned work_ms, const std::atomic<bool>& stop,
                 std::atomic<int>& connected, const std::atomic<bool>& go) {
  PgOptions o = base;
  o.host_id = "sim-" + std::to_string(n);
  Samples s;
  PgQueue q(o);
  ++connected;
  while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto lease = std::chrono::seconds(o.lease_seconds);
  auto next_sync = Clock::now(), next_renew = Clock::now() + lease / 3, next_expire = Clock::now() + lease / 2;
  std::string snapshot;
  while (!stop) {
    try {
      const auto now = Clock::now();
      if (now >= next_sync) {
        q.sweep(std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count());
        snapshot = q.changes_since(snapshot).snapshot;
        next_sync = now + std::chrono::seconds(1);
      }
      if (now >= next_renew) {
        q.renew({}, "running");
        next_renew = now + lease / 3;
      }
      if (now >= next_expire) {
        q.expire_leases();
        next_expire = now + lease / 2;
      }
      const auto t0 = Clock::now();
      auto claimed = q.claim(batch);
      s.claim_ms.push_back(ms_since(t0));
      if (claimed.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // an idle host's poll
        continue;
      }
      s.claims += claimed.size();
      if (work_ms) std::this_thread::sleep_for(std::chrono::milliseconds(work_ms));
      for (const auto& c : claimed) {
        ProofRecord r;
        r.proof = std::string(256, char('a' + n % 26));
        r.proved_ms = 1;
        r.lease_token = c.lease.token;
        const auto t1 = Clock::now();
        const CompleteResult done = q.complete(c.lease.job, c.lease.index, r);
        s.complete_ms.push_back(ms_since(t1));
        (done.stored == ProofStored::kStored ? s.stored : s.fenced) += 1;
      }
    } catch (const std::exception& e) {
      ++s.errors;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return s;
}

Samples phase(const PgOptions& base, int hosts, int first_id, unsigned batch, unsigned work_ms, double seconds,
              double* claims_per_s) {
  std::atomic<bool> stop{false}, go{false};
  std::mutex m;
  Samples all;
  std::vector<std::thread> threads;
  // Connect every host first (100 connections take a moment), then measure.
  std::atomic<int> connected{0};
  for (int h = 0; h < hosts; ++h)
    threads.emplace_back([&, h] {
      Samples s;
      try {
        s = run_host(base, first_id + h, batch, work_ms, stop, connected, go);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "host %d: %s\n", first_id + h, e.what());
        ++connected;
        s.errors = 1;
      }
      std::lock_guard<std::mutex> lock(m);
      all.add(s);
    });
  while (connected < hosts) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto t0 = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  *claims_per_s = double(all.claims) / wall;
  return all;
}

void print(const char* name, int hosts, const Samples& s, double rate) {
  std::printf("%-9s hosts %4d  claims %8llu  claims/s %8.0f  claim ms p50 %6.2f p99 %6.2f max %7.2f  "
              "complete ms p50 %6.2f p99 %6.2f max %7.2f  fenced %llu errors %llu\n",
              name, hosts, (unsigned long long)s.claims, rate, pct(s.claim_ms, 0.5), pct(s.claim_ms, 0.99),
              pct(s.claim_ms, 1.0), pct(s.complete_ms, 0.5), pct(s.complete_ms, 0.99), pct(s.complete_ms, 1.0),
              (unsigned long long)s.fenced, (unsigned long long)s.errors);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zkfarm-queue-sim: simulated hosts against one PostgreSQL queue (docs/scaling.md)"};
  std::string url;
  int hosts = 100;
  unsigned jobs = 400, partitions = 200, batch = 1, work_ms = 0, lease = 30;
  double seconds = 20, baseline_seconds = 5;
  app.add_option("--url", url, "the queue (a fresh database: the run fills it)")->required();
  app.add_option("--hosts", hosts, "simulated hosts, one connection each");
  app.add_option("--jobs", jobs, "jobs queued before the run");
  app.add_option("--partitions", partitions, "partitions per job");
  app.add_option("--batch", batch, "partitions one claim asks for");
  app.add_option("--work-ms", work_ms, "a claim's fake proving time");
  app.add_option("--lease", lease, "lease_seconds");
  app.add_option("--seconds", seconds, "the many-host phase");
  app.add_option("--baseline-seconds", baseline_seconds, "the one-host phase before it");
  CLI11_PARSE(app, argc, argv);

  PgOptions o;
  o.url = url;
  o.version = "sim";
  o.lease_seconds = lease;
  o.host_id = "sim-setup";
  try {
    PgQueue setup(o);
    const auto t0 = Clock::now();
    for (unsigned j = 0; j < jobs; ++j) {
      Job job;
      job.priority = Priority(j % 4);
      job.zkey_sha256 = std::string(64, 'a');
      job.zkey_source = "/sim.zkey";
      job.out = "/sim";
      job.n_public = 1;
      job.slot_bytes = 64;
      job.submitted_ms = 1;
      job.parts.resize(partitions);
      for (auto& p : job.parts) {
        p.wtns = "jobs/sim/x.wtns";
        p.wtns_sha256 = std::string(64, 'b');
        p.public_json = "[\"1\"]";
      }
      setup.add_job(job);
    }
    std::printf("queued %u jobs x %u partitions in %.1f s\n", jobs, partitions,
                std::chrono::duration<double>(Clock::now() - t0).count());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm-queue-sim: %s\n", e.what());
    return 1;
  }
  double base_rate = 0, rate = 0;
  Samples base = phase(o, 1, 0, batch, work_ms, baseline_seconds, &base_rate);
  print("baseline", 1, base, base_rate);
  Samples many = phase(o, hosts, 1, batch, work_ms, seconds, &rate);
  print("cluster", hosts, many, rate);
  std::printf("ratio     %.2fx the one-host claims/s (same run, same database)\n", base_rate > 0 ? rate / base_rate : 0);
  // Exactly once: no partition has two proofs (the primary key), and every stored count matches the table.
  PGconn* c = PQconnectdb(url.c_str());
  PGresult* r = PQexec(c, "SELECT count(*), count(DISTINCT (job_id, idx)) FROM zkfarm_proofs");
  const bool ok = PQresultStatus(r) == PGRES_TUPLES_OK &&
                  std::string(PQgetvalue(r, 0, 0)) == std::string(PQgetvalue(r, 0, 1)) &&
                  std::stoull(PQgetvalue(r, 0, 0)) == base.stored + many.stored;
  std::printf("proofs    %s stored, each partition once: %s\n", PQgetvalue(r, 0, 0), ok ? "yes" : "NO");
  PQclear(r);
  PQfinish(c);
  return ok ? 0 : 1;
}
