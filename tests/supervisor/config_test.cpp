// zkfarm.toml (supervisor/config.hpp): keys and errors that name the file,
// the line and the key meant; defaults and the relations finalize() checks.
#include <sys/stat.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "shm/arena.hpp"
#include "shm/slots.hpp"
#include "supervisor/config.hpp"
#include "supervisor/workers/worker_kinds.hpp"
#include "supervisor/model/jobs.hpp"

namespace zkfarm::supervisor {
namespace {

std::string write_temp(const std::string& text) {
  std::string path = (std::filesystem::temp_directory_path() / ("zkfarm-cfg-" + std::to_string(getpid()) + ".toml")).string();
  std::ofstream(path) << text;
  return path;
}

TEST(Config, TomlKeysAndErrorsNameFileAndKey) {
  Config c;
  std::string path = write_temp("synth_workers = 3\narena_mib = 64\nhttp_address = \"127.0.0.1:9100\"\n");
  c.load_toml(path);
  EXPECT_EQ(c.synth_workers, 3u);
  EXPECT_EQ(c.arena_mib, 64u);
  EXPECT_EQ(c.http_address, "127.0.0.1:9100");
  auto expect_error = [&](const std::string& text, const std::string& fault) {
    Config d;
    std::string p = write_temp(text);
    try {
      d.load_toml(p);
      FAIL() << "accepted: " << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(fault), std::string::npos) << e.what();
    }
  };
  expect_error("synth_wrkers = 3\n", "unknown key 'synth_wrkers'");
  expect_error("arena_mib = \"lots\"\n", "arena_mib: expected an integer");
  expect_error("heartbeat_ms = 1\n", "heartbeat_ms: 1 is out of range");
  expect_error("synth_workers = [\n", ".toml:1: Error while parsing array");  // FILE:LINE of the fault
  expect_error("gpu_msm_copies = 17\n", "gpu_msm_copies: 17 is out of range");
  expect_error("gpu_lanes = 33\n", "gpu_lanes: 33 is out of range");  // zkfarm-gpu's --lanes takes 1-32
  expect_error("gpu_lanes = 0\n", "gpu_lanes: 0 is out of range");
  Config lanes;
  lanes.load_toml(write_temp("gpu_lanes = 32\n"));
  EXPECT_EQ(lanes.gpu_lanes, 32u);
  expect_error("gpu_msm_copies = \"all\"\n", "gpu_msm_copies: expected \"auto\" or an integer from 0 to 16");
  Config m;
  EXPECT_FALSE(m.gpu_msm_copies.has_value());  // "auto": the worker decides by the key's size
  const std::vector<std::string> by_default = kind_info(WorkerKind::kGpu).options(m, "0");
  // Unset: the worker's own default, which an older worker binary also has.
  EXPECT_EQ(std::count(by_default.begin(), by_default.end(), "--msm-copies"), 0);
  m.load_toml(write_temp("gpu_msm_copies = 0\n"));
  EXPECT_EQ(m.gpu_msm_copies, 0u);
  const std::vector<std::string> args = kind_info(WorkerKind::kGpu).options(m, "0");
  const auto at = std::find(args.begin(), args.end(), "--msm-copies");
  ASSERT_NE(at, args.end());
  EXPECT_EQ(*std::next(at), "0");
  m.load_toml(write_temp("gpu_msm_copies = \"auto\"\n"));
  EXPECT_FALSE(m.gpu_msm_copies.has_value());
  std::filesystem::remove(path);
}

TEST(Config, ErrorsNameTheLineAndSuggestTheKeyMeant) {
  auto error_of = [](const std::string& text) -> std::string {
    Config d;
    try {
      d.load_toml(write_temp(text));
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "accepted";
  };
  // The fault's line, as FILE:LINE: KEY.
  EXPECT_NE(error_of("# comment\nsynth_workers = 2\narena_mib = -5\n").find(".toml:3: arena_mib: -5 is out of range"),
            std::string::npos);
  // A typo gets the key meant; another word gets none.
  const std::string typo = error_of("\nlog_levle = \"debug\"\n");
  EXPECT_NE(typo.find(":2: unknown key 'log_levle'; did you mean 'log_level'?"), std::string::npos) << typo;
  const std::string other = error_of("colour = \"blue\"\n");
  EXPECT_NE(other.find("unknown key 'colour'"), std::string::npos) << other;
  EXPECT_EQ(other.find("did you mean"), std::string::npos) << other;
  // A missing file: its errno, not the TOML library's "could not be opened".
  Config m;
  try {
    m.load_toml("/nonexistent/zkfarmd.toml");
    FAIL() << "a missing file was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/zkfarmd.toml: cannot read the configuration file: No such file"),
              std::string::npos)
        << e.what();
  }
  // A folder is no configuration.
  EXPECT_THROW(m.load_toml(std::filesystem::temp_directory_path().string()), ConfigError);
}

TEST(Config, LogFileIsUnderTheStateDirOrOff) {
  Config c;
  c.state_dir = "/var/lib/zkfarm";
  EXPECT_EQ(c.log_path(), "/var/lib/zkfarm/zkfarmd.log");
  c.load_toml(write_temp("log_file = \"logs/farm.log\"\n"));
  EXPECT_EQ(c.log_path(), "/var/lib/zkfarm/logs/farm.log");
  c.load_toml(write_temp("log_file = \"/var/log/zkfarm.log\"\n"));
  EXPECT_EQ(c.log_path(), "/var/log/zkfarm.log");
  c.load_toml(write_temp("log_file = \"\"\n"));
  EXPECT_EQ(c.log_path(), "");
}

TEST(Config, CheckHostNamesAMissingGroupOrBinary) {
  Config c;
  // check_host() must refuse, naming `fault`.
  auto refused_with = [&](const std::string& fault) {
    try {
      c.check_host();
      ADD_FAILURE() << "passed; expected: " << fault;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fault), std::string::npos) << e.what();
    }
  };
  c.state_dir = "/tmp";
  c.finalize("/bin");  // binaries default beside "zkfarmd": /bin/zkfarm-synth does not exist
  refused_with("synth_binary: /bin/zkfarm-synth: No such file");
  c.synth_binary = c.gpu_binary = "/bin/sh";
  c.check_host();  // the default admin group may be absent: nobody is admin by group then
  c.admin_group = "zkfarm-no-such-group";
  refused_with("admin_group: no group named 'zkfarm-no-such-group'");
  c.admin_group = "";
  c.log_file = "/nonexistent-zkfarm-dir/zkfarmd.log";  // a folder that is not there: a config fault, not a start's
  refused_with("its folder /nonexistent-zkfarm-dir does not exist");
  c.log_file = "zkfarmd.log";
  c.check_host();
  c.gpu_binary = "/etc/passwd";  // a file, not executable
  refused_with("gpu_binary: /etc/passwd is not an executable file");
}

TEST(Config, AQueuePasswordIsTakenOnlyFromAFileOthersCannotRead) {
  EXPECT_TRUE(pg_url_has_password("postgresql://zkfarm:s3cret@db:5432/zkfarm"));
  EXPECT_TRUE(pg_url_has_password("postgres://u:@db/zkfarm"));
  EXPECT_TRUE(pg_url_has_password("host=db dbname=zkfarm password=s3cret"));
  EXPECT_TRUE(pg_url_has_password("postgresql://db/zkfarm?user=u&password=s3cret"));
  EXPECT_FALSE(pg_url_has_password("postgresql://zkfarm@db:5432/zkfarm"));
  EXPECT_FALSE(pg_url_has_password("host=db dbname=zkfarm user=zkfarm"));
  EXPECT_FALSE(pg_url_has_password("postgresql://[::1]:5432/zkfarm"));
  const std::string path = write_temp("queue_url = \"postgresql://zkfarm:s3cret@db/zkfarm\"\n");
  ::chmod(path.c_str(), 0644);
  Config c;
  try {
    c.load_toml(path);
    FAIL() << "a password in a file others may read was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": queue_url holds a password"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mode 644"), std::string::npos) << e.what();
  }
  ::chmod(path.c_str(), 0600);
  Config d;
  d.load_toml(path);
  EXPECT_EQ(d.queue_url, "postgresql://zkfarm:s3cret@db/zkfarm");
  std::filesystem::remove(path);
}

TEST(Config, AQueueNeedsAnAbsoluteSharedDirAndAPrintableHostId) {
  auto finalized = [](const std::string& shared, const std::string& host, const std::string& state = "/tmp/x") {
    Config c;
    c.state_dir = state;
    c.queue_url = "postgresql://db/zkfarm";
    c.shared_dir = shared;
    c.host_id = host;
    c.finalize("/opt/zkfarm/bin");
    return c;
  };
  auto error_of = [&](const std::string& shared, const std::string& host) -> std::string {
    try {
      finalized(shared, host);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(error_of("", "h").find("queue_url needs shared_dir"), std::string::npos);
  EXPECT_NE(error_of("mnt/zkfarm", "h").find("shared_dir: 'mnt/zkfarm' is not an absolute path"), std::string::npos);
  EXPECT_NE(error_of("/mnt/zkfarm", "evil\x1b[31m\nFAKE yes").find("host_id: only letters"), std::string::npos);
  EXPECT_NE(error_of("/mnt/zkfarm", "a b").find("host_id: only letters"), std::string::npos);
  EXPECT_NE(error_of("/mnt/zkfarm", std::string(201, 'h')).find("longer than 200 bytes"), std::string::npos);
  EXPECT_EQ(finalized("/mnt/zkfarm", "gpu-07.example:/var/lib/zkfarm@rack2").host_id,
            "gpu-07.example:/var/lib/zkfarm@rack2");
  // The default (hostname:state dir) is made printable.
  const std::string dflt = finalized("/mnt/zkfarm", "", "/tmp/state dir\n").host_id;
  EXPECT_EQ(dflt.find_first_of(" \n"), std::string::npos) << dflt;
  EXPECT_NE(dflt.find(":/tmp/state_dir_"), std::string::npos) << dflt;
}

TEST(Config, FinalizeFillsDefaultsAndChecksRelations) {
  Config c;
  c.state_dir = "/tmp/x";
  c.finalize("/opt/zkfarm/bin");
  EXPECT_GE(c.synth_workers, 1u);
  EXPECT_EQ(c.synth_binary, "/opt/zkfarm/bin/zkfarm-synth");
  Config bad;
  bad.state_dir = "/tmp/x";
  bad.backend = "opencl";
  EXPECT_THROW(bad.finalize("."), ConfigError);
}

}  // namespace
}  // namespace zkfarm::supervisor
