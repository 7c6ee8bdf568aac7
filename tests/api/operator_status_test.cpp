// operator_status (api/operator_status.hpp): what an operator token sees of
// the farm's status. A status with every field zkfarmd writes, each holding
// host details where it can, must come out with none of them.
#include <gtest/gtest.h>

#include "api/operator_status.hpp"

namespace zkfarm::api {
namespace {

using nlohmann::json;

json full_status() {
  return json::parse(R"({
    "version": "0.1.0", "pid": 4242, "state_dir": "/var/lib/zkfarm", "state": "running", "intake": "refusing",
    "intake_fault": "journal write failed: /var/lib/zkfarm/journal.sqlite: disk I/O error",
    "ready": true, "started_ms": 1, "uptime_s": 2.5, "in_flight": 3,
    "partitions": {"queued": 1}, "rolling": {"id": 7, "what": "upgrade", "result": "failed",
      "error": "cannot start /opt/zkfarm/bin/zkfarm-gpu; old binary /usr/lib/zkfarm/zkfarm-gpu kept", "started_ms": 5},
    "journal": {"path": "/var/lib/zkfarm/journal.sqlite", "bytes": 1}, "http_address": "127.0.0.1:9100",
    "config_file": "/etc/zkfarm/zkfarmd.toml", "log_file": "/var/log/zkfarm/zkfarmd.log",
    "workers": [{"id": "gpu-0", "kind": "gpu", "pid": 4343, "state": "failed", "binary": "/usr/lib/zkfarm/zkfarm-gpu",
                 "release": "waiting for pid 4343's memory", "release_wait": {"pid": 4343},
                 "failed_reason": "exited 1: /usr/lib/zkfarm/zkfarm-gpu: cannot open /dev/nvidia0", "restarts": 2}],
    "queue": {"synth": 1, "prove": 0},
    "cluster": {"queue": "postgresql://zk@db.internal:5432/farm?sslrootcert=/etc/ssl/ca.pem", "host_id": "h1:/var/lib/zkfarm",
                "reachable": false, "fault": "postgresql://zk@db.internal:5432/farm: timeout", "unreachable_since_ms": 9,
                "hosts": [{"host_id": "h2:/srv/zk", "pid": 99, "alive": true, "leases": 4}], "held_here": 1},
    "arena": {"kind": "memfd", "name": "zkfarm-arena-4242", "bytes": 100, "used": 10, "slots": 2},
    "connections": 1, "jobs": [{"id": 1, "out": "/home/alice/proofs"}], "job_counts": {"done": 1}, "jobs_omitted": 0,
    "a_field_added_later": "/var/lib/zkfarm/secret"
  })");
}

TEST(OperatorStatus, NoPathPidOrHostNameOfTheFarmLeaves) {
  const json out = operator_status(full_status());
  const std::string text = out.dump();
  for (const char* leak : {"/var/", "/etc/", "/opt/", "/usr/", "/home/", "/srv/", "4242", "4343", "\"pid\"", "db.internal",
                           "127.0.0.1", "h1:", "h2:", "zkfarm-arena", "secret"})
    EXPECT_EQ(text.find(leak), std::string::npos) << leak << " in " << text;
}

TEST(OperatorStatus, TheFarmsStateAndCountsStayAndFaultsSayThereIsOne) {
  const json out = operator_status(full_status());
  EXPECT_EQ(out["intake"], "refusing");
  EXPECT_TRUE(out["intake_fault"].get<std::string>().rfind("withheld", 0) == 0);
  EXPECT_EQ(out["in_flight"], 3);
  EXPECT_EQ(out["arena"], json::parse(R"({"kind": "memfd", "bytes": 100, "used": 10, "slots": 2})"));
  EXPECT_EQ(out["workers"][0]["state"], "failed");
  EXPECT_EQ(out["workers"][0]["restarts"], 2);
  EXPECT_TRUE(out["workers"][0].contains("failed_reason"));
  EXPECT_EQ(out["rolling"]["result"], "failed");
  EXPECT_EQ(out["cluster"]["reachable"], false);
  EXPECT_EQ(out["cluster"]["hosts"][0]["leases"], 4);
  EXPECT_FALSE(out.contains("jobs")) << "every tenant's";
  EXPECT_EQ(out["job_counts"]["done"], 1);
}

TEST(OperatorStatus, AnythingButAnObjectGivesAnEmptyObject) {
  for (const char* s : {"null", "[]", "3", "\"x\"", R"({"workers": 3, "cluster": [], "arena": "x", "rolling": null})"}) {
    const json out = operator_status(json::parse(s));
    EXPECT_TRUE(out.is_object()) << s;
  }
}

}  // namespace
}  // namespace zkfarm::api
