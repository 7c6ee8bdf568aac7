// witgen/: the input reader every generator host compiles in (values as
// snarkjs takes them, the ones it refuses, names by circom's FNV-1a), the
// .wtns writer's bytes, and the subprocess runner (exit codes, signals,
// timeouts, output kept, descriptor 3, children left to their thread).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <sstream>
#include <thread>

#include "groth16/bn254.hpp"
#include "witgen/input_json.hpp"
#include "witgen/subprocess.hpp"
#include "witgen/wtns_writer.hpp"

namespace zkfarm::witgen {
namespace {

// BN254's r, little-endian.
std::vector<uint8_t> prime() {
  const auto& r = zkfarm::FrParams::kModulus;  // BN254's r, as the prover has it
  std::vector<uint8_t> p(32);
  for (int i = 0; i < 32; ++i) p[size_t(i)] = uint8_t(r[i / 8] >> (8 * (i % 8)));
  return p;
}
const std::string kP = "21888242871839275222246405745257275088548364400416034343698204186575808495617";
const std::string kPMinus1 = "21888242871839275222246405745257275088548364400416034343698204186575808495616";

std::string value_of(const std::string& json_value) {
  auto s = parse_input("{\"x\": " + json_value + "}", prime());
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].values.size(), 1u);
  return to_decimal(s[0].values.at(0));
}

std::string fault_of(const std::string& text) {
  try {
    parse_input(text, prime());
  } catch (const InputFault& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(WitgenInput, ValuesAsSnarkjsReadsThem) {
  EXPECT_EQ(value_of("0"), "0");
  EXPECT_EQ(value_of("42"), "42");
  EXPECT_EQ(value_of("3.0"), "3");
  EXPECT_EQ(value_of("-1"), kPMinus1);
  EXPECT_EQ(value_of("\"-1\""), kPMinus1);
  EXPECT_EQ(value_of("\"-0\""), "0");
  EXPECT_EQ(value_of("\"0x1f\""), "31");
  EXPECT_EQ(value_of("\"0XFF\""), "255");
  EXPECT_EQ(value_of("\"0o17\""), "15");
  EXPECT_EQ(value_of("\"0b101\""), "5");
  EXPECT_EQ(value_of("9007199254740992"), "9007199254740992");  // 2^53: exact in JavaScript
  EXPECT_EQ(value_of("\"" + kPMinus1 + "\""), kPMinus1);
  EXPECT_EQ(value_of("\"-" + kPMinus1 + "\""), "1");
}

TEST(WitgenInput, RefusesWhatIsNotAFieldElementNamingSignalAndValue) {
  EXPECT_NE(fault_of("{\"x\": \"" + kP + "\"}").find("signal x value 0 = \"" + kP.substr(0, 40)), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": \"" + kP + "\"}").find("not below the prime"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": \"-" + kP + "\"}").find("not below the prime"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": 1.5}").find("not an integer"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": 9007199254740993}").find("beyond 2^53"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": true}").find("a boolean"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": null}").find("null"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": \"\"}").find("an empty string"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": \" 1\"}").find("not a number"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": \"0x\"}").find("not a number"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": \"-0x1\"}").find("not a number"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": \"1e3\"}").find("not a number"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": [1, {\"y\": 2}]}").find("an object"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": {\"y\": 2}}").find("a nested object"), std::string::npos);
  EXPECT_NE(fault_of("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": [1,").find("not JSON"), std::string::npos);
  EXPECT_NE(fault_of("{\"\": 1}").find("empty name"), std::string::npos);
  // Beyond a double (JSON.parse's Infinity): refused, not an escaped exception (witgen_input_fuzz's find).
  EXPECT_NE(fault_of("{\"x\": 1e400}").find("out of range"), std::string::npos);
  EXPECT_NE(fault_of("{\"x\": [30644e7091]}").find("out of range"), std::string::npos);
  // A value with a million digits stops growing past the prime: bounded work.
  EXPECT_NE(fault_of("{\"x\": \"" + std::string(1000000, '9') + "\"}").find("not below the prime"), std::string::npos);
  // Nesting is bounded before the parser recurses.
  EXPECT_NE(fault_of("{\"x\": " + std::string(100000, '[') + "}").find("nested more than 64"), std::string::npos);
}

TEST(WitgenInput, FlattensArraysInOrderAndKeepsTheFilesOrder) {
  auto s = parse_input(R"({"b": [[1, 2], [3]], "a": 4, "c.d": []})", prime());
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].name, "b");
  ASSERT_EQ(s[0].values.size(), 3u);
  EXPECT_EQ(to_decimal(s[0].values[2]), "3");
  EXPECT_EQ(s[1].name, "a");
  EXPECT_EQ(s[2].values.size(), 0u);
  // circom's hash of a name: FNV-1a 64 (calcwit.cpp, circom_runtime utils.js fnvHash).
  EXPECT_EQ(fnv1a(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a("in"), 0x8b73807b55c4bbeULL);
}

// Issue 31: zkfarmd checks every input of every submit in its own process.
// 100,000 keys cost 7.5 s of its CPU before (a quadratic walk); the reader is
// one SAX pass with a hash index, bounded by InputLimits.
std::string many_signals(size_t n) {
  std::string text = "{";
  for (size_t i = 0; i < n; ++i) text += (i ? ",\"s" : "\"s") + std::to_string(i) + "\":" + std::to_string(i);
  return text + "}";
}

TEST(WitgenInput, ManyKeysAreReadInOnePassAndTheLimitsNameThemselves) {
  const std::string text = many_signals(100000);
  auto sum = check_input(text, prime(), InputLimits{});
  EXPECT_EQ(sum.signals, 100000u);
  EXPECT_EQ(sum.values, 100000u);
  auto all = parse_input(text, prime());
  ASSERT_EQ(all.size(), 100000u);
  EXPECT_EQ(all[99999].name, "s99999");
  EXPECT_EQ(to_decimal(all[99999].values.at(0)), "99999");

  InputLimits few;
  few.max_signals = 65536;
  try {
    check_input(text, prime(), few);
    ADD_FAILURE() << "100,000 signals passed a limit of 65536";
  } catch (const InputFault& e) {
    EXPECT_NE(std::string(e.what()).find("more than 65536 input signals"), std::string::npos) << e.what();
  }
  InputLimits values;
  values.max_values = 10;
  try {
    check_input("{\"a\": [1,2,3,4,5,6], \"b\": [[7,8],[9,10,11]]}", prime(), values);
    ADD_FAILURE() << "11 values passed a limit of 10";
  } catch (const InputFault& e) {
    EXPECT_NE(std::string(e.what()).find("more than 10 input values"), std::string::npos) << e.what();
  }
}

TEST(WitgenInput, ARepeatedKeyKeepsItsFirstPlaceAndLastValuesAndCountsOnce) {
  // JSON.parse's reading: {"a":[1,2,3],"b":4,"a":[5]} is {a:[5], b:4}, a first.
  auto s = parse_input(R"({"a": [1, 2, 3], "b": 4, "a": [5]})", prime());
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "a");
  ASSERT_EQ(s[0].values.size(), 1u);
  EXPECT_EQ(to_decimal(s[0].values[0]), "5");
  EXPECT_EQ(s[1].name, "b");
  // The values a repeated key replaced no longer count against the limit.
  InputLimits two;
  two.max_values = 2;
  auto sum = check_input(R"({"a": [1, 2], "a": [3], "b": 4})", prime(), two);
  EXPECT_EQ(sum.signals, 2u);
  EXPECT_EQ(sum.values, 2u);
}

TEST(WitgenInput, ACancelledCheckStopsAndAStreamReadsAsTheText) {
  const std::string text = many_signals(20000);
  std::atomic<bool> cancel{true};
  InputLimits limits;
  limits.cancel = &cancel;
  try {
    check_input(text, prime(), limits);
    ADD_FAILURE() << "a cancelled check ran to its end";
  } catch (const InputFault& e) {
    EXPECT_NE(std::string(e.what()).find("given up"), std::string::npos) << e.what();
  }
  cancel = false;
  std::istringstream in(text);
  auto from_stream = check_input(in, prime(), limits);
  EXPECT_EQ(from_stream.signals, 20000u);
  std::istringstream bad("{\"x\": [1, \"" + kP + "\"]}");
  try {
    check_input(bad, prime(), InputLimits{});
    ADD_FAILURE() << "a value of p passed";
  } catch (const InputFault& e) {
    EXPECT_NE(std::string(e.what()).find("signal x value 1"), std::string::npos) << e.what();
  }
}

// What zkfarmd checks at submit (issue 32): each signal's name and flattened
// count against the circuit's (hash -> size), in the generators' own words.
TEST(WitgenInput, TheShapeCheckNamesAnUnknownAWrongLengthAndAMissingSignal) {
  // checks.circom's inputs: a, b[2], loop.
  const std::vector<SignalShape> circuit = {{fnv1a("a"), 1}, {fnv1a("b"), 2}, {fnv1a("loop"), 1}};
  const std::vector<SignalShape> back = signal_shapes_from_json(signal_shapes_json(circuit));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[1].hash, fnv1a("b"));  // 64 bits through JSON as hex, not a lossy number
  EXPECT_EQ(back[1].size, 2u);
  auto size_of = [&](uint64_t h) -> std::optional<uint32_t> {
    for (const auto& s : circuit)
      if (s.hash == h) return s.size;
    return std::nullopt;
  };
  auto fault = [&](const std::string& text) -> std::string {
    const InputSummary sum = check_input(text, prime(), InputLimits{});
    try {
      check_signals(sum.per_signal, size_of, 4);
    } catch (const InputFault& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(fault(R"({"a": 3, "b": [[1], [2]], "loop": 0})"), "");  // nested arrays flatten
  EXPECT_EQ(fault(R"({"a": 3, "b": [1, 2], "loop": 0, "z": 1})"), "signal z is not an input of the circuit");
  EXPECT_EQ(fault(R"({"a": 3, "b": [1, 2, 3], "loop": 0})"), "signal b has 3 values, the circuit's has 2");
  EXPECT_EQ(fault(R"({"a": 3, "loop": 0})"), "the input sets 2 of the circuit's 4 input values: a signal is missing");
  // A repeated key counts its last values, as the generator reads it.
  EXPECT_EQ(fault(R"({"a": 3, "b": [1, 2, 3], "loop": 0, "b": [4, 5]})"), "");
  // Issue 45: a NUL in a key cut the refusal where it passed through a C
  // string ("signal z"); control characters are written out, the rest kept.
  EXPECT_EQ(fault(R"({"a": 3, "b": [1, 2], "loop": 0, "z\u0000hidden\nline": 1})"),
            "signal z\\u0000hidden\\u000aline is not an input of the circuit");
  // Positions come back through JSON too (SignalShape::at).
  EXPECT_EQ(signal_shapes_from_json(signal_shapes_json({{fnv1a("a"), 1, 3}}))[0].at, 3u);
  EXPECT_THROW(signal_shapes_from_json(R"([{"hash": "12", "size": 1}])"), std::exception);
  EXPECT_THROW(signal_shapes_from_json(R"({"hash": "0123456789abcdef"})"), std::exception);
}

TEST(WitgenWtns, TheHeaderAndValuesAsSnarkjsWritesThem) {
  WtnsWriter w(prime(), 2);
  const uint8_t one[1] = {1}, big[32] = {0xff, 0xee};
  w.value(one, 1);
  w.value(big, 32);
  const int fd = memfd_create("w", 0);
  ASSERT_TRUE(w.write_to(fd));
  // One byte more than the file should hold: a read of exactly 140 proves nothing follows.
  std::vector<uint8_t> b(44 + 32 + 64 + 1);
  ASSERT_EQ(pread(fd, b.data(), b.size(), 0), ssize_t(b.size() - 1));
  b.pop_back();
  close(fd);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "wtns");
  EXPECT_EQ(b[4], 2);    // version
  EXPECT_EQ(b[8], 2);    // sections
  EXPECT_EQ(b[12], 1);   // section 1
  EXPECT_EQ(b[16], 40);  // 8 + n8
  EXPECT_EQ(b[24], 32);  // n8
  EXPECT_TRUE(std::equal(b.begin() + 28, b.begin() + 60, prime().begin()));
  EXPECT_EQ(b[60], 2);   // count
  EXPECT_EQ(b[64], 2);   // section 2
  EXPECT_EQ(b[68], 64);  // its length
  EXPECT_EQ(b[76], 1);
  EXPECT_EQ(b[77], 0);
  EXPECT_EQ(b[108], 0xff);
  EXPECT_EQ(b[109], 0xee);
}

TEST(WitgenSubprocess, ExitCodesSignalsOutputAndDescriptorThree) {
  RunSpec s;
  s.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
  RunResult r = run(s);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.output.find("out"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
  EXPECT_EQ(r.how(), "exit code 3");

  s.argv = {"sh", "-c", "kill -SEGV $$"};
  r = run(s);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_NE(r.how().find("killed by signal 11"), std::string::npos);

  const int fd = memfd_create("three", 0);
  s.argv = {"sh", "-c", "printf abc >&3"};
  s.fd3 = fd;
  r = run(s);
  EXPECT_TRUE(r.ok()) << r.how() << r.output;
  char buf[4] = {};
  EXPECT_EQ(pread(fd, buf, 4, 0), 3);
  EXPECT_STREQ(buf, "abc");
  close(fd);

  s = RunSpec{};
  s.argv = {"/nonexistent/program"};
  r = run(s);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.output.find("/nonexistent/program"), std::string::npos);
}

TEST(WitgenSubprocess, ATimeoutKillsTheWholeGroupAndTheOutputIsBounded) {
  RunSpec s;
  // A child that starts a grandchild: both go at the timeout.
  s.argv = {"sh", "-c", "sleep 100 & yes | head -c 300000; sleep 100"};
  s.timeout = std::chrono::milliseconds(300);
  s.output_limit = 1000;
  RunResult r = run(s);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_LE(r.output.size(), 1000u);
  EXPECT_NE(r.how().find("timed out"), std::string::npos);
  std::atomic<bool> cancel{false};
  s.timeout = std::chrono::milliseconds(0);
  s.cancel = &cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  r = run(s);
  t.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(r.how(), "cancelled");
  // Lines for people: the last ones, printable only.
  RunResult fake;
  fake.output = "one\ntwo\x1b[31m\n\nthree\n";
  EXPECT_EQ(fake.tail(2), "two?[31m | three");
}

TEST(WitgenSubprocess, AProcessWideReaperLeavesARunsChildToItsThread) {
  // As zkfarmd's loop does: reap every child, but peek first under the
  // registry's lock and leave the ones run() registered.
  std::atomic<bool> stop{false};
  std::thread reaper([&] {
    while (!stop) {
      {
        std::lock_guard<std::mutex> lock(ChildRegistry::mutex());
        siginfo_t si{};
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid != 0 && !ChildRegistry::owns(si.si_pid))
          waitpid(si.si_pid, nullptr, WNOHANG);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  for (int i = 0; i < 20; ++i) {
    RunSpec s;
    s.argv = {"sh", "-c", "exit 5"};
    EXPECT_EQ(run(s).exit_code, 5) << "run " << i;
  }
  stop = true;
  reaper.join();
}

}  // namespace
}  // namespace zkfarm::witgen
