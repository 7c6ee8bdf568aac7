#pragma once
// The verbs of zkfarmctl: each sends its request(s) through a Client, writes
// its output (results on stdout, diagnostics and progress on stderr) and
// returns the exit code (ctl/exit_codes.hpp). Errors from the client
// (CtlError) and malformed reply fields (protocol::ProtocolError) are thrown
// to main, which prints them. verbs.cpp: the one-request verbs; waiting.cpp:
// the verbs that wait (wait, ready, stop/restart/upgrade --wait, drain --wait).
#include <cstdint>
#include <string>
#include <vector>

#include "ctl/client.hpp"

namespace zkfarm::ctl {

/// `submit`: the files of a job as given on the command line: a key and
/// witnesses, or a registered circuit and circom inputs.
struct SubmitOptions {
  std::string zkey;               ///< proving key (.zkey)
  std::vector<std::string> wtns;  ///< witnesses (.wtns), one partition each
  std::string circuit;            ///< a circuit registered with `circuit add`
  std::vector<std::string> inputs;  ///< circom input.json files, one partition each
  std::string priority = "normal";  ///< low, normal, high or critical
  std::string out;                ///< proof folder; empty: $PWD/proofs
  std::string idempotency_key;    ///< --api only: the same key returns the same job
  double busy_timeout_s = 60;     ///< how long a "busy" refusal is retried (backoff 0.2 s .. 2 s); then exit 75
};

/// How long a waiting verb waits: `timeout_s` < 0 means for ever.
struct WaitLimit {
  double timeout_s = -1;
  bool quiet = false;  ///< no progress output at all
};

/// `wait`: which job and for how long.
struct WaitOptions {
  uint64_t job = 0;
  double timeout_s = -1;  ///< < 0: wait forever
  bool quiet = false;     ///< no progress output at all
};

/// Makes a path absolute against the current directory (lexically normal,
/// not resolving symlinks; the file need not exist).
std::string absolute_path(const std::string& path);

/// submit: creates the output folder with the caller's rights, sends
/// absolute paths, prints the job id alone on stdout.
int run_submit(Caller& client, const SubmitOptions& opt);

/// wait: long-polls the job (`job` with wait_ms: the reply comes when it
/// changes); progress on stderr (a bar redrawn in place on a terminal, a line
/// per change otherwise); for a job zkfarmd does not deliver, writes its
/// results into its OUT as the caller (when the caller submitted it). 0 done,
/// 1 failed or cancelled, 3 zkfarmd stopped before the job ended (it stays
/// in the journal), 4 timeout.
int run_wait(Caller& client, const WaitOptions& opt);

/// status: tables for people, or the status object as JSON. With a
/// `worker` id: that worker alone (its object with --json) and, for people,
/// its last `log_lines` lines in zkfarmd's log (the file the reply's
/// log_file names, read as the caller). An unknown worker: CtlError exit 1
/// with the closest id.
int run_status(Caller& client, bool json, const std::string& worker = "", size_t log_lines = 10);

/// `logs [-n N] [-f]`: zkfarmd's log (the status reply's log_file) on
/// stdout: all of it, or its last `lines` (>= 0); with `follow_it` the last
/// 10 (or `lines`) and then what is appended, for ever, across logrotate.
int run_logs(Caller& client, long lines, bool follow_it);

/// `jobs` filters and paging (docs/protocol.md, request "jobs").
struct JobsOptions {
  std::string state;     ///< "" or a job state
  unsigned limit = 0;    ///< 0: the supervisor's default (100)
  uint64_t before = 0;   ///< 0: from the newest
  std::string since;     ///< "" or a time: "2h", "30m", "1d", "2026-12-01", "2026-12-01T10:00[:00][Z]", Unix ms
};
/// Unix ms from a --since value (a duration before now, a date or date-time
/// in local time or with a trailing Z for UTC, or Unix ms); throws CtlError
/// (exit 2) naming the value when it is none of these.
uint64_t parse_since(const std::string& text);
/// jobs: the jobs table, or the list as JSON.
int run_jobs(Caller& client, bool json, const JobsOptions& opt);

/// cancel: drops a job's queued partitions; prints a confirmation.
int run_cancel(Caller& client, uint64_t job);

/// `stop [--now] [--timeout S] [--wait [--wait-timeout S]]`: asks zkfarmd to
/// stop gracefully (in-flight partitions get `drain_timeout_s` instead of
/// drain_timeout_ms when given), or with `now` at once (every worker
/// killed, as `kill` without a worker did). With wait: shows the stop's
/// progress and returns when zkfarmd's process has exited and its state
/// lock is free (ctl/exit_watch.hpp), so that zkfarmd may start again at
/// once: 0 when it stopped cleanly, 1 when it reported a failure (GPU memory
/// not released) or died without an answer, 4 when `limit` passed first.
int run_stop(Client& client, std::optional<uint64_t> drain_timeout_s, bool now, bool wait, const WaitLimit& limit);

/// `drain [--wait] [--timeout S]`: no new partitions start; with --wait, polls
/// status until no partition is in flight (exit 0) or S seconds pass (exit 4).
/// `farm`: how messages name it ("zkfarmd at DIR", or the API's URL with
/// --api, where an operator token may drain).
int run_drain(Caller& client, const std::string& farm, bool wait, double timeout_s);
/// `resume`: partitions start again (`farm` as for run_drain).
int run_resume(Caller& client, const std::string& farm);
/// `kill WORKER`: SIGKILL to that worker (zkfarmd requeues what it held and
/// restarts it as after a crash). Without a worker: the old spelling of
/// `stop --now` (a note on stderr says so).
int run_kill(Client& client, const std::string& worker);
/// `restart WORKER|synth|gpu|all [--wait]` and `upgrade [--synth PATH] [--gpu
/// PATH] [--wait]`: a rolling replacement, one worker at a time. With wait:
/// shows its progress and returns when it ends: 0 done, 1 failed (an upgrade
/// rolled back: the reason on stderr), 3 zkfarmd stopped meanwhile, 4 timeout.
int run_restart(Client& client, const std::string& target, bool wait, const WaitLimit& limit);
int run_upgrade(Client& client, const std::string& synth, const std::string& gpu, bool wait, const WaitLimit& limit);

/// `ready [--wait] [--timeout S]`: 0 when zkfarmd is ready (intake open and
/// every worker READY, as /readyz), 1 (with why) when it runs but is not,
/// 3 when none runs. With wait: polls (a zkfarmd still starting, with no
/// socket yet, is waited for too) until ready (0) or S seconds pass (4).
int run_ready(const std::string& state_dir, int timeout_ms, bool wait, const WaitLimit& limit);

/// `circuit add NAME --zkey KEY (--wasm FILE | --c DIR)`: registers a circuit
/// (zkfarmd copies the key and the generator's sources, builds the generator
/// once, checks it against the key); waits for the build, up to 30 minutes
/// beyond --timeout-ms. Prints what was added.
struct CircuitAddOptions {
  std::string name, zkey, wasm, c_dir;
  std::vector<std::string> test_inputs;  ///< --test-input: the witness graph is checked on these first
};
int run_circuit_add(Caller& client, const CircuitAddOptions& opt);
/// `circuit list [--json]`: the registered circuits.
int run_circuit_list(Caller& client, bool json);
/// `circuit remove NAME`: forgets it (jobs accepted with it go on).
int run_circuit_remove(Caller& client, const std::string& name);

/// `result JOB [--out DIR] [--json]`: the job's proofs from zkfarmd's
/// journal, written into DIR (made absolute; "" : $PWD/proofs, as submit) by
/// zkfarmctl with the caller's rights. With `json`, stdout is one object:
/// {"job", "out", "results": [{"partition", "proof", "public", "timing"}]}
/// (write_results' listing). Exit 0, or 1 if the job is unknown or not done
/// or a file cannot be written.
int run_result(Caller& client, uint64_t job, const std::string& out, bool json = false);

}  // namespace zkfarm::ctl
