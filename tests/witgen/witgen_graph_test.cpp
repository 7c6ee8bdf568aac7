// The witness graph's reader and evaluator (witgen/graph_file.hpp,
// graph_eval.hpp) on graphs written here byte by byte, and the rewrite of a
// circuit's C++ for the recorder (graph_rewrite.hpp). The recorder and the
// graphs of real circuits are tested end to end against snarkjs
// (tests/witgen/test_witgen.py, GraphTest).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "groth16/bn254.hpp"
#include "groth16/curve_list.hpp"
#include "witgen/graph_eval.hpp"
#include "witgen/graph_file.hpp"
#include "witgen/graph_format.hpp"
#include "witgen/graph_inversions.hpp"
#include "witgen/graph_rewrite.hpp"
#include "graph_bytes.hpp"

namespace {

using namespace zkfarm;
using namespace zkfarm::witgen::graph;
using namespace zkfarm::witgen::graph::fixture;

// Two inputs x, y. Asserts x != 3; logs "x=" x; witness: 1, x·y,
// (x != 3 ? x·y : 7), x, and x·y again (a value two witness entries share).
std::vector<uint8_t> sample_graph() {
  GraphBytes g;
  g.two_input_header(5);
  g.u32(1);  // strings
  g.u32(2);
  g.b.push_back('x');
  g.b.push_back('=');
  g.consts({1, 3, 7});
  g.u32(6);
  g.node(Op::kMul, in(0), in(1));          // 0: x·y
  g.node(Op::kNeq, in(0), k(1));           // 1: x != 3
  g.node(Op::kAssert, k(0), n(1));         // 2
  g.node(Op::kSelect, n(1), n(0), k(2));   // 3
  g.node(Op::kLogText, k(0), 0);           // 4: "x="
  g.node(Op::kLogValue, k(0), in(0));      // 5: x
  for (uint32_t w : {k(0), n(0), n(3), in(0), n(0)}) g.u32(w);
  return g.b;
}

// A graph's curve number is its CurveId + 1 for every curve of the groth16
// list, and a number of none is refused at parse, naming it: never read as
// BN254 (issue 48: one table per closed set).
TEST(WitnessGraph, CurveNumbersComeFromTheCurveListAndAnUnknownOneIsRefused) {
  for_each_curve([]<class C>(std::type_identity<C>) {
    const uint32_t number = graph_curve_number(C::kId);
    ASSERT_EQ(graph_curve_id(number), C::kId);
    EXPECT_STREQ(curve_name(number), C::kName);
    EXPECT_EQ(std::memcmp(curve_modulus(number), C::Fr::Params::kModulus, 32), 0);
  });
  for (uint32_t none : {0u, uint32_t(Curves::kSize) + 1, 0xffffffffu}) {
    EXPECT_FALSE(graph_curve_id(none).has_value());
    EXPECT_EQ(curve_modulus(none), nullptr);
    EXPECT_STREQ(curve_name(none), "unknown");
    GraphBytes g;
    g.two_input_header(1);
    std::memcpy(g.b.data() + 12, &none, 4);  // the curve, after the magic and the version
    try {
      parse_graph(g.b.data(), g.b.size(), 1 << 20);
      ADD_FAILURE() << "curve " << none << " parsed";
    } catch (const GraphError& e) {
      EXPECT_NE(std::string(e.what()).find("unknown curve " + std::to_string(none)), std::string::npos) << e.what();
    }
  }
}

TEST(WitnessGraph, EvaluatesABatchWithAFailedAssertFailingOnlyItsInput) {
  const std::vector<uint8_t> bytes = sample_graph();
  Evaluator ev(parse_graph(bytes.data(), bytes.size(), 100));
  EXPECT_EQ(ev.instructions(), 6u);
  std::mt19937_64 rng(5);
  const std::vector<uint64_t> xs = {2, 3, 5, 3, 11};
  std::vector<std::vector<U256>> inputs;
  for (uint64_t x : xs) inputs.push_back({u(x), u(rng() >> 4)});
  const auto [outs, outcome] = evaluate_batch(ev, inputs);
  ASSERT_EQ(outcome.size(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(outcome[i].ok, xs[i] != 3) << "input " << i;
    EXPECT_EQ(outcome[i].log, "x=" + std::to_string(xs[i]));
    // The naive reference: Fr arithmetic on the same values.
    const Fr prod = Fr::from_u256(inputs[i][0]) * Fr::from_u256(inputs[i][1]);
    const U256 want[5] = {u(1), prod.to_u256(), xs[i] != 3 ? prod.to_u256() : u(7), inputs[i][0], prod.to_u256()};
    for (int w = 0; w < 5; ++w)
      EXPECT_EQ(std::memcmp(outs[i].data() + 32 * w, want[w].data(), 32), 0) << "input " << i << " witness " << w;
  }
}

// Two inputs x, y; witness: 1, x⁻¹, y / x, (x·y)⁻¹, and y / (x⁻¹ · y): the
// inversions and divisions of a batch share one inversion (Montgomery's
// trick); zero lanes give 0 (circom's 0⁻¹ = 0).
std::vector<uint8_t> division_graph() {
  GraphBytes g;
  g.two_input_header(5);
  g.u32(0);  // strings
  g.consts({1});
  g.u32(6);
  g.node(Op::kInv, in(0));           // 0: x⁻¹
  g.node(Op::kDiv, in(1), in(0));    // 1: y / x
  g.node(Op::kMul, in(0), in(1));    // 2: x·y
  g.node(Op::kInv, n(2));            // 3: (x·y)⁻¹
  g.node(Op::kMul, n(0), in(1));     // 4: x⁻¹·y
  g.node(Op::kDiv, in(1), n(4));     // 5: y / (x⁻¹·y)
  for (uint32_t w : {k(0), n(0), n(1), n(3), n(5)}) g.u32(w);
  return g.b;
}

TEST(WitnessGraph, InversionsAndDivisionsOfABatchMatchOneAtATimeWithZeroLanes) {
  const std::vector<uint8_t> bytes = division_graph();
  Evaluator ev(parse_graph(bytes.data(), bytes.size(), 100));
  std::mt19937_64 rng(17);
  for (size_t batch : {1, 2, 7, 9, 64}) {
    std::vector<std::vector<U256>> inputs;
    for (size_t i = 0; i < batch; ++i) {
      U256 x{rng(), rng(), rng(), rng() >> 3}, y{rng(), rng(), rng(), rng() >> 3};
      if (i % 5 == 1) x = u(0);  // a zero divisor among nonzero ones
      if (i % 7 == 3) y = u(0);
      inputs.push_back({x, y});
    }
    const auto [outs, outcome] = evaluate_batch(ev, inputs);
    for (size_t i = 0; i < batch; ++i) {
      // The naive reference: Fermat's inverse, one value at a time.
      const Fr x = Fr::from_u256(inputs[i][0]), y = Fr::from_u256(inputs[i][1]);
      const Fr xi = x.inv_fermat(), t = xi * y;
      const U256 want[5] = {u(1), xi.to_u256(), (y * xi).to_u256(), (x * y).inv_fermat().to_u256(),
                            (y * t.inv_fermat()).to_u256()};
      EXPECT_TRUE(outcome[i].ok);
      for (int w = 0; w < 5; ++w)
        EXPECT_EQ(std::memcmp(outs[i].data() + 32 * w, want[w].data(), 32), 0)
            << "batch " << batch << " input " << i << " witness " << w;
    }
  }
}

// Fermat's inverse with circom's 0⁻¹ = 0: the naive reference.
Fr inverse_or_zero(const Fr& x) { return x.inv_fermat(); }

// The decimal of a 256-bit integer, by long division (the reference for a log line).
std::string decimal(U256 v) {
  std::string d;
  do {
    unsigned __int128 rem = 0;
    for (int i = 3; i >= 0; --i) {
      const unsigned __int128 cur = (rem << 64) | v[i];
      v[i] = uint64_t(cur / 10);
      rem = cur % 10;
    }
    d.insert(d.begin(), char('0' + int(rem)));
  } while (v[0] | v[1] | v[2] | v[3]);
  return d;
}

// `m` inversions and divisions of x + 1, x + 2, …, x + m (even i: y / (x +
// i + 1), odd i: (x + i + 1)⁻¹), all of one depth: the witness is 1 then
// each quotient. With `chain`, each divisor is instead the previous
// quotient plus 1, so no two share a depth.
std::vector<uint8_t> inversions_graph(uint32_t m, bool chain) {
  GraphBytes g;
  g.two_input_header(m + 1);
  g.u32(0);  // strings
  g.consts({1});
  g.u32(2 * m);
  for (uint32_t i = 0; i < m; ++i) {
    const uint32_t base = i == 0 ? in(0) : chain ? n(2 * i - 1) : n(2 * i - 2);
    g.node(Op::kAdd, base, k(0));  // 2i: the divisor
    if (i % 2 == 0) g.node(Op::kDiv, in(1), n(2 * i));
    else g.node(Op::kInv, n(2 * i));
  }
  g.u32(k(0));
  for (uint32_t i = 0; i < m; ++i) g.u32(n(2 * i + 1));
  return g.b;
}

// Independent inversions share one modular inversion per level (windows of
// kInversionWindow), with zero divisors in some lanes; a chain shares none.
// Every value is checked against one-at-a-time Fermat inverses.
TEST(WitnessGraph, InversionsOfOneDepthShareOneInversionAndMatchTheNaiveValues) {
  for (const bool chain : {false, true}) {
    const uint32_t m = chain ? 40 : kInversionWindow + 44;
    const std::vector<uint8_t> bytes = inversions_graph(m, chain);
    Evaluator ev(parse_graph(bytes.data(), bytes.size(), 10000));
    EXPECT_EQ(ev.inversions(), chain ? size_t(m) : 2u) << "chain " << chain;
    std::mt19937_64 rng(23);
    for (size_t batch : {1, 9, 64}) {
      std::vector<std::vector<U256>> inputs;
      for (size_t i = 0; i < batch; ++i) {
        U256 x{rng(), rng(), rng(), rng() >> 3};
        // x = −j makes divisor j − 1 zero (of the independent ones): a zero among nonzero ones.
        if (i % 3 == 1) x = (-Fr::from_u256(u(1 + rng() % m))).to_u256();
        inputs.push_back({x, U256{rng(), rng(), rng(), rng() >> 3}});
      }
      const auto [outs, outcome] = evaluate_batch(ev, inputs);
      for (size_t i = 0; i < batch; ++i) {
        const Fr x = Fr::from_u256(inputs[i][0]), y = Fr::from_u256(inputs[i][1]);
        Fr prev = x;
        for (uint32_t j = 0; j < m; ++j) {
          const Fr d = (chain ? prev : x + Fr::from_u256(u(j))) + Fr::one();
          const Fr q = j % 2 == 0 ? y * inverse_or_zero(d) : inverse_or_zero(d);
          prev = chain ? q : prev;
          const U256 want = q.to_u256();
          ASSERT_EQ(std::memcmp(outs[i].data() + 32 * (j + 1), want.data(), 32), 0)
              << "chain " << chain << " batch " << batch << " input " << i << " quotient " << j;
        }
        EXPECT_TRUE(outcome[i].ok);
      }
    }
  }
}

// Reordering by depth never moves a log before an earlier one: a log of a
// value of depth 0 written after a log of an inverse keeps its place.
TEST(WitnessGraph, SharedInversionsKeepTheLogsInOrder) {
  GraphBytes g;
  g.two_input_header(3);
  g.u32(1);  // strings: " "
  g.u32(1);
  g.b.push_back(' ');
  g.consts({1});
  g.u32(7);
  g.node(Op::kInv, in(0));            // 0: x⁻¹ (depth 1)
  g.node(Op::kInv, in(1));            // 1: y⁻¹ (depth 1, shares with 0)
  g.node(Op::kLogValue, k(0), n(0));  // 2: x⁻¹
  g.node(Op::kLogText, k(0), 0);      // 3: " "
  g.node(Op::kLogValue, k(0), in(1)); // 4: y (depth 0, stays after 2)
  g.node(Op::kLogText, k(0), 0);      // 5: " "
  g.node(Op::kLogValue, k(0), n(1));  // 6: y⁻¹
  for (uint32_t w : {k(0), n(0), n(1)}) g.u32(w);
  Evaluator ev(parse_graph(g.b.data(), g.b.size(), 100));
  EXPECT_EQ(ev.inversions(), 1u);
  const std::vector<std::vector<U256>> inputs = {{u(5), u(7)}, {u(0), u(9)}};
  const auto [outs, outcome] = evaluate_batch(ev, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Fr x = Fr::from_u256(inputs[i][0]), y = Fr::from_u256(inputs[i][1]);
    const std::string xi = decimal(inverse_or_zero(x).to_u256()), yi = decimal(inverse_or_zero(y).to_u256());
    EXPECT_EQ(outcome[i].log, xi + " " + decimal(y.to_u256()) + " " + yi) << "input " << i;
  }
}

// A dead inversion never joins a shared level: the dead x \ 0 beneath it
// must not start failing the input. The graph has no constant 1 (0 and 1
// are then made as nodes, the constants left as they are).
TEST(WitnessGraph, DeadInversionsStayDeadAndTheConstantsStayTheGraphs) {
  GraphBytes g;
  g.two_input_header(3);
  g.u32(0);  // strings
  g.consts({0});
  g.u32(4);
  g.node(Op::kInv, in(0));            // 0: x⁻¹, live
  g.node(Op::kIdiv, in(1), k(0));     // 1: y \ 0, dead (a fault if evaluated)
  g.node(Op::kInv, n(1));             // 2: dead, of depth 1 like 0 and 3
  g.node(Op::kInv, in(1));            // 3: y⁻¹, live
  for (uint32_t w : {n(0), n(3), in(0)}) g.u32(w);
  Graph parsed = parse_graph(g.b.data(), g.b.size(), 100);
  Graph rewritten = parsed;
  EXPECT_EQ(share_inversions(rewritten), 1u) << "the two live inversions share one";
  EXPECT_EQ(rewritten.consts, parsed.consts);
  Evaluator ev(std::move(parsed));
  EXPECT_EQ(ev.inversions(), 1u);
  const std::vector<std::vector<U256>> inputs = {{u(5), u(7)}, {u(0), u(9)}, {u(4), u(0)}};
  const auto [outs, outcome] = evaluate_batch(ev, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_TRUE(outcome[i].ok) << "input " << i;
    const U256 want[2] = {inverse_or_zero(Fr::from_u256(inputs[i][0])).to_u256(),
                          inverse_or_zero(Fr::from_u256(inputs[i][1])).to_u256()};
    for (int w = 0; w < 2; ++w) EXPECT_EQ(std::memcmp(outs[i].data() + 32 * w, want[w].data(), 32), 0) << i;
  }
}

TEST(WitnessGraph, InputsAreCheckedInTheGeneratorsWords) {
  const std::vector<uint8_t> bytes = sample_graph();
  Evaluator ev(parse_graph(bytes.data(), bytes.size(), 100));
  auto sig = [](const char* name, uint64_t hash, size_t n) {
    witgen::InputSignal s;
    s.name = name;
    s.hash = hash;
    s.values.assign(n, std::vector<uint8_t>(32, 0));
    return s;
  };
  EXPECT_EQ(ev.arrange({sig("x", 0x1111, 1), sig("y", 0x2222, 1)}).size(), 2u);
  EXPECT_THROW(
      try { ev.arrange({sig("x", 0x1111, 1), sig("z", 0x3333, 1)}); } catch (const witgen::InputFault& e) {
        EXPECT_STREQ(e.what(), "signal z is not an input of the circuit");
        throw;
      },
      witgen::InputFault);
  EXPECT_THROW(
      try { ev.arrange({sig("x", 0x1111, 2), sig("y", 0x2222, 1)}); } catch (const witgen::InputFault& e) {
        EXPECT_STREQ(e.what(), "signal x has 2 values, the circuit's has 1");
        throw;
      },
      witgen::InputFault);
  EXPECT_THROW(
      try { ev.arrange({sig("x", 0x1111, 1)}); } catch (const witgen::InputFault& e) {
        EXPECT_NE(std::string(e.what()).find("a signal is missing"), std::string::npos) << e.what();
        throw;
      },
      witgen::InputFault);
}

// Every truncation and every single-byte change of a valid graph is refused
// or yields a graph that evaluates within its bounds (under ASan in the
// sanitizer run, an out-of-bounds read would fail this test).
TEST(WitnessGraph, CorruptedGraphsAreRefusedOrStayInBounds) {
  const std::vector<uint8_t> good = sample_graph();
  auto try_one = [](const std::vector<uint8_t>& b) {
    try {
      Evaluator ev(parse_graph(b.data(), b.size(), 100));
      if (ev.graph().input_values > 64) return true;  // a count changed: arrange() refuses such an input first
      std::vector<U256> values(ev.graph().input_values, U256{2, 0, 0, 0});
      std::vector<uint8_t> out(size_t(ev.graph().witness_size) * 32 + 1);
      std::vector<InputOutcome> outcome;
      ev.evaluate({&values}, {out.data()}, outcome);
      return true;
    } catch (const GraphError&) {
      return false;
    }
  };
  EXPECT_TRUE(try_one(good));
  size_t refused = 0;
  for (size_t len = 0; len < good.size(); ++len) {
    std::vector<uint8_t> b(good.begin(), good.begin() + long(len));
    EXPECT_FALSE(try_one(b)) << "a graph cut at byte " << len << " was taken";
  }
  for (size_t i = 0; i < good.size(); ++i)
    for (uint8_t x : {uint8_t(0xff), uint8_t(0x01), uint8_t(0x80)}) {
      std::vector<uint8_t> b = good;
      b[i] ^= x;
      refused += !try_one(b);
    }
  EXPECT_GT(refused, good.size());  // most changes are caught by structure alone
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_FALSE(try_one(longer));
}

TEST(WitnessGraph, ReferencesForwardOrToValuelessNodesAreRefused) {
  std::vector<uint8_t> b = sample_graph();
  // Node 3 (select) reads node 0; make it read node 4 (after it) instead.
  const size_t nodes_at = b.size() - 5 * 4 - 6 * 13;
  const size_t select_a = nodes_at + 3 * 13 + 1 + 4;  // its second operand
  uint32_t fwd = n(4);
  std::memcpy(&b[select_a], &fwd, 4);
  EXPECT_THROW(parse_graph(b.data(), b.size(), 100), GraphError);
  b = sample_graph();
  uint32_t valueless = n(2);  // the assert
  std::memcpy(&b[select_a], &valueless, 4);
  EXPECT_THROW(parse_graph(b.data(), b.size(), 100), GraphError);
  b = sample_graph();
  EXPECT_THROW(parse_graph(b.data(), b.size(), 5), GraphError);  // past max_nodes
}

TEST(WitnessGraph, RewriteRoutesTruthTestsAssertsAndLogsToTheRecorder) {
  const std::string cpp =
      "void Foo_3_run(uint ctx_index,Circom_CalcWit* ctx){\n"
      "Fr_neq(&expaux[0],&signalValues[mySignalStart + 1],&circuitConstants[0]); // line circom 11\n"
      "if (!Fr_isTrue(&expaux[0])) std::cout << \"Failed assert in template/function \" << myTemplateName << \" line 11. \" "
      "<<  \"Followed trace of components: \" << ctx->getTrace(myId) << std::endl;\n"
      "assert(Fr_isTrue(&expaux[0]));\n"
      "if(Fr_isTrue(&expaux[1])){\n"
      "while(Fr_isTrue(&expaux[2])){\n"
      "printf(\"a is\");\n"
      "}\n";
  const std::string out = witgen::rewrite_for_recording(cpp);
  auto line = [&](int i) {  // line i of the circuit (1-based), after the include and #line
    size_t at = 0;
    for (int k = 0; k < i + 1; ++k) at = out.find('\n', at) + 1;
    return out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_EQ(line(1), "void Foo_3_run(uint ctx_index,Circom_CalcWit* ctx){ ZkgScope zkg_scope(\"template Foo\");");
  EXPECT_EQ(line(2).rfind("zkg_line = 11; Fr_neq(", 0), 0u) << line(2);
  EXPECT_EQ(line(3), "zkg_assert(&expaux[0], 11);");
  EXPECT_EQ(line(4), "");
  EXPECT_EQ(line(5), "for (ZkgIf zkg_if(&expaux[1]); zkg_if.pass() >= 0; zkg_if.next()) if (zkg_if.pass()) {");
  EXPECT_EQ(line(6), "while(zkg_loop(&expaux[2])){");
  EXPECT_EQ(line(7), "zkg_printf(\"a is\");");
  EXPECT_EQ(out.rfind("#include \"witgen/graph_hooks.hpp\"\n#line 1\n", 0), 0u);
}

}  // namespace

// Random graphs rich in what range analysis narrows (bit extraction, masks,
// shifts, relations, sums and products of those, negative constants) and in
// what it must not (inputs near p, Bnot, inversions), evaluated in batches
// and compared, witness value by witness value, with the naive reference:
// each node on its own through FieldOps (graph_ops.hpp), Fr throughout.
// Random graphs against the naive field reference, node by node. The seeds
// past 12 first share their inversions in windows of 2 or 3 a level (the
// evaluator's own rewrite then finds nothing more to share across them), so
// that values cross many windows.
TEST(WitnessGraph, NarrowIntegerEvaluationMatchesTheFieldReferenceOnRandomGraphs) {
  using Ops = FieldOps<Fr>;
  size_t narrow_total = 0, shared_small = 0;
  for (uint64_t seed = 1; seed <= 18; ++seed) {
    std::mt19937_64 rng(seed);
    const uint32_t n_nodes = 600;
    const RandomGraph rg = random_graph(rng, n_nodes);
    const auto& nodes = rg.nodes;
    const auto& consts = rg.consts;
    Graph parsed = parse_graph(rg.g.b.data(), rg.g.b.size(), 10000);
    if (seed > 12) shared_small += share_inversions(parsed, uint32_t(2 + seed % 2));
    Evaluator ev(std::move(parsed));
    narrow_total += ev.small_instructions();

    // 13: 8 lanes through the SIMD paths (where the CPU has them) and 5 past them.
    constexpr size_t kBatches[] = {1, 5, 13, 64};
    const size_t batch = kBatches[seed % 4];
    const std::vector<std::vector<U256>> inputs = random_inputs(rng, batch);
    const auto [outs, outcome] = evaluate_batch(ev, inputs);
    for (size_t i = 0; i < batch; ++i) {
      std::vector<Fr> v(n_nodes);
      bool fault = false;
      auto val = [&](uint32_t ref) {
        if (ref_kind(ref) == RefKind::kNode) return v[ref_index(ref)];
        if (ref_kind(ref) == RefKind::kConst) return Fr::from_u256(consts[ref_index(ref)]);
        return Fr::from_u256(inputs[i][ref_index(ref)]);
      };
      for (uint32_t j = 0; j < n_nodes; ++j) {
        const Op op = Op(nodes[j][0]);
        if (op == Op::kSelect) v[j] = val(nodes[j][1]).is_zero() ? val(nodes[j][3]) : val(nodes[j][2]);
        else v[j] = Ops::apply(op, val(nodes[j][1]), val(nodes[j][2]), fault);
        const U256 want = v[j].to_u256();
        ASSERT_EQ(std::memcmp(outs[i].data() + size_t(j) * 32, want.data(), 32), 0)
            << "seed " << seed << " input " << i << " node " << j << " op " << int(op);
      }
      EXPECT_EQ(outcome[i].ok, !fault) << "seed " << seed << " input " << i;
    }
  }
  EXPECT_GT(narrow_total, 1000u) << "the graphs should exercise the integer path";
  EXPECT_GT(shared_small, 6u) << "the small windows should share inversions";
}
