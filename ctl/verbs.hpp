#pragma once
// The verbs of zkfarmctl: each sends its request(s) through a Client, writes
// its output (results on stdout, diagnostics on stderr) and returns the exit
// code (ctl/exit_codes.hpp). Errors from the client (CtlError) and malformed
// reply fields (protocol::ProtocolError) are thrown to main, which prints them.
#include <cstdint>
#include <string>
#include <vector>

#include "ctl/client.hpp"

namespace zkfarm::ctl {

/// `submit`: the files of a job as given on the command line.
struct SubmitOptions {
  std::string zkey;               ///< proving key (.zkey)
  std::vector<std::string> wtns;  ///< witnesses (.wtns), one partition each
  std::string priority = "normal";  ///< low, normal, high or critical
  std::string out;                ///< proof folder; empty: $PWD/proofs
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

/// submit: sends absolute paths, prints the job id alone on stdout.
int run_submit(Client& client, const SubmitOptions& opt);

/// wait: polls the job every 100 ms; progress on stderr (a bar redrawn in
/// place on a terminal, a line per change otherwise); 0 done, 1 failed or
/// cancelled, 4 timeout.
int run_wait(Client& client, const WaitOptions& opt);

/// status: tables for people, or the status object as JSON.
int run_status(Client& client, bool json);

/// jobs: the jobs table, or the list as JSON.
/// `jobs` filters and paging (docs/protocol.md, request "jobs").
struct JobsOptions {
  std::string state;     ///< "" or a job state
  unsigned limit = 0;    ///< 0: the supervisor's default (100)
  uint64_t before = 0;   ///< 0: from the newest
};
int run_jobs(Client& client, bool json, const JobsOptions& opt);

/// cancel: drops a job's queued partitions; prints a confirmation.
int run_cancel(Client& client, uint64_t job);

/// stop: asks the supervisor to stop gracefully; prints a confirmation.
int run_stop(Client& client);

/// `drain [--wait] [--timeout S]`: no new partitions start; with --wait, polls
/// status until no partition is in flight (exit 0) or S seconds pass (exit 4).
int run_drain(Client& client, bool wait, double timeout_s);
/// `resume`: partitions start again.
int run_resume(Client& client);
/// `kill`: immediate stop (SIGKILL to every worker through its pidfd).
int run_kill(Client& client);
/// `restart WORKER|synth|gpu|all`: rolling restart, one worker at a time.
int run_restart(Client& client, const std::string& target);
/// `upgrade [--synth PATH] [--gpu PATH]`: rolling restart onto new binaries.
int run_upgrade(Client& client, const std::string& synth, const std::string& gpu);
/// `stop --timeout S`: as stop, with in-flight partitions given S seconds.
int run_stop_timeout(Client& client, uint64_t timeout_s);

/// `result JOB --out DIR`: the supervisor writes the job's proofs from its
/// journal into DIR (made absolute here). Exit 0, or 1 if the job is unknown or
/// not done.
int run_result(Client& client, uint64_t job, const std::string& out);

}  // namespace zkfarm::ctl
