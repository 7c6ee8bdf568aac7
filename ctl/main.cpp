// zkfarmctl: the operator's command line for zkfarmd. It talks only to the
// control socket ipc://STATE/control.sock (ZeroMQ REQ, one request, one reply;
// docs/protocol.md) and never signals processes. docs/zkfarmctl.md.
//
// Exit codes: one table for every verb, ctl/exit_codes.hpp and docs/zkfarmctl.md.
#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>

#include "ctl/api_client.hpp"
#include "cli/numbers.hpp"
#include "ctl/client.hpp"
#include "ctl/exit_codes.hpp"
#include "ctl/progress.hpp"
#include "ctl/suggest.hpp"
#include "version/build_info.hpp"
#include "ctl/tokens.hpp"
#include "ctl/verbs.hpp"

namespace {

std::string non_empty(const std::string& s) { return s.empty() ? "must not be empty" : std::string(); }

// The longest timeout an option takes: ten years, far beyond any wait, well
// inside what a steady_clock deadline can hold.
constexpr double kMaxSeconds = 10.0 * 365 * 86400;

// The package's state dir (packaging/, docs/install.md): where zkfarmd runs as a service.
constexpr const char* kDefaultStateDir = "/var/lib/zkfarm";

// The global options that take a value (so that "did you mean" skips it).
const std::vector<std::string> kValueOptions = {"--state-dir", "--api", "--token-file", "--api-ca", "--api-dir",
                                                "--timeout-ms"};

// "zkfarmctl: unknown verb 'stauts'; did you mean 'status'?" for a command
// line whose verb (or sub-verb: circuit, token, tenant) names none; "" when
// the verbs are fine and CLI11's own message says what is wrong.
std::string verb_hint(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto verbs_of = [&](const std::vector<std::string>& path) {
    CLI::App* cur = &app;
    for (const auto& p : path) cur = cur->get_subcommand(p);
    std::vector<std::string> names;
    for (const CLI::App* sub : cur->get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
    return names;
  };
  const zkfarm::ctl::VerbScan scan = zkfarm::ctl::scan_verbs(args, kValueOptions, verbs_of);
  if (scan.unknown.empty()) return "";
  std::string where;
  for (const auto& p : scan.path) where += p + " ";
  const std::string best = zkfarm::ctl::closest(scan.unknown, verbs_of(scan.path));
  return "unknown verb '" + where + scan.unknown + "'" + (best.empty() ? "" : "; did you mean '" + where + best + "'?") +
         " (zkfarmctl " + where + "--help lists them)";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace zkfarm::ctl;
  using zkfarm::cli::seconds_upto;
  using zkfarm::cli::whole_number;

  CLI::App app{"zkfarmctl: submit jobs to a zkfarmd Groth16 proving farm and watch it"};
  app.footer(kExitCodesHelp);
  app.set_version_flag("--version", zkfarm::build_info::version_line("zkfarmctl"));
  app.require_subcommand(1);
  app.fallthrough();  // global flags may also follow the verb

  std::string state_dir = kDefaultStateDir;
  int timeout_ms = 5000;
  bool quiet = false;
  app.add_option("--state-dir", state_dir, "the supervisor's state dir (holds control.sock); not with --api")
      ->envname("ZKFARM_STATE_DIR")
      ->capture_default_str()
      ->check(non_empty);
  app.add_flag("-q,--quiet", quiet, "no progress and no notes on stderr (results and errors stay)");
  // Remote: zkfarm-api over HTTPS (docs/api.md).
  std::string api_url, token_file, api_ca, api_dir;
  app.add_option("--api", api_url, "zkfarm-api's URL (https://HOST:PORT): submit, wait, result, cancel, jobs, circuit add|list|remove remotely; "
                 "status, drain, resume with an operator token")
      ->envname("ZKFARM_API");
  app.add_option("--token-file", token_file, "with --api: a file holding the API token (mode 600)")
      ->envname("ZKFARM_TOKEN_FILE");
  app.add_option("--api-ca", api_ca, "with --api: PEM file of the CAs that signed the API's certificate (default: the system's)")
      ->envname("ZKFARM_API_CA");
  app.add_option("--api-dir", api_dir, "token, tenant: zkfarm-api's folder (default STATE/api)")->envname("ZKFARM_API_DIR");
  app.add_option("--timeout-ms", timeout_ms, "how long to wait for each reply")
      ->capture_default_str()
      ->check(whole_number(1, 3600 * 1000));

  SubmitOptions submit_opt;
  auto* submit = app.add_subcommand("submit", "submit a job; prints its id alone on stdout");
  auto* zkey_opt = submit->add_option("--zkey", submit_opt.zkey, "proving key (.zkey)")->check(non_empty);
  auto* wtns_opt = submit->add_option("--wtns", submit_opt.wtns, "witness files (.wtns), one partition each")
                       ->expected(1, -1)
                       ->check(non_empty);
  auto* circuit_opt =
      submit->add_option("--circuit", submit_opt.circuit, "a circuit registered with `circuit add` (with --input)")
          ->check(non_empty);
  auto* input_opt = submit->add_option("--input", submit_opt.inputs, "circom input.json files, one partition each")
                        ->expected(1, -1)
                        ->check(non_empty);
  zkey_opt->needs(wtns_opt)->excludes(circuit_opt)->excludes(input_opt);
  wtns_opt->needs(zkey_opt);
  circuit_opt->needs(input_opt);
  input_opt->needs(circuit_opt);
  submit->add_option("--priority", submit_opt.priority, "low, normal, high or critical")
      ->capture_default_str()
      ->check(CLI::IsMember({"low", "normal", "high", "critical"}));
  submit->add_option("--out", submit_opt.out, "folder for the proofs (default: $PWD/proofs)")->check(non_empty);
  submit->add_option("--busy-timeout", submit_opt.busy_timeout_s,
                     "retry a submit zkfarmd refuses as busy for this many seconds, with backoff (default 60; "
                     "then exit 75)")
      ->check(CLI::Range(0.0, 86400.0));
  submit->add_option("--idempotency-key", submit_opt.idempotency_key,
                     "with --api: a retried submit with the same key returns the same job")
      ->check(non_empty);

  WaitOptions wait_opt;
  auto* wait = app.add_subcommand("wait", "wait for a job to finish, showing progress on stderr");
  wait->add_option("job", wait_opt.job, "job id")->required()->check(whole_number(1, UINT64_MAX));
  wait->add_option("--timeout", wait_opt.timeout_s, "give up after this many seconds (exit 4); default: never")
      ->check(seconds_upto(kMaxSeconds));

  bool status_json = false;
  std::string status_worker;
  uint64_t status_lines = 10;
  auto* status = app.add_subcommand("status", "the supervisor, its workers, queue, arena and jobs; or one worker");
  status->add_flag("--json", status_json, "the status object (or the worker's) as JSON on stdout");
  status->add_option("worker", status_worker, "one worker (synth-0, gpu-1): its details and its last log lines");
  status->add_option("-n,--lines", status_lines, "with a worker: how many of its log lines (default 10)")
      ->check(whole_number(0, 10000));

  std::optional<uint64_t> logs_lines;
  bool logs_follow = false;
  auto* logs = app.add_subcommand("logs", "zkfarmd's log (the file its status names): all of it, or -n N lines");
  logs->add_option("-n,--lines", logs_lines, "only the last N lines (with -f: default 10)")->check(whole_number(0, 1000000));
  logs->add_flag("-f,--follow", logs_follow, "then print what is appended, across logrotate, until interrupted");

  bool jobs_json = false;
  JobsOptions jobs_opt;
  auto* jobs = app.add_subcommand("jobs", "the jobs the supervisor knows, newest first, a page at a time");
  jobs->add_flag("--json", jobs_json, "the job list as JSON on stdout");
  jobs->add_option("--state", jobs_opt.state, "only jobs in this state")
      ->check(CLI::IsMember({"queued", "running", "done", "failed", "cancelled"}));
  jobs->add_option("--limit", jobs_opt.limit, "at most this many jobs (1..1000; default 100)")->check(whole_number(1, 1000));
  jobs->add_option("--before", jobs_opt.before, "only jobs with a smaller id (the cursor a previous page printed)")
      ->check(whole_number(1, UINT64_MAX));
  jobs->add_option("--since", jobs_opt.since,
                   "only jobs submitted since T: a duration before now (30m, 2h, 7d), a date or time "
                   "(2026-12-01, 2026-12-01T10:00, …Z for UTC) or Unix ms");

  uint64_t cancel_job = 0;
  auto* cancel = app.add_subcommand("cancel", "cancel a job (its queued partitions are dropped)");
  cancel->add_option("job", cancel_job, "job id")->required()->check(whole_number(1, UINT64_MAX));

  uint64_t result_job = 0;
  std::string result_out;
  auto* result = app.add_subcommand("result", "write a finished job's proofs from zkfarmd's journal into a folder (as you)");
  result->add_option("job", result_job, "job id")->required()->check(whole_number(1, UINT64_MAX));
  result->add_option("--out", result_out, "folder for OUT/k.proof.json and OUT/k.public.json (default: $PWD/proofs)")
      ->check(non_empty);
  bool result_json = false;
  result->add_flag("--json", result_json,
                   "the files written and each partition's stage times (witness, queue, prove, verify, delivery ms) "
                   "as JSON on stdout");

  auto* stop = app.add_subcommand("stop", "stop the supervisor gracefully, or with --now at once");
  std::optional<uint64_t> stop_timeout;
  bool stop_wait = false, stop_now = false;
  WaitLimit stop_limit;
  auto* stop_timeout_opt =
      stop->add_option("--timeout", stop_timeout, "seconds in-flight partitions may take (default: drain_timeout_ms)")
          ->check(whole_number(0, uint64_t(kMaxSeconds)));
  stop->add_flag("--now", stop_now, "no drain: SIGKILL every worker now (the journal keeps every job)")
      ->excludes(stop_timeout_opt);
  stop->add_flag("--wait", stop_wait,
                 "show the stop's progress and return when zkfarmd's process has exited (exit 1 if it failed)");
  stop->add_option("--wait-timeout", stop_limit.timeout_s, "with --wait: give up after S seconds (exit 4)")
      ->check(seconds_upto(kMaxSeconds));

  bool drain_wait = false;
  double drain_timeout = -1;
  auto* drain = app.add_subcommand("drain", "start no new partitions (status keeps answering)");
  drain->add_flag("--wait", drain_wait, "return once no partition is in flight");
  drain->add_option("--timeout", drain_timeout, "with --wait: give up after S seconds (exit 4)")
      ->check(seconds_upto(kMaxSeconds));
  auto* resume = app.add_subcommand("resume", "take partitions again after a drain");
  std::string kill_worker;
  auto* kill = app.add_subcommand("kill", "SIGKILL one worker (zkfarmd restarts it); `stop --now` stops the farm");
  kill->add_option("worker", kill_worker,
                   "the worker (synth-0, gpu-1); without one, the farm stops at once as with `stop --now`");
  std::string restart_target;
  bool rolling_wait = false;
  WaitLimit rolling_limit;
  auto add_rolling_wait = [&](CLI::App* verb) {
    verb->add_flag("--wait", rolling_wait, "show its progress and return when it ends (exit 1 if it failed)");
    verb->add_option("--timeout", rolling_limit.timeout_s, "with --wait: give up after S seconds (exit 4)")
        ->check(seconds_upto(kMaxSeconds));
  };
  auto* restart = app.add_subcommand("restart", "rolling restart, one worker at a time");
  restart->add_option("target", restart_target, "a worker id (synth-0, gpu-1), synth, gpu or all")->required();
  add_rolling_wait(restart);
  std::string upgrade_synth, upgrade_gpu;
  auto* upgrade = app.add_subcommand("upgrade", "rolling restart onto new worker binaries");
  upgrade->add_option("--synth", upgrade_synth, "new zkfarm-synth binary");
  upgrade->add_option("--gpu", upgrade_gpu, "new zkfarm-gpu binary");
  add_rolling_wait(upgrade);
  bool ready_wait = false;
  WaitLimit ready_limit;
  auto* ready = app.add_subcommand("ready", "exit 0 when zkfarmd is ready (intake open, every worker READY), else 1");
  ready->add_flag("--wait", ready_wait, "wait until it is (also while zkfarmd is still starting)");
  ready->add_option("--timeout", ready_limit.timeout_s, "with --wait: give up after S seconds (exit 4)")
      ->check(seconds_upto(kMaxSeconds));

  auto* circuit = app.add_subcommand("circuit", "circuits in the farm: add, list, remove (docs/witness.md)");
  circuit->require_subcommand(1);
  CircuitAddOptions circuit_add_opt;
  auto* circuit_add = circuit->add_subcommand("add", "register a circuit: its proving key and witness generator");
  circuit_add->add_option("name", circuit_add_opt.name, "the circuit's name (letters, digits, . _ -)")->required();
  circuit_add->add_option("--zkey", circuit_add_opt.zkey, "its proving key (.zkey)")->required()->check(non_empty);
  auto* wasm_opt = circuit_add->add_option("--wasm", circuit_add_opt.wasm, "its circuit.wasm (circom --wasm)")->check(non_empty);
  auto* c_opt = circuit_add->add_option("--c", circuit_add_opt.c_dir, "its circom --c folder (admins only: native code)")
                    ->check(non_empty);
  wasm_opt->excludes(c_opt);
  circuit_add
      ->add_option("--test-input", circuit_add_opt.test_inputs,
                   "with --c: an input.json of the circuit its witness graph is checked on (byte for byte against "
                   "its generator) before it is used; repeatable")
      ->needs(c_opt)
      ->check(non_empty);
  bool circuit_list_json = false;
  auto* circuit_list = circuit->add_subcommand("list", "the registered circuits");
  circuit_list->add_flag("--json", circuit_list_json, "as JSON on stdout");
  std::string circuit_remove_name;
  auto* circuit_remove = circuit->add_subcommand("remove", "forget a circuit (jobs accepted with it go on)");
  circuit_remove->add_option("name", circuit_remove_name, "the circuit's name")->required();

  auto* token = app.add_subcommand("token", "zkfarm-api's tokens: add, revoke, list (docs/api.md)");
  token->require_subcommand(1);
  std::string token_tenant, token_role, token_out, token_id;
  bool token_list_json = false;
  auto* token_add = token->add_subcommand("add", "make a token for a tenant; shown once");
  token_add->add_option("tenant", token_tenant, "the tenant (a-z, 0-9, _ -)")->required();
  token_add->add_option("--role", token_role, "read, submit or operator")->required();
  token_add->add_option("--out", token_out, "write the token to this new file (mode 600) instead of stdout");
  auto* token_revoke = token->add_subcommand("revoke", "revoke a token at once");
  token_revoke->add_option("id", token_id, "the token's id (token list)")->required();
  auto* token_list = token->add_subcommand("list", "the tokens (never their secrets)");
  token_list->add_flag("--json", token_list_json, "as JSON on stdout");
  auto* tenant = app.add_subcommand("tenant", "zkfarm-api's tenants: set their quotas");
  tenant->require_subcommand(1);
  std::string tenant_name;
  std::optional<uint64_t> tenant_queued, tenant_stored;
  auto* tenant_set = tenant->add_subcommand("set", "set a tenant's quotas (429 past them)");
  tenant_set->add_option("tenant", tenant_name, "the tenant")->required();
  tenant_set->add_option("--max-queued-partitions", tenant_queued, "partitions of its live jobs not yet proved")
      ->check(whole_number(0, UINT64_MAX));
  tenant_set->add_option("--max-stored-bytes", tenant_stored, "bytes of its uploads kept")->check(whole_number(0, UINT64_MAX));

  try {
    app.parse(argc, argv);
    set_quiet(quiet);
    const bool local_only_verb = *token || *tenant;
    if (api_url.empty() && state_dir.empty() && !(local_only_verb && !api_dir.empty()))
      throw CLI::RequiredError("--state-dir (or --api URL)");
    if (!api_url.empty() && token_file.empty()) throw CLI::RequiredError("--token-file (with --api)");
    if (*submit && submit_opt.wtns.empty() && submit_opt.inputs.empty())
      throw CLI::ValidationError("submit", "--zkey and --wtns, or --circuit and --input, are required");
    if (*circuit_add && circuit_add_opt.wasm.empty() && circuit_add_opt.c_dir.empty())
      throw CLI::ValidationError("circuit add", "--wasm FILE or --c DIR is required");
  } catch (const CLI::ParseError& e) {
    if (const std::string hint = verb_hint(app, argc, argv); !hint.empty() && e.get_exit_code() != 0) {
      std::cerr << "zkfarmctl: " << hint << "\n";
      return kExitUsage;
    }
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  try {
    if (*token || *tenant) {
      const std::string dir = api_dir.empty() ? state_dir + "/api" : api_dir;
      if (*token_add) return run_token_add(dir, token_tenant, token_role, token_out);
      if (*token_revoke) return run_token_revoke(dir, token_id);
      if (*token_list) return run_token_list(dir, token_list_json);
      if (*tenant_set) return run_tenant_set(dir, tenant_name, tenant_queued, tenant_stored);
    }
    if (!api_url.empty()) {
      ApiClient remote(api_url, read_token_file(token_file), api_ca, timeout_ms);
      if (*submit) return run_submit(remote, submit_opt);
      if (*wait) return run_wait(remote, wait_opt);
      // The log is on the farm's host, not here: a worker without its lines.
      if (*status) return run_status(remote, status_json, status_worker, 0);
      if (*jobs) return run_jobs(remote, jobs_json, jobs_opt);
      if (*cancel) return run_cancel(remote, cancel_job);
      if (*result) return run_result(remote, result_job, result_out, result_json);
      if (*circuit_add) return run_circuit_add(remote, circuit_add_opt);
      if (*circuit_list) return run_circuit_list(remote, circuit_list_json);
      if (*circuit_remove) return run_circuit_remove(remote, circuit_remove_name);
      // An operator token's farm routes (docs/api.md).
      if (*drain) return run_drain(remote, "the farm behind " + api_url, drain_wait, drain_timeout);
      if (*resume) return run_resume(remote, "the farm behind " + api_url);
      std::cerr << "zkfarmctl: this verb is not offered by the API: run it on the farm's host (--state-dir)\n";
      return kExitUsage;
    }
    if (!submit_opt.idempotency_key.empty()) {
      std::cerr << "zkfarmctl: --idempotency-key needs --api (zkfarm-api keeps the keys)\n";
      return kExitUsage;
    }
    Client client(state_dir, timeout_ms);
    if (*submit) return run_submit(client, submit_opt);
    if (*wait) return run_wait(client, wait_opt);
    if (*status) return run_status(client, status_json, status_worker, size_t(status_lines));
    if (*logs) return run_logs(client, logs_lines ? long(*logs_lines) : -1, logs_follow);
    if (*jobs) return run_jobs(client, jobs_json, jobs_opt);
    if (*cancel) return run_cancel(client, cancel_job);
    if (*result) return run_result(client, result_job, result_out, result_json);
    if (*stop) return run_stop(client, stop_timeout, stop_now, stop_wait, stop_limit);
    if (*drain) return run_drain(client, "zkfarmd at " + client.state_dir(), drain_wait, drain_timeout);
    if (*resume) return run_resume(client, "zkfarmd at " + client.state_dir());
    if (*kill) return run_kill(client, kill_worker);
    if (*restart) return run_restart(client, restart_target, rolling_wait, rolling_limit);
    if (*upgrade) return run_upgrade(client, upgrade_synth, upgrade_gpu, rolling_wait, rolling_limit);
    if (*ready) return run_ready(state_dir, timeout_ms, ready_wait, ready_limit);
    if (*circuit_add) return run_circuit_add(client, circuit_add_opt);
    if (*circuit_list) return run_circuit_list(client, circuit_list_json);
    if (*circuit_remove) return run_circuit_remove(client, circuit_remove_name);
    std::cerr << "zkfarmctl: no verb given\n";
    return kExitUsage;
  } catch (const CtlError& e) {
    std::cerr << "zkfarmctl: " << e.what() << "\n";
    return e.exit_code();
  } catch (const zkfarm::protocol::ProtocolError& e) {
    // Only replies are decoded here: a bad field is the supervisor's fault.
    std::cerr << "zkfarmctl: malformed reply from zkfarmd: " << e.what() << "\n";
    return kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << "zkfarmctl: " << e.what() << "\n";
    return kExitFailed;
  }
}
