// zkfarmctl against a fake supervisor: a Unix stream socket at TMP/control.sock
// in a thread, answering canned replies and recording the requests. Checks the
// requests each verb sends, its output and its exit code, including no
// supervisor (exit 3), refusals (exit 1) and garbage replies (exit 1, no crash).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <pty.h>
#include <signal.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "ctl/exit_watch.hpp"
#include "ctl/log_view.hpp"
#include "ctl/progress.hpp"
#include "ctl/render.hpp"
#include "ctl/suggest.hpp"
#include "protocol/messages.hpp"
#include "protocol/stream_frame.hpp"

namespace zkfarm {
namespace {

namespace fs = std::filesystem;
using protocol::Message;

struct CtlTempDir {
  fs::path path;
  CtlTempDir() {
    std::string tmpl = (fs::temp_directory_path() / "zkctl-XXXXXX").string();
    path = fs::canonical(mkdtemp(tmpl.data()));
  }
  ~CtlTempDir() { fs::remove_all(path); }
};

/// What one run of zkfarmctl left behind.
struct CtlRun {
  int rc = -1;
  std::string out, err;
  double seconds = 0;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Runs zkfarmctl with args in cwd; stdout and stderr to files (or stderr to
/// a pseudo-terminal when stderr_tty). Kills it after 20 s.
CtlRun run_ctl(const std::vector<std::string>& args, const fs::path& cwd, bool stderr_tty = false) {
  CtlTempDir io;
  const std::string out_path = (io.path / "out").string(), err_path = (io.path / "err").string();
  std::vector<std::string> argv_s{ZKFARM_CTL_BIN};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string cwd_s = cwd.string();

  int master = -1, slave = -1;
  if (stderr_tty && openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) throw std::runtime_error("openpty");
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    if (chdir(cwd_s.c_str()) != 0) _exit(126);
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = stderr_tty ? slave : open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0) _exit(126);
    dup2(o, 1);
    dup2(e, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (stderr_tty) close(slave);
  CtlRun r;
  std::string tty_text;
  int status = 0;
  for (;;) {
    if (stderr_tty) {  // drain the pty so the child never blocks on it
      char buf[4096];
      fcntl(master, F_SETFL, O_NONBLOCK);
      ssize_t n;
      while ((n = read(master, buf, sizeof buf)) > 0) tty_text.append(buf, size_t(n));
    }
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(20)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (stderr_tty) {
    char buf[4096];
    ssize_t n;
    while ((n = read(master, buf, sizeof buf)) > 0) tty_text.append(buf, size_t(n));
    close(master);
  }
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = stderr_tty ? tty_text : slurp(err_path);
  return r;
}

/// A reply frame {"v":1,"t":"reply","ok":true, ...fields}.
std::string ok_reply(Message fields = Message::object()) {
  Message m = protocol::make("reply");
  m["ok"] = true;
  for (auto it = fields.begin(); it != fields.end(); ++it) m[it.key()] = it.value();
  return protocol::encode(m);
}

std::string error_reply(const std::string& error) {
  Message m = protocol::make("reply");
  m["ok"] = false;
  m["error"] = error;
  return protocol::encode(m);
}

/// The fake supervisor: a Unix stream socket at TMP/control.sock speaking
/// zkfarmd's framing (protocol/stream_frame.hpp), one connection at a time.
/// handler gets each decoded request and returns the reply frames to send,
/// each length-prefixed (none: no answer at all); a frame that begins with
/// kRaw is written as it is, without a prefix (a hostile header).
class FakeSupervisor {
 public:
  using Handler = std::function<std::vector<std::string>(const Message&)>;
  static inline const std::string kRaw = std::string("\0RAW:", 5);

  FakeSupervisor(const fs::path& state_dir, Handler handler) : handler_(std::move(handler)) {
    const std::string path = (state_dir / "control.sock").string();
    listen_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_, 16) != 0)
      ADD_FAILURE() << "cannot listen at " << path << ": " << std::strerror(errno);
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeSupervisor() {
    stop_ = true;
    thread_.join();
    ::close(listen_);
  }

  /// The requests received so far (decoded with the protocol's own decoder).
  std::vector<Message> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void loop() {
    std::vector<int> conns;
    std::map<int, protocol::FrameReader> readers;
    while (!stop_) {
      std::vector<pollfd> fds{{listen_, POLLIN, 0}};
      for (int c : conns) fds.push_back({c, POLLIN, 0});
      ::poll(fds.data(), fds.size(), 20);
      if (fds[0].revents & POLLIN) {
        int c = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) conns.push_back(c), readers.emplace(c, protocol::FrameReader());
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        const int c = fds[i].fd;
        auto& reader = readers.at(c);
        char buf[65536];
        const ssize_t n = ::read(c, buf, std::min(reader.room(), sizeof buf));
        if (n <= 0) {
          ::close(c);
          conns.erase(std::find(conns.begin(), conns.end(), c));
          readers.erase(c);
          continue;
        }
        reader.feed(buf, size_t(n));
        if (!reader.has_frame()) continue;
        Message req;
        try {
          req = protocol::decode(*reader.take());
        } catch (const protocol::ProtocolError& e) {
          ADD_FAILURE() << "request does not decode: " << e.what();
          continue;
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          requests_.push_back(req);
        }
        for (const std::string& f : handler_(req)) {
          const std::string bytes = f.rfind(kRaw, 0) == 0 ? f.substr(kRaw.size()) : protocol::frame_of(f, SIZE_MAX);
          (void)!::send(c, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        }
      }
    }
    for (int c : conns) ::close(c);
  }

  Handler handler_;
  int listen_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Message> requests_;
};

Message job_object(uint64_t id, const std::string& state, uint64_t done, uint64_t parts) {
  return Message{{"id", id},     {"state", state},         {"priority", "normal"}, {"partitions", parts},
                 {"done", done}, {"zkey", "/k/c.zkey"},    {"out", "/data/out"},   {"submitted_ms", 1700000000000ULL},
                 {"finished_ms", nullptr}};
}

std::vector<std::string> base_args(const CtlTempDir& dir, int timeout_ms = 3000) {
  return {"--state-dir", dir.path.string(), "--timeout-ms", std::to_string(timeout_ms)};
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(Ctl, SubmitSendsAbsolutePathsAndPriorityAndPrintsTheId) {
  CtlTempDir dir;
  fs::create_directories(dir.path / "work");
  FakeSupervisor sup(dir.path, [](const Message&) { return std::vector<std::string>{ok_reply({{"job", 42}})}; });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"submit", "--zkey", "c.zkey", "--wtns", "a.wtns",
                                                               "../b.wtns", "./sub/../c.wtns", "--priority", "high"},
                     dir.path / "work");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "42\n");
  auto reqs = sup.requests();
  ASSERT_EQ(reqs.size(), 1u);
  const Message& q = reqs[0];
  const std::string work = (dir.path / "work").string();
  EXPECT_EQ(q["t"], "submit");
  EXPECT_EQ(q["zkey"], work + "/c.zkey");
  EXPECT_EQ(q["wtns"], (Message{work + "/a.wtns", dir.path.string() + "/b.wtns", work + "/c.wtns"}));
  EXPECT_EQ(q["priority"], "high");
  EXPECT_EQ(q["out"], work + "/proofs");

  // Default priority; --out made absolute.
  r = run_ctl(base_args(dir) + std::vector<std::string>{"submit", "--zkey", "/abs/c.zkey", "--wtns", "w", "--out",
                                                        "res"},
              dir.path / "work");
  EXPECT_EQ(r.rc, 0) << r.err;
  reqs = sup.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1]["zkey"], "/abs/c.zkey");
  EXPECT_EQ(reqs[1]["priority"], "normal");
  EXPECT_EQ(reqs[1]["out"], work + "/res");
}

TEST(Ctl, RefusalPrintsTheErrorAndExits1) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message&) {
    return std::vector<std::string>{error_reply("/w/b.wtns: not a wtns file (bad magic)")};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"submit", "--zkey", "k", "--wtns", "b.wtns"}, dir.path);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("/w/b.wtns: not a wtns file (bad magic)"), std::string::npos) << r.err;
}

// Issue 45: "busy" is not "bad". 103 of 200 concurrent submits were refused
// as busy and exited 1 like a broken job, never retried. A busy refusal is now
// retried with backoff; past --busy-timeout it exits 75 (EX_TEMPFAIL).
std::string busy_reply() {
  Message m = protocol::make("reply");
  m["ok"] = false;
  m["error"] = "zkfarmd is busy: 64 submits are waiting for their check; retry later";
  m["busy"] = true;
  m["retry_after_ms"] = 50;
  return protocol::encode(m);
}

TEST(Ctl, ABusySubmitIsRetriedUntilAcceptedAndExits75WhenItStaysBusy) {
  CtlTempDir dir;
  std::atomic<int> seen{0};
  FakeSupervisor sup(dir.path, [&](const Message&) {
    return std::vector<std::string>{++seen <= 2 ? busy_reply() : ok_reply({{"job", 7}})};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"submit", "--zkey", "k", "--wtns", "w"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "7\n");
  EXPECT_EQ(sup.requests().size(), 3u);  // two busy answers, then the same submit accepted

  CtlTempDir busy;
  FakeSupervisor always(busy.path, [](const Message&) { return std::vector<std::string>{busy_reply()}; });
  r = run_ctl(base_args(busy) + std::vector<std::string>{"submit", "--zkey", "k", "--wtns", "w", "--busy-timeout",
                                                         "1"},
              busy.path);
  EXPECT_EQ(r.rc, 75) << r.err;
  EXPECT_NE(r.err.find("zkfarmd is busy"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exit 75"), std::string::npos) << r.err;
  EXPECT_GE(always.requests().size(), 2u);  // retried before giving up
  // A refusal that is not busy is not retried.
  CtlTempDir bad;
  FakeSupervisor once(bad.path, [](const Message&) { return std::vector<std::string>{error_reply("bad key")}; });
  r = run_ctl(base_args(bad) + std::vector<std::string>{"submit", "--zkey", "k", "--wtns", "w"}, bad.path);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(once.requests().size(), 1u);
}

Message sample_status() {
  return Message{{"version", "0.1.0"},
                 {"pid", 1234},
                 {"state_dir", "/var/lib/zkfarm"},
                 {"state", "running"},
                 {"workers",
                  {{{"id", "synth-0"},
                    {"kind", "synth"},
                    {"pid", 1240},
                    {"state", "busy"},
                    {"version", "0.1.0"},
                    {"backend", "cpu"},
                    {"partition", "3/7"},
                    {"restarts", 0}}}},
                 {"queue", {{"synth", 12}, {"prove", 1}}},
                 {"arena",
                  {{"name", "zkfarm-x"}, {"bytes", 1073741824}, {"used", 4915200}, {"free", 1068826624}, {"slots", 2}}},
                 {"jobs", {job_object(7, "running", 1, 3)}}};
}

TEST(Ctl, StatusJsonAndTables) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message& q) {
    if (q["t"] == "status") return std::vector<std::string>{ok_reply({{"status", sample_status()}})};
    return std::vector<std::string>{ok_reply({{"jobs", {job_object(7, "running", 1, 3)}}})};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"status", "--json"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, sample_status().dump(1) + "\n");
  EXPECT_EQ(Message::parse(r.out), sample_status());

  // An older supervisor's status (no intake, partitions, uptime): still shown.
  r = run_ctl(base_args(dir) + std::vector<std::string>{"status"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  for (const char* s : {"synth-0", "busy", "partition 3/7", "synth 12, prove 1", "4.7 MiB used of 1024.0 MiB", "1/3"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " not in:\n" << r.out;
  }

  r = run_ctl(base_args(dir) + std::vector<std::string>{"jobs", "--json"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Message::parse(r.out), Message({job_object(7, "running", 1, 3)}));
  r = run_ctl(base_args(dir) + std::vector<std::string>{"jobs"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("/data/out"), std::string::npos) << r.out;
}

/// A status as this version's zkfarmd sends it: draining, up 2 h, a worker
/// proving with one more queued, a GPU worker in its release wait, a failed
/// upgrade, live and finished jobs.
Message full_status() {
  Message s = sample_status();
  s["intake"] = "draining";
  s["ready"] = false;
  s["uptime_s"] = 7380.5;
  s["in_flight"] = 3;
  s["partitions"] = {{"queued", 12}, {"synthesizing", 1}, {"synthesized", 1}, {"proving", 1}};
  s["rolling"] = {{"id", 3},        {"what", "upgrade"}, {"result", "failed"}, {"current", nullptr},
                  {"queued", 0},    {"replaced", 1},     {"total", 4},         {"finished_ms", 1700000000000ULL},
                  {"error", "worker gpu-0: new binary /opt/x died (exit code 1) before READY; upgrade stopped"}};
  s["workers"][0]["job"] = 7;
  s["workers"][0]["partition_index"] = 3;
  s["workers"][0]["held"] = 2;
  s["workers"][0]["uptime_s"] = 65;
  s["workers"].push_back({{"id", "gpu-0"},
                          {"kind", "gpu"},
                          {"pid", 0},
                          {"state", "releasing"},
                          {"restarts", 1},
                          {"release", "GPU 0 still lists pid 99 (2.0 GiB in use)"},
                          {"release_wait", {{"pid", 99}, {"elapsed_ms", 1200}, {"timeout_ms", 120000}}}});
  Message done = job_object(6, "done", 3, 3);
  done["queue_wait_ms"] = 1500;
  done["total_ms"] = 4250;
  s["jobs"].push_back(done);
  s["job_counts"] = {{"running", 1}, {"done", 1}};
  s["jobs"][0]["owner_uid"] = 0;
  s["workers"][0]["binary"] = "/usr/bin/zkfarm-synth";
  s["journal"] = {{"path", "/var/lib/zkfarm/journal.sqlite"}, {"bytes", 2 * 1048576}, {"wal_bytes", 524288}};
  s["http_address"] = nullptr;
  s["config_file"] = "/etc/zkfarm/zkfarmd.toml";
  s["log_file"] = "/var/lib/zkfarm/zkfarmd.log";
  return s;
}

TEST(Ctl, StatusTableShowsIntakeUptimeActivityRollingAndUnits) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message&) { return std::vector<std::string>{ok_reply({{"status", full_status()}})}; });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"status"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  for (const char* s : {"up 2h 03m", "draining: submits accepted and queued; no new partition starts", "Ready:       no",
                        "12 queued, 1 synthesizing, 1 waiting for a GPU worker, 1 proving (3 in flight)",
                        "4.7 MiB used of 1024.0 MiB (0.5 %)", "upgrade 3: FAILED", "(1 of 4 workers replaced)",
                        "BINARY", "/usr/bin/zkfarm-synth", "Journal:     /var/lib/zkfarm/journal.sqlite (2.0 MiB, WAL 0.5 MiB)",
                        "HTTP:        off", "Config:      /etc/zkfarm/zkfarmd.toml", "Log:         /var/lib/zkfarm/zkfarmd.log",
                        "new binary /opt/x died", "job 7 part 3 (+1 queued)", "1m 05s",
                        "release wait 1.2 s of 2m 00s: GPU 0 still lists pid 99", "WAIT(s)", "TOTAL(s)", "1.50",
                        "4.25", "(1 done, 1 running)"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " not in:\n" << r.out;
  }
  // The live job before the finished one; its owner by name.
  EXPECT_LT(r.out.find("\n7 "), r.out.find("\n6 ")) << r.out;
  EXPECT_NE(r.out.find("\n7   root "), std::string::npos) << r.out;
  // gpu-0 runs no process: "-", not 0.
  EXPECT_NE(r.out.find("gpu-0    gpu    -  "), std::string::npos) << r.out;
}

TEST(Ctl, StatusTableIsBoundedAndNamesJobsForTheRest) {
  CtlTempDir dir;
  Message s = full_status();
  s["jobs"] = Message::array();
  for (uint64_t i = 100; i > 0; --i) s["jobs"].push_back(job_object(i, i > 60 ? "running" : "done", 0, 1));
  s["jobs_omitted"] = 7;
  FakeSupervisor sup(dir.path, [s](const Message&) { return std::vector<std::string>{ok_reply({{"status", s}})}; });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"status"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  // 20 of the 40 live jobs, 5 of the 60 finished ones, 7 the supervisor left out.
  EXPECT_NE(r.out.find("\n81 "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\n80 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n56 "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\n55 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("82 more: zkfarmctl jobs"), std::string::npos) << r.out;
}

TEST(Ctl, JobsSinceSendsUnixMs) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message&) { return std::vector<std::string>{ok_reply({{"jobs", Message::array()}})}; });
  const auto now_ms = [] {
    return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count());
  };
  const uint64_t before = now_ms();
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"jobs", "--since", "2h", "--state", "done"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  r = run_ctl(base_args(dir) + std::vector<std::string>{"jobs", "--since", "2026-12-01T10:00:00Z"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  r = run_ctl(base_args(dir) + std::vector<std::string>{"jobs", "--since", "1700000000000"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  auto reqs = sup.requests();
  ASSERT_EQ(reqs.size(), 3u);
  const uint64_t two_h = reqs[0]["since_ms"].get<uint64_t>();
  EXPECT_GE(two_h + 7200000, before);
  EXPECT_LE(two_h + 7200000, now_ms());
  EXPECT_EQ(reqs[0]["state"], "done");
  EXPECT_EQ(reqs[1]["since_ms"], 1796119200000ULL);  // date -u -d 2026-12-01T10:00:00Z +%s
  EXPECT_EQ(reqs[2]["since_ms"], 1700000000000ULL);
  r = run_ctl(base_args(dir) + std::vector<std::string>{"jobs", "--since", "yesterday"}, dir.path);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--since yesterday: expected"), std::string::npos) << r.err;
}

TEST(Ctl, CancelAndStopSendTheirRequests) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message&) { return std::vector<std::string>{ok_reply()}; });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"cancel", "9"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  r = run_ctl(base_args(dir) + std::vector<std::string>{"stop"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  auto reqs = sup.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0]["t"], "cancel");
  EXPECT_EQ(reqs[0]["job"], 9);
  EXPECT_EQ(reqs[1]["t"], "stop");
}

/// A fake whose job advances one partition per poll, from 0/3 to 3/3 (done).
FakeSupervisor::Handler advancing_job() {
  auto polls = std::make_shared<uint64_t>(0);
  return [polls](const Message& q) {
    uint64_t done = std::min<uint64_t>((*polls)++, 3);
    return std::vector<std::string>{
        ok_reply({{"job", job_object(q.value("job", 0), done == 3 ? "done" : "running", done, 3)}})};
  };
}

TEST(Ctl, WaitExits0WhenDone) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, advancing_job());
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"wait", "7", "--timeout", "10"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "job 7 done: 3 proofs in /data/out\n");
  // Off a terminal: the first line, a line per state change, counts within a
  // state at most every few seconds (ProgressLine), and always the last.
  EXPECT_EQ(r.err.rfind("job 7: 0/3 partitions (running)\n", 0), 0u) << r.err;
  const std::string last = "job 7: 3/3 partitions (done)\n";
  EXPECT_EQ(r.err.substr(r.err.size() - std::min(r.err.size(), last.size())), last) << r.err;
  auto reqs = sup.requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[0]["t"], "job");
  EXPECT_EQ(reqs[0]["job"], 7);
}

TEST(Ctl, WaitDrawsABarOnATerminal) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, advancing_job());
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"wait", "7"}, dir.path, /*stderr_tty=*/true);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "job 7 done: 3 proofs in /data/out\n");
  const std::string first = "\r[" + std::string(30, '-') + "] 0/3 partitions";
  const std::string last = "\r[" + std::string(30, '#') + "] 3/3 partitions  (done)";
  EXPECT_EQ(r.err.rfind(first, 0), 0u) << r.err;
  EXPECT_NE(r.err.find(last), std::string::npos) << r.err;
  EXPECT_LT(r.err.find(first), r.err.find(last));
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.back(), '\n');  // the bar's line is ended (the pty may write \r\n)
}

TEST(Ctl, WaitExits1WhenFailedOrCancelled) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message& q) {
    Message j = job_object(q.value("job", 0), q.value("job", 0) == 5 ? "failed" : "cancelled", 1, 3);
    j["error"] = "partition 2: /w/b.wtns: witness does not satisfy the circuit";
    return std::vector<std::string>{ok_reply({{"job", j}})};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"wait", "5", "-q"}, dir.path);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "zkfarmctl: job 5 failed: partition 2: /w/b.wtns: witness does not satisfy the circuit\n");
  r = run_ctl(base_args(dir) + std::vector<std::string>{"wait", "6", "-q"}, dir.path);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("job 6 was cancelled"), std::string::npos) << r.err;
}

TEST(Ctl, WaitExits4OnTimeout) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message& q) {
    return std::vector<std::string>{ok_reply({{"job", job_object(q.value("job", 0), "running", 1, 3)}})};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"wait", "3", "--timeout", "0.4"}, dir.path);
  EXPECT_EQ(r.rc, 4) << r.err;
  EXPECT_NE(r.err.find("job 3 not finished after 0.4 s"), std::string::npos) << r.err;
  EXPECT_GE(sup.requests().size(), 2u);  // polled more than once
}

TEST(Ctl, WaitLongPollsWithWhatItSaw) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, advancing_job());
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"wait", "7", "-q"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  auto reqs = sup.requests();
  ASSERT_EQ(reqs.size(), 4u);
  // The first asks at once; each later one says what it saw, and may be held.
  EXPECT_FALSE(reqs[0].contains("wait_ms"));
  for (size_t i = 1; i < reqs.size(); ++i) {
    EXPECT_GT(reqs[i].value("wait_ms", 0), 0) << reqs[i].dump();
    EXPECT_EQ(reqs[i]["seen_state"], "running");
    EXPECT_EQ(reqs[i]["seen_done"], i - 1);
  }
}

TEST(Ctl, WaitSaysSoWhenZkfarmdStopsFirst) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message& q) {
    Message reply{{"job", job_object(q.value("job", 0), "running", 1, 3)}};
    if (q.contains("wait_ms")) reply["supervisor"] = "exiting";  // held, then answered as zkfarmd exits
    return std::vector<std::string>{ok_reply(reply)};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"wait", "4", "-q"}, dir.path);
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_NE(r.err.find("zkfarmd stopped before job 4 ended (running, 1/3 partitions proved); the job is kept in the "
                       "journal"),
            std::string::npos)
      << r.err;
}

TEST(Ctl, WaitWritesTheResultsWhenZkfarmdCannotWriteAsTheSubmitter) {
  CtlTempDir dir;
  const fs::path out = dir.path / "results";
  FakeSupervisor sup(dir.path, [out](const Message& q) {
    if (q["t"] == "job") {
      Message j = job_object(q.value("job", 0), "done", 2, 2);
      j["delivery"] = "client";
      j["owner_uid"] = uint64_t(getuid());
      j["out"] = out.string();
      return std::vector<std::string>{ok_reply({{"job", j}})};
    }
    Message results = Message::array();
    for (int k = 0; k < 2; ++k)
      results.push_back({{"partition", k}, {"proof", "proof " + std::to_string(k)}, {"public", "public " + std::to_string(k)}});
    return std::vector<std::string>{ok_reply({{"job", 8}, {"partitions", 2}, {"results", results}, {"next", nullptr}})};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"wait", "8", "-q"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "job 8 done: 2 proofs written to " + out.string() + "\n");
  EXPECT_EQ(slurp(out / "1.proof.json"), "proof 1");
  EXPECT_EQ(slurp(out / "0.public.json"), "public 0");
}

TEST(Ctl, ResultWritesEveryPageAsTheCallerNeverThroughASymlink) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message& q) {
    const uint64_t from = q.value("from", uint64_t(0));
    Message results = Message::array();
    for (uint64_t k = from; k < std::min<uint64_t>(from + 2, 3); ++k)
      results.push_back({{"partition", k}, {"proof", "p" + std::to_string(k)}, {"public", "x" + std::to_string(k)}});
    const Message next = from + 2 < 3 ? Message(from + 2) : Message(nullptr);
    return std::vector<std::string>{ok_reply({{"job", 5}, {"partitions", 3}, {"results", results}, {"next", next}})};
  });
  fs::create_directories(dir.path / "out");
  std::ofstream(dir.path / "victim") << "keep";
  fs::create_symlink(dir.path / "victim", dir.path / "out" / "1.proof.json");
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"result", "5", "--out", "out"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "job 5: 3 proofs written to " + (dir.path / "out").string() + "\n");
  for (int k = 0; k < 3; ++k) EXPECT_EQ(slurp(dir.path / "out" / (std::to_string(k) + ".proof.json")), "p" + std::to_string(k));
  EXPECT_FALSE(fs::is_symlink(dir.path / "out" / "1.proof.json"));
  EXPECT_EQ(slurp(dir.path / "victim"), "keep");
  auto reqs = sup.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1]["from"], 2);
}

// A shared queue restarting: zkfarmd refuses `result` with retry_after_ms;
// zkfarmctl asks again and writes every proof. A refusal without the hint
// (an unknown job) is final at once.
TEST(Ctl, ResultAsksAgainWhileTheRefusalIsTransient) {
  CtlTempDir dir;
  std::atomic<int> asked{0};
  FakeSupervisor sup(dir.path, [&asked](const Message& q) {
    if (q.value("job", uint64_t(0)) != 5) return std::vector<std::string>{error_reply("no job 6 in the journal")};
    if (asked++ < 2) {
      Message m = protocol::make("reply");
      m["ok"] = false;
      m["error"] = "job 5: the queue is unreachable";
      m["retry_after_ms"] = 20;
      return std::vector<std::string>{protocol::encode(m)};
    }
    Message results = Message::array();
    results.push_back({{"partition", 0}, {"proof", "p0"}, {"public", "x0"}});
    return std::vector<std::string>{ok_reply({{"job", 5}, {"partitions", 1}, {"results", results}, {"next", nullptr}})};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"result", "5", "--out", "out"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(slurp(dir.path / "out" / "0.proof.json"), "p0");
  EXPECT_NE(r.err.find("the queue is unreachable; asking again"), std::string::npos) << r.err;
  EXPECT_EQ(sup.requests().size(), 3u);

  CtlRun gone = run_ctl(base_args(dir) + std::vector<std::string>{"result", "6", "--out", "out6"}, dir.path);
  EXPECT_EQ(gone.rc, 1);
  EXPECT_NE(gone.err.find("no job 6"), std::string::npos) << gone.err;
  EXPECT_EQ(sup.requests().size(), 4u);
  EXPECT_FALSE(fs::exists(dir.path / "out6"));
}

pid_t lock_holder(const fs::path& state);

TEST(Ctl, StopWaitReportsHowZkfarmdExited) {
  CtlTempDir dir;
  std::atomic<int> mode{0};  // 0: clean exit, 1: exit 1, 2: never answers, 3: refused
  FakeSupervisor sup(dir.path, [&](const Message& q) {
    if (q["t"] == "status") return std::vector<std::string>{ok_reply({{"status", full_status()}})};
    EXPECT_EQ(q["wait"], true);
    if (mode == 0) return std::vector<std::string>{ok_reply({{"exit_code", 0}, {"pid", 4321}})};
    if (mode == 3) return std::vector<std::string>{error_reply("permission denied: 'zkfarmctl stop' (request 'stop') is for root, …")};
    if (mode == 1) {
      Message m = protocol::make("reply");
      m["ok"] = false;
      m["exit_code"] = 1;
      m["error"] = "zkfarmd stopped with exit code 1: the memory of a GPU worker was not released within release_timeout";
      return std::vector<std::string>{protocol::encode(m)};
    }
    return std::vector<std::string>{};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"stop", "--wait"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("stopped (pid 4321, exit code 0)"), std::string::npos) << r.out;
  mode = 1;
  r = run_ctl(base_args(dir) + std::vector<std::string>{"stop", "--wait"}, dir.path);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("not released within release_timeout"), std::string::npos) << r.err;
  // A refusal that stopped nothing (not an admin) ends at once: it does not
  // wait for the process (here a held state lock) that is not stopping.
  mode = 3;
  const pid_t holder = lock_holder(dir.path);
  r = run_ctl(base_args(dir) + std::vector<std::string>{"stop", "--wait"}, dir.path);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  fs::remove(dir.path / "zkfarmd.lock");
  mode = 2;
  r = run_ctl(base_args(dir) + std::vector<std::string>{"stop", "--wait", "--wait-timeout", "1"}, dir.path);
  EXPECT_EQ(r.rc, 4) << r.err;
  EXPECT_NE(r.err.find("stopping: 3 partitions in flight, 1 worker running; gpu-0 release wait"), std::string::npos)
      << r.err;  // progress from status meanwhile
  EXPECT_NE(r.err.find("still stopping after 1 s"), std::string::npos) << r.err;
}

TEST(Ctl, RestartAndUpgradeWaitFollowTheirOperation) {
  CtlTempDir dir;
  auto polls = std::make_shared<std::atomic<int>>(0);
  std::atomic<bool> fail{false};
  FakeSupervisor sup(dir.path, [&, polls](const Message& q) {
    if (q["t"] == "restart" || q["t"] == "upgrade")
      return std::vector<std::string>{ok_reply({{"workers", {"synth-0", "gpu-0"}}, {"rolling_id", 3}})};
    Message s = full_status();
    const int n = (*polls)++;
    s["rolling"]["what"] = fail ? "upgrade" : "restart";
    s["rolling"]["result"] = n < 2 ? "running" : fail ? "failed" : "done";
    s["rolling"]["error"] = fail && n >= 2 ? "worker gpu-0: new binary /opt/x died before READY; old binary kept" : "";
    if (n == 0) s["rolling"]["id"] = 2;  // an older operation: not ours
    return std::vector<std::string>{ok_reply({{"status", s}})};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"restart", "all", "--wait"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("restart 3 done"), std::string::npos) << r.out;
  *polls = 0;
  fail = true;
  r = run_ctl(base_args(dir) + std::vector<std::string>{"upgrade", "--gpu", "/opt/x", "--wait"}, dir.path);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("upgrade 3 failed: worker gpu-0: new binary /opt/x died before READY; old binary kept"),
            std::string::npos)
      << r.err;
  // Without --wait: started, exit 0 at once.
  r = run_ctl(base_args(dir) + std::vector<std::string>{"upgrade", "--gpu", "/opt/x"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("--wait"), std::string::npos) << r.out;
}

TEST(Ctl, ReadyExitCodes) {
  CtlTempDir dir;
  // None running: 3 at once; with --wait, 4 after its timeout.
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"ready"}, dir.path);
  EXPECT_EQ(r.rc, 3) << r.err;
  r = run_ctl(base_args(dir) + std::vector<std::string>{"ready", "--wait", "--timeout", "0.3"}, dir.path);
  EXPECT_EQ(r.rc, 4) << r.err;
  EXPECT_NE(r.err.find("not ready after 0.3 s"), std::string::npos) << r.err;

  auto polls = std::make_shared<std::atomic<int>>(0);
  FakeSupervisor sup(dir.path, [polls](const Message&) {
    Message s = full_status();
    if ((*polls)++ >= 3) {
      s["intake"] = "open";
      s["ready"] = true;
    }
    return std::vector<std::string>{ok_reply({{"status", s}})};
  });
  r = run_ctl(base_args(dir) + std::vector<std::string>{"ready"}, dir.path);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("not ready: drained"), std::string::npos) << r.err;
  r = run_ctl(base_args(dir) + std::vector<std::string>{"ready", "--wait", "--timeout", "10"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "ready\n");
  r = run_ctl(base_args(dir) + std::vector<std::string>{"ready"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
}

TEST(Ctl, NoSupervisorExits3) {
  CtlTempDir dir;
  const std::string want = "zkfarmctl: no zkfarmd is running at " + dir.path.string() + " (";

  // No socket file: detected before connecting.
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"status"}, dir.path);
  EXPECT_EQ(r.rc, 3);
  EXPECT_EQ(r.err.rfind(want, 0), 0u) << r.err;
  EXPECT_NE(r.err.find("control.sock does not exist"), std::string::npos) << r.err;

  // A missing state dir.
  r = run_ctl({"--state-dir", (dir.path / "nope").string(), "jobs"}, dir.path);
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.err.find("no zkfarmd is running at"), std::string::npos) << r.err;

  // A plain file named control.sock.
  { std::ofstream(dir.path / "control.sock") << "x"; }
  r = run_ctl(base_args(dir) + std::vector<std::string>{"status"}, dir.path);
  EXPECT_EQ(r.rc, 3);
  EXPECT_EQ(r.err.rfind(want, 0), 0u) << r.err;
  EXPECT_NE(r.err.find("is not a socket"), std::string::npos) << r.err;
  fs::remove(dir.path / "control.sock");

  // A stale socket file (its process is gone): the kernel refuses the connect,
  // so zkfarmctl says so at once, whatever its --timeout-ms (a submit's is 600 s).
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, (dir.path / "control.sock").c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
  r = run_ctl(base_args(dir, 600000) + std::vector<std::string>{"status"}, dir.path);
  EXPECT_EQ(r.rc, 3);
  EXPECT_EQ(r.err.rfind(want, 0), 0u) << r.err;
  EXPECT_NE(r.err.find("refuses connections: zkfarmd is not running"), std::string::npos) << r.err;
}

TEST(Ctl, ASupervisorThatNeverAnswersExits3) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message&) { return std::vector<std::string>{}; });
  CtlRun r = run_ctl(base_args(dir, 300) + std::vector<std::string>{"wait", "1"}, dir.path);
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.err.find("no reply on " + dir.path.string() + "/control.sock within 300 ms"), std::string::npos)
      << r.err;
}

TEST(Ctl, GarbageRepliesExit1WithoutACrash) {
  struct Case {
    std::vector<std::string> frames;
    std::vector<std::string> args;
    const char* want;
  };
  Message other_version = Message{{"v", 2}, {"t", "reply"}, {"ok", true}, {"job", 1}};
  const std::vector<Case> cases = {
      {{std::string("\xc1garbage\xff", 9)}, {"status"}, "not a MessagePack message"},
      {{""}, {"status"}, "not a MessagePack message"},
      {{protocol::encode(Message(17))}, {"status"}, "not a map"},
      {{protocol::encode(Message{{"v", 1}, {"t", "reply"}})}, {"status"}, "no boolean \"ok\""},
      {{protocol::encode(Message{{"v", 1}, {"ok", "yes"}})}, {"status"}, "no boolean \"ok\""},
      {{protocol::encode(other_version)}, {"status"}, "protocol version 2"},
      {{FakeSupervisor::kRaw + std::string("\x7f\xff\xff\xff", 4) + "x"}, {"status"}, "frame of 2147483647 bytes exceeds the limit"},
      {{ok_reply()}, {"status"}, "\"status\""},
      {{ok_reply({{"status", 3}})}, {"status", "--json"}, "\"status\""},
      {{ok_reply({{"jobs", "none"}})}, {"jobs"}, "\"jobs\""},
      {{ok_reply({{"job", "x"}})}, {"submit", "--zkey", "k", "--wtns", "w"}, "\"job\""},
      {{ok_reply({{"job", -1}})}, {"submit", "--zkey", "k", "--wtns", "w"}, "\"job\""},
      {{ok_reply({{"job", Message{{"state", "running"}}}})}, {"wait", "1"}, "\"done\""},
      {{ok_reply({{"job", job_object(1, "exploded", 0, 1)}})}, {"wait", "1"}, "unknown job state"},
      {{protocol::encode(Message{{"v", 1}, {"ok", false}})}, {"stop"}, "without an error message"},
  };
  CtlTempDir dir;
  std::mutex mu;
  std::vector<std::string> frames;
  FakeSupervisor sup(dir.path, [&](const Message&) {
    std::lock_guard<std::mutex> lock(mu);
    return frames;
  });
  for (const auto& c : cases) {
    {
      std::lock_guard<std::mutex> lock(mu);
      frames = c.frames;
    }
    CtlRun r = run_ctl(base_args(dir) + c.args, dir.path);
    EXPECT_EQ(r.rc, 1) << c.want << ": " << r.err;
    EXPECT_EQ(r.err.rfind("zkfarmctl: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.want << " not in: " << r.err;
  }
}

TEST(Ctl, UsageErrorsExit2) {
  CtlTempDir dir;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--state-dir", "/x", "frobnicate"},
           {"--state-dir", "/x"},
           {"--state-dir", "/x", "stop", "--timeout", "-5"},  // CLI11 alone would wrap it to 2^64 - 5
           {"--state-dir", "/x", "cancel", "-1"},
           {"--state-dir", "/x", "cancel", "0x10"},
           {"--state-dir", "/x", "wait", "1", "--timeout", "inf"},
           {"--state-dir", "/x", "stop", "--wait", "--wait-timeout", "-1"},
           {"--state-dir", "/x", "stop", "--now", "--timeout", "5"},
           {"--state-dir", "/x", "tenant", "set", "t", "--max-stored-bytes", "-1"},
           {"--state-dir", "/x", "logs", "-n", "-3"},
           {"--state-dir", "/x", "--timeout-ms", "0x10", "jobs"},
           {"--state-dir", "/x", "jobs", "--limit", "1001"},
           {"--state-dir", "/x", "submit", "--zkey", "k"},
           {"--state-dir", "/x", "submit", "--zkey", "k", "--wtns", "w", "--priority", "urgent"},
           {"--state-dir", "/x", "wait"},
           {"--state-dir", "/x", "wait", "abc"},
           {"--state-dir", "/x", "--timeout-ms", "0", "jobs"},
       }) {
    CtlRun r = run_ctl(args, dir.path);
    EXPECT_EQ(r.rc, 2) << args.back() << ": " << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  CtlRun r = run_ctl({"--help"}, dir.path);
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("Exit codes:"), std::string::npos) << r.out;
}

TEST(Ctl, Renderers) {
  EXPECT_EQ(ctl::progress_bar(7, 10, 10), "[#######---] 7/10 partitions");
  EXPECT_EQ(ctl::progress_bar(0, 3, 6), "[------] 0/3 partitions");
  EXPECT_EQ(ctl::progress_bar(3, 3, 6), "[######] 3/3 partitions");
  EXPECT_EQ(ctl::progress_bar(0, 0, 4), "[----] 0/0 partitions");
  EXPECT_EQ(ctl::progress_bar(9, 3, 4), "[####] 9/3 partitions");
  EXPECT_EQ(ctl::format_table({"ID", "STATE"}, {{"synth-0", "busy"}, {"gpu-0"}}),
            "ID       STATE\nsynth-0  busy\ngpu-0\n");
  EXPECT_EQ(ctl::cell(Message(nullptr)), "-");
  EXPECT_EQ(ctl::cell(Message("a\nb")), "a b");
  EXPECT_EQ(ctl::cell(Message::object(), "x"), "-");
  EXPECT_EQ(ctl::format_mib(Message(1048576 * 3 / 2)), "1.5 MiB");
  EXPECT_EQ(ctl::format_mib(Message("x")), "-");
  EXPECT_EQ(ctl::format_jobs(Message::array()), "no jobs\n");
  // Whatever the status holds, rendering it never throws.
  for (const Message& s : {Message::object(), Message(5), Message{{"workers", 3}, {"arena", "x"}, {"jobs", {1, 2}}}}) {
    EXPECT_NO_THROW(ctl::format_status(s));
  }
}

TEST(Ctl, StopNowAndKillAWorkerSendTheirRequests) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message& q) {
    if (q["t"] == "kill_worker") return std::vector<std::string>{ok_reply({{"worker", q["worker"]}, {"pid", 77}})};
    return std::vector<std::string>{ok_reply()};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"stop", "--now"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("is stopping now (workers killed"), std::string::npos) << r.out;
  r = run_ctl(base_args(dir) + std::vector<std::string>{"kill", "gpu-0"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "worker gpu-0 (pid 77) killed; zkfarmd requeues its partitions and restarts it after its backoff\n");
  // The old spelling: the whole farm, with a note; -q silences the note.
  r = run_ctl(base_args(dir) + std::vector<std::string>{"kill"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("`kill` without a worker is `stop --now`"), std::string::npos) << r.err;
  r = run_ctl(base_args(dir) + std::vector<std::string>{"-q", "kill"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto reqs = sup.requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[0]["t"], "stop");
  EXPECT_EQ(reqs[0]["now"], true);
  EXPECT_FALSE(reqs[0].contains("wait"));
  EXPECT_EQ(reqs[1]["t"], "kill_worker");
  EXPECT_EQ(reqs[1]["worker"], "gpu-0");
  EXPECT_EQ(reqs[2]["t"], "kill");
  EXPECT_FALSE(reqs[2].contains("worker"));  // never "kill" with a target: an older zkfarmd would kill the farm
}

TEST(Ctl, AMistypedVerbGetsADidYouMean) {
  CtlTempDir dir;
  CtlRun r = run_ctl({"--state-dir", "/x", "--timeout-ms", "100", "stauts"}, dir.path);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("unknown verb 'stauts'; did you mean 'status'?"), std::string::npos) << r.err;
  r = run_ctl({"--state-dir", "/x", "circuit", "lsit"}, dir.path);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("unknown verb 'circuit lsit'; did you mean 'circuit list'?"), std::string::npos) << r.err;
  r = run_ctl({"--state-dir", "/x", "frobnicate"}, dir.path);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("unknown verb 'frobnicate'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;

  const std::vector<std::string> verbs = {"submit", "status", "stop", "jobs", "logs", "ready", "result", "resume"};
  EXPECT_EQ(ctl::closest("stauts", verbs), "status");
  EXPECT_EQ(ctl::closest("STOP", verbs), "stop");
  EXPECT_EQ(ctl::closest("sumbit", verbs), "submit");
  EXPECT_EQ(ctl::closest("log", verbs), "logs");
  EXPECT_EQ(ctl::closest("xyz", verbs), "");
  EXPECT_EQ(ctl::closest("re", verbs), "");  // ready, result, resume: no one answer
  auto verbs_of = [](const std::vector<std::string>& path) {
    if (path.empty()) return std::vector<std::string>{"circuit", "status"};
    if (path[0] == "circuit") return std::vector<std::string>{"add", "list"};
    return std::vector<std::string>{};
  };
  auto scan = ctl::scan_verbs({"--state-dir", "circuit", "circuit", "lst"}, {"--state-dir"}, verbs_of);
  EXPECT_EQ(scan.path, std::vector<std::string>{"circuit"});
  EXPECT_EQ(scan.unknown, "lst");
  scan = ctl::scan_verbs({"status", "gpu-0", "-n", "5"}, {"--state-dir"}, verbs_of);
  EXPECT_EQ(scan.unknown, "");  // a leaf's own arguments are not verbs
}

/// A clock the test moves by hand.
struct ProgressLineClock {
  ctl::ProgressLine::Clock::time_point now{};
};

// Off a terminal a line is printed when its phase changes, else at most
// every kOffTtyEvery (a countdown in the text does not print a line a poll);
// the last text held back comes out at the end.
TEST(Ctl, ProgressOffATerminalIsThrottledByPhase) {
  std::ostringstream out;
  auto t = ProgressLineClock();
  {
    ctl::ProgressLine p(false, false, out, [&] { return t.now; });
    p.show("restart in 900 ms", "exited");
    t.now += std::chrono::milliseconds(100);
    p.show("restart in 800 ms", "exited");
    t.now += std::chrono::milliseconds(100);
    p.show("restart in 700 ms", "exited");
    t.now += ctl::ProgressLine::kOffTtyEvery;
    p.show("restart in 100 ms", "exited");
    p.show("starting", "starting");
    p.show("ready 1", "ready");
    p.show("ready 2", "ready");
  }
  EXPECT_EQ(out.str(), "restart in 900 ms\nrestart in 100 ms\nstarting\nready 1\nready 2\n");
  std::ostringstream tty;
  {
    ctl::ProgressLine p(false, true, tty, [&] { return t.now; });
    p.show("a");
    p.show("b");
  }
  EXPECT_EQ(tty.str(), "\ra\033[K\rb\033[K\n");
  std::ostringstream none;
  {
    ctl::ProgressLine p(true, false, none, [&] { return t.now; });
    p.show("a");
  }
  EXPECT_EQ(none.str(), "");
}

TEST(Ctl, PluralsAndUserNames) {
  EXPECT_EQ(ctl::plural(1, "partition"), "1 partition");
  EXPECT_EQ(ctl::plural(0, "partition"), "0 partitions");
  EXPECT_EQ(ctl::plural(2, "proof"), "2 proofs");
  EXPECT_EQ(ctl::progress_bar(1, 1, 2), "[##] 1/1 partition");
  EXPECT_EQ(ctl::user_name(Message(0)), "root");
  EXPECT_EQ(ctl::user_name(Message(4000000000u)), "uid 4000000000");
  EXPECT_EQ(ctl::user_name(Message("x")), "-");
}

TEST(Ctl, ResultDefaultsToProofsInTheCurrentFolder) {
  CtlTempDir dir;
  FakeSupervisor sup(dir.path, [](const Message&) {
    Message results = Message::array({{{"partition", 0}, {"proof", "p0"}, {"public", "x0"}}});
    return std::vector<std::string>{ok_reply({{"job", 5}, {"partitions", 1}, {"results", results}, {"next", nullptr}})};
  });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"result", "5"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "job 5: 1 proof written to " + (dir.path / "proofs").string() + "\n");
  EXPECT_EQ(slurp(dir.path / "proofs" / "0.proof.json"), "p0");
}

TEST(Ctl, StatusOfOneWorkerShowsItAndItsLastLogLines) {
  CtlTempDir dir;
  const fs::path log = dir.path / "zkfarmd.log";
  {
    std::ofstream f(log);
    f << "[10:00:00] [zkfarmd] [info] worker gpu-0: started pid 99 (/usr/bin/zkfarm-gpu)\n";
    for (int k = 0; k < 30; ++k) f << "[10:00:01] [zkfarmd] [info] [synth-0] line " << k << "\n";
    f << "[10:00:02] [zkfarmd] [info] [gpu-0] proving\n";
    f << "[10:00:03] [zkfarmd] [error] worker gpu-0: missed its heartbeats; sending SIGKILL to pid 99";  // no newline yet
  }
  Message st = full_status();
  st["log_file"] = log.string();
  FakeSupervisor sup(dir.path, [&](const Message&) { return std::vector<std::string>{ok_reply({{"status", st}})}; });
  CtlRun r = run_ctl(base_args(dir) + std::vector<std::string>{"status", "gpu-0", "-n", "2"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("gpu-0 - gpu worker, releasing\n      PID: -\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("release wait 1.2 s of 2m 00s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n[10:00:02] [zkfarmd] [info] [gpu-0] proving\n[10:00:03] [zkfarmd] [error] worker gpu-0: missed"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("started pid 99"), std::string::npos) << r.out;  // only the last 2
  EXPECT_EQ(r.out.find("synth-0"), std::string::npos) << r.out;
  r = run_ctl(base_args(dir) + std::vector<std::string>{"status", "gpu-0", "--json"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Message::parse(r.out)["id"], "gpu-0");
  r = run_ctl(base_args(dir) + std::vector<std::string>{"status", "gpu-1"}, dir.path);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no worker 'gpu-1'; did you mean 'gpu-0'?"), std::string::npos) << r.err;
  // logs: all of it, or the last N lines.
  r = run_ctl(base_args(dir) + std::vector<std::string>{"logs"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, slurp(log));
  r = run_ctl(base_args(dir) + std::vector<std::string>{"logs", "-n", "1"}, dir.path);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "[10:00:03] [zkfarmd] [error] worker gpu-0: missed its heartbeats; sending SIGKILL to pid 99\n");
  // A log this zkfarmctl cannot open: the path and the system's reason.
  st["log_file"] = (dir.path / "missing.log").string();
  r = run_ctl(base_args(dir) + std::vector<std::string>{"logs"}, dir.path);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("missing.log"), std::string::npos) << r.err;
}

TEST(Ctl, LastLinesReadsBackwardsAcrossChunks) {
  CtlTempDir dir;
  const fs::path f = dir.path / "log";
  std::string text;
  for (int k = 0; k < 20000; ++k) text += "line " + std::to_string(k) + (k % 7 == 0 ? " [w] " : "") + "\n";
  std::ofstream(f) << text;
  auto last = ctl::last_lines(f.string(), 3);
  EXPECT_EQ(last, (std::vector<std::string>{"line 19997", "line 19998", "line 19999 [w] "}));
  auto kept = ctl::last_lines(f.string(), 2, [](std::string_view l) { return l.find("[w]") != std::string_view::npos; });
  EXPECT_EQ(kept, (std::vector<std::string>{"line 19992 [w] ", "line 19999 [w] "}));
  auto all = ctl::last_lines(f.string(), SIZE_MAX);
  ASSERT_EQ(all.size(), 20000u);
  EXPECT_EQ(all.front(), "line 0 [w] ");
  EXPECT_EQ(all[12345], "line 12345");
}

// logs -f survives logrotate: what the renamed file still got, then the new
// file from its start; and a file truncated in place is read again.
TEST(Ctl, LogsFollowSurvivesRotation) {
  CtlTempDir dir;
  const fs::path log = dir.path / "zkfarmd.log";
  std::ofstream(log) << "old 1\n";
  Message st = sample_status();
  st["log_file"] = log.string();
  FakeSupervisor sup(dir.path, [&](const Message&) { return std::vector<std::string>{ok_reply({{"status", st}})}; });
  const fs::path out = dir.path / "out";
  const std::string bin = ZKFARM_CTL_BIN, sd = dir.path.string(), out_s = out.string();
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(o, 1);
    execl(bin.c_str(), bin.c_str(), "--state-dir", sd.c_str(), "logs", "-f", static_cast<char*>(nullptr));
    _exit(127);
  }
  // A hang guard only: each step waits for what zkfarmctl prints.
  auto wait_for = [&](const std::string& want) {
    for (int i = 0; i < 2000 && slurp(out).find(want) == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return slurp(out);
  };
  EXPECT_NE(wait_for("old 1\n").find("old 1\n"), std::string::npos);
  { std::ofstream(log, std::ios::app) << "old 2\n"; }
  fs::rename(log, dir.path / "zkfarmd.log.1");
  { std::ofstream(dir.path / "zkfarmd.log.1", std::ios::app) << "old 3\n"; }  // written before the reopen
  { std::ofstream(log) << "new 1\n"; }
  std::string seen = wait_for("new 1\n");
  { std::ofstream(log, std::ios::trunc) << "n\n"; }  // copytruncate
  seen = wait_for("new 1\nn\n");
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(seen, "old 1\nold 2\nold 3\nnew 1\nn\n");
}

/// A process that holds STATE/zkfarmd.lock as zkfarmd does (flock, exclusive)
/// until it is killed.
pid_t lock_holder(const fs::path& state) {
  const std::string lock = (state / "zkfarmd.lock").string();
  int ready[2];
  if (pipe(ready) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(lock.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
    (void)!write(ready[1], "r", 1);
    for (;;) pause();
  }
  char c;
  (void)!read(ready[0], &c, 1);
  close(ready[0]);
  close(ready[1]);
  return pid;
}

TEST(Ctl, ExitWatchWaitsForTheProcessAndItsLock) {
  CtlTempDir dir;
  // Both ways: the pidfd and the lock.
  pid_t pid = lock_holder(dir.path);
  ASSERT_GT(pid, 0);
  {
    ctl::ExitWatch watch(pid, dir.path.string());
    EXPECT_EQ(watch.how(), "process and state lock");
    EXPECT_EQ(watch.wait(50), ctl::ExitWatch::Result::kTimeout);
    kill(pid, SIGKILL);
    EXPECT_EQ(watch.wait(-1), ctl::ExitWatch::Result::kGone);  // a zombie has exited, its lock is free
  }
  waitpid(pid, nullptr, 0);
  // The lock alone (zkfarmd in another pid namespace).
  pid = lock_holder(dir.path);
  {
    ctl::ExitWatch watch(0, dir.path.string());
    EXPECT_EQ(watch.how(), "state lock");
    EXPECT_EQ(watch.wait(50), ctl::ExitWatch::Result::kTimeout);
    kill(pid, SIGKILL);
    EXPECT_EQ(watch.wait(-1), ctl::ExitWatch::Result::kGone);
  }
  waitpid(pid, nullptr, 0);
  // The process alone; and a peer that is not the zkfarmd that answered is dropped.
  fs::remove(dir.path / "zkfarmd.lock");
  pid = fork();
  if (pid == 0) {
    for (;;) pause();
  }
  {
    ctl::ExitWatch watch(pid, dir.path.string());
    EXPECT_EQ(watch.how(), "process");
    watch.answered_by(pid);
    EXPECT_EQ(watch.how(), "process");
    EXPECT_EQ(watch.wait(50), ctl::ExitWatch::Result::kTimeout);
    watch.answered_by(pid + 1);
    EXPECT_EQ(watch.how(), "");
    EXPECT_EQ(watch.wait(-1), ctl::ExitWatch::Result::kUnwatchable);
    EXPECT_NE(watch.why_not().find("not the zkfarmd that answered"), std::string::npos) << watch.why_not();
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace zkfarm
