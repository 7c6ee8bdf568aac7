// The supervisor's pieces on their own: dispatch order, slot allocation and
// generations, the arena's header checks, configuration errors.
#include <sys/stat.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "shm/arena.hpp"
#include "shm/slots.hpp"
#include "supervisor/config.hpp"
#include "supervisor/model/jobs.hpp"

namespace zkfarm::supervisor {
namespace {

Job make_job(Priority p, size_t parts) {
  Job j;
  j.priority = p;
  j.parts.resize(parts);
  return j;
}

TEST(JobTable, OrderIsPriorityThenOldestJobThenLowestPartition) {
  JobTable t;
  uint64_t a = t.add(make_job(Priority::kNormal, 3));
  uint64_t b = t.add(make_job(Priority::kNormal, 2));
  uint64_t c = t.add(make_job(Priority::kCritical, 2));
  uint64_t d = t.add(make_job(Priority::kLow, 1));
  std::vector<std::pair<uint64_t, uint32_t>> order;
  while (auto ref = t.next(PartState::kQueued)) {
    order.emplace_back(ref->job, ref->index);
    t.start_synthesis(*ref, shm::Slot{}, "synth-0", 0, 0);
  }
  std::vector<std::pair<uint64_t, uint32_t>> expect = {{c, 0}, {c, 1}, {a, 0}, {a, 1}, {a, 2}, {b, 0}, {b, 1}, {d, 0}};
  EXPECT_EQ(order, expect);
}

// Issue 31: every loop pass walked every retained job (1.8 % of a core idle
// at 5,400 jobs). next() and count() now walk the live ones only.
TEST(JobTable, AWalkMeetsOnlyLiveJobsHoweverManyEndedOnesAreRetained) {
  JobTable t;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 2000; ++i) ids.push_back(t.add(make_job(Priority::kNormal, 2)));
  for (size_t i = 0; i + 1 < ids.size(); ++i) t.cancel(ids[i], 5);
  Job ended = make_job(Priority::kCritical, 1);
  ended.id = 90000;
  ended.state = JobState::kDone;
  ended.parts[0].state = PartState::kDone;
  t.restore(ended);  // a retained finished job from the journal
  Job live = make_job(Priority::kLow, 1);
  live.id = 90001;
  t.restore(live);
  EXPECT_EQ(t.count(PartState::kQueued), 3u);  // the last added job's 2 and the restored live one
  EXPECT_EQ(t.live_index_size(), 2u) << "ended jobs left the walk when it met them";
  auto first = t.next(PartState::kQueued);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->job, ids.back()) << "normal before low";
  EXPECT_EQ(t.all().size(), 2002u) << "the ended jobs are still retained for status and result";
  t.cancel(ids.back(), 6);
  t.cancel(90001, 6);
  EXPECT_FALSE(t.next(PartState::kQueued).has_value());
  EXPECT_EQ(t.live_index_size(), 0u);
  EXPECT_EQ(t.count(PartState::kCancelled), 0u) << "count walks live jobs only, as documented";
}

TEST(JobTable, DoneWhenAllPartitionsAreProvedAndDeliveredAndCancelSkipsTheJob) {
  JobTable t;
  uint64_t a = t.add(make_job(Priority::kHigh, 2));
  uint64_t b = t.add(make_job(Priority::kNormal, 1));
  t.mark_done({a, 0});
  t.mark_done({a, 1});
  EXPECT_NE(t.find(a)->state, JobState::kDone) << "proved is not done: the files are not written yet";
  EXPECT_FALSE(t.mark_delivered({a, 1}, 10));
  EXPECT_NE(t.find(a)->state, JobState::kDone);
  EXPECT_TRUE(t.mark_delivered({a, 0}, 20));
  EXPECT_EQ(t.find(a)->state, JobState::kDone);
  EXPECT_EQ(t.find(a)->finished_ms, 20);
  t.mark_done({b, 0});
  t.cancel(b, 30);
  EXPECT_EQ(t.find(b)->state, JobState::kCancelled);
  EXPECT_FALSE(t.mark_delivered({b, 0}, 40)) << "a delivery after the cancel must not make the job done";
  EXPECT_EQ(t.find(b)->state, JobState::kCancelled);
  EXPECT_FALSE(t.next(PartState::kQueued).has_value());
  EXPECT_EQ(t.find(b)->to_json()["state"], "cancelled");
}

TEST(JobTable, TransitionsCarryAPartitionThroughThePipelineAndBack) {
  JobTable t;
  const uint64_t a = t.add(make_job(Priority::kNormal, 2), /*now=*/100);
  EXPECT_EQ(t.find({a, 0})->queued_since_ms, 100);
  shm::Slot slot{};
  slot.id = 7;
  EXPECT_TRUE(t.start_synthesis({a, 0}, slot, "synth-0", 200, 5000)) << "the job's first start";
  EXPECT_FALSE(t.start_synthesis({a, 1}, slot, "synth-1", 210, 6000));
  EXPECT_EQ(t.find(a)->state, JobState::kRunning);
  EXPECT_EQ(t.find(a)->started_ms, 5000);
  t.worker_started({a, 0}, 250);
  EXPECT_EQ(t.find({a, 0})->queued_ms, 50);
  t.synthesized({a, 0}, 400);
  EXPECT_EQ(t.find({a, 0})->synth_ms, 150);
  EXPECT_EQ(t.find({a, 0})->state, PartState::kSynthesized);
  EXPECT_EQ(t.next(PartState::kSynthesized)->index, 0u);
  t.start_proving({a, 0}, "gpu-0", 500);
  EXPECT_EQ(t.find({a, 0})->worker, "gpu-0");
  // A dead GPU worker: back to the GPU queue in its slot, renewed.
  shm::Slot renewed = slot;
  renewed.generation = 2;
  t.reprove_in_slot({a, 0}, renewed);
  EXPECT_EQ(t.find({a, 0})->state, PartState::kSynthesized);
  EXPECT_EQ(t.find({a, 0})->slot->generation, 2u);
  // A dead synthesis worker: back to the queue, its slot handed back to free.
  auto freed = t.back_to_queue({a, 1}, 700);
  ASSERT_TRUE(freed.has_value());
  EXPECT_EQ(freed->id, 7u);
  EXPECT_EQ(t.find({a, 1})->state, PartState::kQueued);
  EXPECT_EQ(t.find({a, 1})->queued_since_ms, 700);
  EXPECT_EQ(t.count_crash({a, 1}), 1u);
  EXPECT_EQ(t.count_crash({a, 1}), 2u);
  // Proved, verified, delivered: done.
  t.start_proving({a, 0}, "gpu-0", 800);
  t.proving_ended({a, 0}, 900);
  EXPECT_EQ(t.find({a, 0})->prove_ms, 100);
  t.mark_done({a, 0}, std::string(256, 'p'));
  EXPECT_EQ(t.find({a, 0})->proof.size(), 256u);
  EXPECT_FALSE(t.find({a, 0})->slot.has_value());
  // The other partition's result cannot be written: the job ends failed with that error.
  t.start_synthesis({a, 1}, slot, "synth-0", 1000, 7000);
  t.synthesized({a, 1}, 1100);
  t.start_proving({a, 1}, "gpu-0", 1200);
  t.mark_done({a, 1});
  EXPECT_FALSE(t.mark_delivered({a, 1}, 8000, "disk full"));
  EXPECT_TRUE(t.mark_delivered({a, 0}, 9000));
  EXPECT_EQ(t.find(a)->state, JobState::kFailed);
  EXPECT_EQ(t.find(a)->error, "disk full");
  EXPECT_EQ(t.find(a)->finished_ms, 9000);
}

TEST(JobTable, APartitionOfAnEndedJobTakesTheJobsEndInsteadOfTheQueue) {
  JobTable t;
  const uint64_t a = t.add(make_job(Priority::kNormal, 2));
  shm::Slot slot{};
  t.start_synthesis({a, 0}, slot, "synth-0", 0, 0);
  t.cancel(a, 10);
  EXPECT_EQ(t.find({a, 1})->state, PartState::kCancelled) << "queued partitions end with the job";
  EXPECT_EQ(t.find({a, 0})->state, PartState::kSynthesizing) << "in a worker's hands until it answers";
  EXPECT_TRUE(t.back_to_queue({a, 0}, 20).has_value());
  EXPECT_EQ(t.find({a, 0})->state, PartState::kCancelled);
  EXPECT_FALSE(t.next(PartState::kQueued).has_value());
}

TEST(SlotAllocator, BudgetGenerationsAndCoalescing) {
  shm::SlotAllocator s(3 * 4096);
  auto a = s.allocate(4096), b = s.allocate(100), c = s.allocate(4096);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(b->size, 4096u);
  EXPECT_FALSE(s.allocate(1).has_value()) << "the arena never grows past its budget";
  EXPECT_TRUE(s.is_current(b->id, b->generation));
  EXPECT_TRUE(s.free(b->id));
  EXPECT_FALSE(s.is_current(b->id, b->generation)) << "a freed slot's old generation is stale";
  EXPECT_FALSE(s.free(b->id));
  EXPECT_TRUE(s.free(a->id));
  auto big = s.allocate(2 * 4096);  // a and b coalesced
  ASSERT_TRUE(big);
  EXPECT_EQ(big->offset, 0u);
  EXPECT_EQ(s.used(), 3 * 4096u);
}

TEST(Arena, CreateAttachAndRefuseForeignSegments) {
  const std::string name = "zkfarm-test-" + std::to_string(getpid());
  shm::Arena::remove(name);
  {
    auto a = shm::Arena::create(name, 10000);
    EXPECT_EQ(a.capacity(), 12288u);
    EXPECT_EQ((std::filesystem::status("/dev/shm/" + name).permissions() & std::filesystem::perms::all),
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    a.at(0, 8)[0] = 42;
    auto b = shm::Arena::attach(name);
    EXPECT_EQ(b.at(0, 8)[0], 42);
    EXPECT_THROW(b.at(12288 - 4, 8), shm::ArenaError);
    EXPECT_THROW(b.at(uint64_t(-1), 2), shm::ArenaError);
    EXPECT_THROW(shm::Arena::create(name, 4096), shm::ArenaError) << "exists already";
    a.mapping()[0] = 'X';  // corrupt the magic
    EXPECT_THROW(shm::Arena::attach(name), shm::ArenaError);
  }
  EXPECT_TRUE(shm::Arena::remove(name));
  EXPECT_THROW(shm::Arena::attach(name), shm::ArenaError);
}

TEST(Arena, NameDependsOnlyOnTheStateDir) {
  EXPECT_EQ(shm::Arena::name_for("/var/lib/zkfarm"), shm::Arena::name_for("/var/lib/zkfarm/"));
  EXPECT_NE(shm::Arena::name_for("/var/lib/zkfarm"), shm::Arena::name_for("/var/lib/zkfarm2"));
}

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
  Config m;
  EXPECT_EQ(m.gpu_msm_copies, 1u);  // precomputed tables off until they have run on a GPU
  m.load_toml(write_temp("gpu_msm_copies = 0\n"));
  EXPECT_EQ(m.gpu_msm_copies, 0u);
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
