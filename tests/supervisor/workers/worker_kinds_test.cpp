// The worker-kind table (supervisor/workers/worker_kinds.*): one row per
// kind, in WorkerKind's order, each naming its binary, its upgrade field and
// its options, so that the code iterating it needs no case per kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "supervisor/workers/worker_kinds.hpp"

namespace zkfarm::supervisor {
namespace {

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(WorkerKinds, RowsFollowTheEnumAndNamesAreUnique) {
  std::set<std::string> names;
  for (size_t i = 0; i < kWorkerKinds.size(); ++i) {
    EXPECT_EQ(size_t(kWorkerKinds[i].kind), i);
    EXPECT_EQ(&kind_info(kWorkerKinds[i].kind), &kWorkerKinds[i]);
    EXPECT_TRUE(names.insert(kWorkerKinds[i].name).second) << kWorkerKinds[i].name;
  }
  EXPECT_STREQ(worker_kind_name(WorkerKind::kSynth), "synth");
  EXPECT_STREQ(worker_kind_name(WorkerKind::kGpu), "gpu");
  EXPECT_FALSE(kind_info(WorkerKind::kSynth).holds_device);
  EXPECT_TRUE(kind_info(WorkerKind::kGpu).holds_device);
}

TEST(WorkerKinds, EachRowNamesItsOwnBinaryAndUpgradeField) {
  Config cfg;
  cfg.synth_binary = "/opt/zkfarm/zkfarm-synth";
  cfg.gpu_binary = "/opt/zkfarm/zkfarm-gpu";
  EXPECT_EQ(cfg.*kind_info(WorkerKind::kSynth).binary, cfg.synth_binary);
  EXPECT_EQ(cfg.*kind_info(WorkerKind::kGpu).binary, cfg.gpu_binary);
  protocol::Rolling up;
  up.upgrade = true;
  up.gpu = "/opt/zkfarm/1/zkfarm-gpu";
  EXPECT_FALSE((up.*kind_info(WorkerKind::kSynth).upgrade_binary).has_value());
  EXPECT_EQ(up.*kind_info(WorkerKind::kGpu).upgrade_binary, up.gpu);
}

TEST(WorkerKinds, OptionsAreEachKindsOwn) {
  Config cfg;
  cfg.synth_threads = 3;
  cfg.gpu_threads = 5;
  cfg.backend = "auto";
  cfg.gpu_lanes = 1;
  const auto synth = kind_info(WorkerKind::kSynth).options(cfg, "");
  EXPECT_EQ(synth, (std::vector<std::string>{"--threads", "3"}));
  auto gpu = kind_info(WorkerKind::kGpu).options(cfg, "");
  EXPECT_TRUE(has(gpu, "5"));
  EXPECT_EQ(*(std::find(gpu.begin(), gpu.end(), "--backend") + 1), "cpu");  // auto without a device
  EXPECT_FALSE(has(gpu, "--lanes"));  // a worker binary from before lanes still starts
  gpu = kind_info(WorkerKind::kGpu).options(cfg, "0");
  EXPECT_EQ(*(std::find(gpu.begin(), gpu.end(), "--backend") + 1), "auto");
  cfg.gpu_lanes = 4;
  gpu = kind_info(WorkerKind::kGpu).options(cfg, "0");
  EXPECT_EQ(*(std::find(gpu.begin(), gpu.end(), "--lanes") + 1), "4");
}

}  // namespace
}  // namespace zkfarm::supervisor
