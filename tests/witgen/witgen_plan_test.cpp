// A prepared graph (witgen/graph_plan.hpp): a plan read back evaluates as
// the plan made in memory does, byte for byte; a damaged plan is refused or
// stays in bounds; and load_graph takes a plan of its graph, and plans again
// when the plan beside it cannot be used (and in a user's own cache replaces it).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

#include "graph_bytes.hpp"
#include "test_util.hpp"
#include "witgen/graph_file.hpp"
#include "witgen/graph_plan.hpp"
#include "witgen/witness_engine.hpp"

namespace {

using namespace zkfarm;
using namespace zkfarm::witgen::graph;
using namespace zkfarm::witgen::graph::fixture;

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_bytes(const std::string& path, const std::string& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << b;
}
// `body` with its checksum appended, as zkfarm writes its plans.
std::string with_digest(const std::string& body) { return body + plan_checksum(body.data(), body.size()); }

// A random graph written as zkfarm keeps one (DIR/graph), and its plan beside it.
struct Prepared {
  std::string graph, plan, digest;
  RandomGraph rg;
};
Prepared prepare(const std::string& dir, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Prepared p{dir + "/graph", plan_path(dir + "/graph"), "", random_graph(rng, 400)};
  p.digest = write_graph_file(p.graph, p.rg.g.b);
  const Evaluator planned(parse_graph(p.rg.g.b.data(), p.rg.g.b.size(), 10000));
  write_plan_file(p.plan, planned, p.digest);
  return p;
}

TEST(GraphPlan, APlanReadBackEvaluatesAsThePlanMadeInMemory) {
  zkfarm::test::TempDir dir("zkfarm-plan");
  size_t narrow = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const Prepared p = prepare(dir.path.string(), seed);
    const Evaluator planned(parse_graph(p.rg.g.b.data(), p.rg.g.b.size(), 10000));
    const std::unique_ptr<Evaluator> loaded = read_plan_file(p.plan, p.digest);
    EXPECT_TRUE(loaded->graph().nodes.empty()) << "a plan is evaluated without its graph's nodes";
    EXPECT_EQ(loaded->instructions(), planned.instructions());
    EXPECT_EQ(loaded->small_instructions(), planned.small_instructions());
    narrow += loaded->small_instructions();
    std::mt19937_64 rng(seed * 7919);
    for (size_t batch : {size_t(1), size_t(9)}) {
      const auto inputs = random_inputs(rng, batch);
      const Batch want = evaluate_batch(planned, inputs), got = evaluate_batch(*loaded, inputs);
      for (size_t i = 0; i < batch; ++i) {
        EXPECT_EQ(got.out[i], want.out[i]) << "seed " << seed << " input " << i;
        EXPECT_EQ(got.outcome[i].ok, want.outcome[i].ok) << "seed " << seed << " input " << i;
      }
    }
  }
  EXPECT_GT(narrow, 500u) << "the plans should hold integer instructions";
}

// Shared inversions in a plan read back: a graph without the constants 0
// and 1 (the rewrite makes them as nodes, since the plan is read beside the
// graph file's own constants), one inversion for ten, as in memory.
TEST(GraphPlan, APlanOfSharedInversionsWithoutConstantsZeroAndOneRoundTrips) {
  zkfarm::test::TempDir dir("zkfarm-plan");
  GraphBytes g;
  g.two_input_header(10);
  g.u32(0);  // strings
  g.consts({5});
  g.u32(20);
  for (uint32_t i = 0; i < 10; ++i) {
    g.node(Op::kAdd, i == 0 ? in(0) : n(2 * i - 2), k(0));  // x + 5(i + 1)
    g.node(i % 2 ? Op::kInv : Op::kDiv, i % 2 ? n(2 * i) : in(1), i % 2 ? 0 : n(2 * i));
  }
  for (uint32_t i = 0; i < 10; ++i) g.u32(n(2 * i + 1));
  const std::string graph = dir.path.string() + "/graph";
  const std::string digest = write_graph_file(graph, g.b);
  const Evaluator planned(parse_graph(g.b.data(), g.b.size(), 100));
  EXPECT_EQ(planned.inversions(), 1u);
  write_plan_file(plan_path(graph), planned, digest);
  const std::unique_ptr<Evaluator> loaded = read_plan_file(plan_path(graph), digest);
  EXPECT_EQ(loaded->inversions(), 1u);
  const U256 p = FieldOps<Fr>::modulus();
  const std::vector<std::vector<U256>> inputs = {{u(3), u(7)}, {u256::sub(p, u(10)), u(2)}, {u(0), u(0)}};
  const Batch want = evaluate_batch(planned, inputs), got = evaluate_batch(*loaded, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(got.out[i], want.out[i]) << "input " << i;
    const Fr x = Fr::from_u256(inputs[i][0]), y = Fr::from_u256(inputs[i][1]);
    for (uint32_t j = 0; j < 10; ++j) {  // the naive value: x + 5(j + 1), inverted (0⁻¹ = 0)
      const Fr d = x + Fr::from_u256(u(5 * (j + 1)));
      const U256 q = (j % 2 ? d.inv_fermat() : y * d.inv_fermat()).to_u256();
      EXPECT_EQ(std::memcmp(got.out[i].data() + 32 * j, q.data(), 32), 0) << "input " << i << " quotient " << j;
    }
  }
}

// A value that fills 255 or more witness entries (its count in the side
// stream before its entries) and the selects' third operands (their own
// stream), in memory and read back from a plan, one input and a batch.
TEST(GraphPlan, ALongWitnessGroupAndSelectsRoundTrip) {
  zkfarm::test::TempDir dir("zkfarm-plan");
  constexpr uint32_t kCopies = 300;
  GraphBytes g;
  g.two_input_header(kCopies + 2);
  g.u32(0);  // strings
  g.u32(0);  // constants
  g.u32(3);
  g.node(Op::kMul, in(0), in(1));          // n0 = x·y
  g.node(Op::kSelect, in(0), n(0), in(1));  // n1 = x ≠ 0 ? x·y : y
  g.node(Op::kSub, n(1), in(1));           // n2 = n1 − y
  for (uint32_t i = 0; i < kCopies; ++i) g.u32(n(0));
  g.u32(n(1));
  g.u32(n(2));
  const std::string graph = dir.path.string() + "/graph";
  const std::string digest = write_graph_file(graph, g.b);
  const Evaluator planned(parse_graph(g.b.data(), g.b.size(), 100));
  EXPECT_EQ(planned.third_operands().size(), 1u);
  EXPECT_EQ(planned.witness_indices().size(), kCopies + 3u) << "the long group's count, then its entries";
  write_plan_file(plan_path(graph), planned, digest);
  const std::unique_ptr<Evaluator> loaded = read_plan_file(plan_path(graph), digest);
  auto value = [](const std::vector<uint8_t>& w, size_t i) {
    U256 v;
    std::memcpy(v.data(), w.data() + i * 32, 32);
    return v;
  };
  for (size_t batch : {size_t(1), size_t(9)}) {
    std::vector<std::vector<U256>> inputs;
    for (size_t i = 0; i < batch; ++i) inputs.push_back({u(i), u(1000 + i)});  // x = 0 once: the select's other side
    for (const Evaluator* ev : {&planned, static_cast<const Evaluator*>(loaded.get())}) {
      const Batch b = evaluate_batch(*ev, inputs);
      for (size_t i = 0; i < batch; ++i) {
        ASSERT_TRUE(b.outcome[i].ok);
        const U256 product = u(i * (1000 + i)), chosen = i ? product : u(1000);
        for (uint32_t c = 0; c < kCopies; ++c) ASSERT_EQ(value(b.out[i], c), product) << "copy " << c << " input " << i;
        EXPECT_EQ(value(b.out[i], kCopies), chosen) << "input " << i;
        EXPECT_EQ(value(b.out[i], kCopies + 1), u256::sub(chosen, u(1000 + i))) << "input " << i;
      }
    }
  }
}

TEST(GraphPlan, APlanOfAnotherGraphOrVersionOrDamagedIsRefused) {
  zkfarm::test::TempDir dir("zkfarm-plan");
  const Prepared p = prepare(dir.path.string(), 3);
  const std::string good = read_bytes(p.plan);
  auto refusal = [&](const std::string& bytes, const std::string& digest) -> std::string {
    write_bytes(p.plan, bytes);
    try {
      (void)read_plan_file(p.plan, digest);
    } catch (const GraphError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(refusal(good, std::string(64, 'a')).find("another graph"), std::string::npos);
  std::string flipped = good;
  flipped[200] ^= 1;
  EXPECT_NE(refusal(flipped, p.digest).find("checksum does not match"), std::string::npos);
  EXPECT_NE(refusal(good.substr(0, good.size() / 2), p.digest).find("does not match"), std::string::npos);
  std::string body = good.substr(0, good.size() - 32);
  body[8] = char(kPlanVersion + 1);  // the version, digest recomputed
  EXPECT_NE(refusal(with_digest(body), p.digest).find("plan version"), std::string::npos);
  EXPECT_EQ(refusal(good, p.digest), "");
}

// Every byte of a plan's body in turn set to values a damaged or crafted file
// would hold, its digest made right again: refused with a GraphError, or
// evaluated without leaving its bounds (the sanitizer build checks that).
TEST(GraphPlan, DamagedPlansWithAValidDigestAreRefusedOrStayInBounds) {
  zkfarm::test::TempDir dir("zkfarm-plan");
  const Prepared p = prepare(dir.path.string(), 5);
  const std::string body = read_bytes(p.plan).substr(0, read_bytes(p.plan).size() - 32);
  std::mt19937_64 rng(11);
  const auto inputs = random_inputs(rng, 3);
  size_t refused = 0, evaluated = 0;
  for (size_t at = 8; at < body.size(); at += 1 + rng() % 5) {
    std::string bad = body;
    const uint8_t values[] = {0x00, 0xff, 0x7f, 0x40, 0x80, uint8_t(bad[at] + 1), uint8_t(rng())};
    bad[at] = char(values[rng() % std::size(values)]);
    if (bad == body) continue;
    write_bytes(p.plan, with_digest(bad));
    std::unique_ptr<Evaluator> ev;
    try {
      ev = read_plan_file(p.plan, p.digest);
    } catch (const GraphError&) {
      ++refused;
      continue;
    }
    (void)evaluate_batch(*ev, inputs);  // any values; within bounds
    ++evaluated;
  }
  EXPECT_GT(refused, 100u);
  EXPECT_GT(evaluated, 100u) << "operand changes within range should still load";
}

TEST(GraphPlan, LoadGraphTakesThePlanBesideTheGraphAndPlansAgainWhenItCannot) {
  zkfarm::test::TempDir dir("zkfarm-plan");
  for (const char* sub : {"good", "damaged", "stale"}) std::filesystem::create_directory(dir.path.string() + "/" + sub);
  const Prepared good = prepare(dir.path.string() + "/good", 2);
  const Prepared damaged = prepare(dir.path.string() + "/damaged", 2);
  std::string b = read_bytes(damaged.plan);
  b[300] ^= 0x10;
  write_bytes(damaged.plan, b);
  const Prepared stale = prepare(dir.path.string() + "/stale", 2);
  const Prepared other = prepare(dir.path.string() + "/stale", 4);  // the graph rewritten; the plan too ...
  write_bytes(stale.plan, read_bytes(dir.path.string() + "/good/graph.plan"));  // ... then one of another graph put back

  const Evaluator planned(parse_graph(good.rg.g.b.data(), good.rg.g.b.size(), 10000));
  std::mt19937_64 rng(17);
  const auto inputs = random_inputs(rng, 4);
  const Batch want = evaluate_batch(planned, inputs);

  const auto from_plan = witgen::load_graph(good.graph, good.digest);
  EXPECT_TRUE(from_plan->graph().nodes.empty()) << "the plan was not used";
  EXPECT_EQ(evaluate_batch(*from_plan, inputs).out, want.out);
  const auto replanned = witgen::load_graph(damaged.graph, damaged.digest, /*own_cache=*/true);
  EXPECT_FALSE(replanned->graph().nodes.empty()) << "a damaged plan was used";
  EXPECT_EQ(evaluate_batch(*replanned, inputs).out, want.out);
  const auto other_graph = witgen::load_graph(dir.path.string() + "/stale/graph");  // no digest recorded: the file's own
  EXPECT_FALSE(other_graph->graph().nodes.empty()) << "a plan of another graph was used";
  const Evaluator other_planned(parse_graph(other.rg.g.b.data(), other.rg.g.b.size(), 10000));
  EXPECT_EQ(evaluate_batch(*other_graph, inputs).out, evaluate_batch(other_planned, inputs).out);
  // In the user's own cache the unusable plan was replaced by the one just
  // made (mapped: own_cache); elsewhere (a synthesis worker) nothing is written.
  EXPECT_EQ(evaluate_batch(*read_plan_file(damaged.plan, damaged.digest, /*map=*/true), inputs).out, want.out);
  EXPECT_THROW((void)read_plan_file(stale.plan, other.digest), GraphError);
}

}  // namespace
