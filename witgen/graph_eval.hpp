#pragma once
// Evaluating a witness graph (graph_file.hpp) for a batch of inputs at once:
// the same node for every input before the next node, so the interpreter's
// cost per node is paid once per batch and the values of a node sit side by
// side. Nothing but zkfarm's own code runs: the graph is data.
//
// Before evaluation the graph is planned: nodes no witness value, assert or
// log depends on are dropped; each value is kept in the form its readers
// want (Montgomery for multiplications, canonical for bitwise operations,
// shifts, relations and the witness itself; conversions are inserted where
// forms meet, and a multiplication of a canonical by a Montgomery value
// gives the canonical product in one step), or, when range analysis
// (graph_range.hpp) proves it narrow, as a signed 64-bit integer computed
// with machine arithmetic (SHA-256's bits and word sums); and each value gets a slot that
// is reused once its last reader has run, so memory is the graph's widest
// point (live values) × batch × 32 bytes, not its length.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "witgen/graph_file.hpp"
#include "witgen/input_json.hpp"

namespace zkfarm::witgen::graph {

/// What evaluating one input gave.
struct InputOutcome {
  /// False when one of the circuit's asserts failed for this input or it
  /// divided by zero (integer division): the caller runs the circuit's own
  /// generator on it for circom's message (the graph keeps no message).
  bool ok = true;
  std::string log;  ///< the circuit's log() output for this input (lines end in '\n')
};

/// A graph planned for evaluation.
class Evaluator {
 public:
  struct PlanView;
  /// Plans `g` (its nodes; throws GraphError for a graph past 2^29 live values).
  explicit Evaluator(Graph g);
  /// An evaluator from a plan kept on disk (graph_plan.hpp) and the graph it
  /// was made from, less its nodes (`g.nodes` is ignored). Every instruction
  /// is checked against the sizes it indexes (slots, constants, inputs,
  /// strings, witness entries) and against the operations the planner
  /// writes, so a damaged plan is refused, never evaluated out of bounds.
  /// Throws GraphError naming the instruction.
  Evaluator(Graph g, PlanView v);
  // The program's views point into this object's own vectors (or backing).
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  /// The graph (after a plan was loaded: without its nodes).
  const Graph& graph() const { return g_; }
  /// Nodes evaluated (after dead ones were dropped) and slots a lane needs:
  /// field slots (32 bytes) and integer slots (8 bytes).
  size_t instructions() const;
  uint32_t slots() const;
  uint32_t small_slots() const;
  /// Instructions computed on machine integers (narrow values).
  size_t small_instructions() const;
  /// Modular inversions one evaluation pays per input (kInv and kDiv
  /// instructions; inversions of one depth share one: graph_inversions.hpp).
  size_t inversions() const;

  /// The values of one parsed input file (parse_input), in the circuit's
  /// input order, canonical. Throws InputFault in the generators' words: a
  /// signal that is not an input, an array of the wrong length, a missing
  /// signal (generator_host.hpp).
  std::vector<U256> arrange(const std::vector<InputSignal>& input) const;

  /// Evaluates inputs[i] (input_values() canonical values each) into out[i]:
  /// witness_size × 32 bytes, each value canonical little-endian (the body
  /// of a .wtns). outcomes gets one entry per input. The whole batch runs in
  /// one pass; memory: (slots() × 32 + small_slots() × 8) × inputs.size() bytes.
  void evaluate(const std::vector<const std::vector<U256>*>& inputs, const std::vector<uint8_t*>& out,
                std::vector<InputOutcome>& outcomes) const;

  /// The form a value is kept in: Montgomery (x·R mod p: what a
  /// multiplication wants) or canonical (x: what relations, bitwise
  /// operations, shifts and the witness file want). Additions work in either.
  /// kSmall: a narrow value (graph_range.hpp) as a signed integer v, x = v mod p.
  enum Form : uint8_t { kMont = 0, kCanon = 1, kSmall = 2 };
  /// One operand as planned: a slot, a constant or an input value, read in `form`.
  struct Operand {
    uint8_t kind = 0;  ///< 0 field slot, 1 constant, 2 input, 3 integer slot
    uint8_t form = kMont;
    uint32_t index = 0;  ///< below 2^29
    /// In an instruction: kind in bits 31–30, form in bit 29, the index below.
    /// (An integer operand's form bit is unused: only kind 3 or a constant's table says so.)
    uint32_t packed() const { return (uint32_t(kind) << 30) | (uint32_t(form & 1) << 29) | index; }
  };
  /// 16 bytes: the program of a 2^20-constraint circuit is millions of
  /// these, read once per batch (and, for a one-shot witness, read, hashed
  /// and checked once a process), so their size is the evaluator's memory
  /// traffic. What few instructions need more lies in side streams read in
  /// program order: a select's third operand (Plan::thirds), and the count
  /// of a value that fills kOutsEscape or more witness entries (the word
  /// before its entries in Plan::outs).
  struct Instr {
    Op op;                 ///< a graph operation, or one of the planner's (graph_eval.cpp)
    uint8_t form = kMont;  ///< the form of the value it writes
    Op sub = Op(0);        ///< the graph operation an integer instruction computes
    uint8_t outs = 0;      ///< witness entries this value fills (the next ones of Plan::outs); kOutsEscape: see above
    uint32_t dst = 0;      ///< slot of the value (ops with a value)
    uint32_t a = 0, b = 0;  ///< Operand::packed(); kLogText: b's index is the string
  };
  /// Instr::outs of a value filling 255 or more witness entries: its count is the next word of Plan::outs.
  static constexpr uint8_t kOutsEscape = 255;
  /// What planning gives: the program and the sizes evaluation allocates.
  struct Plan {
    std::vector<Instr> code;
    std::vector<uint32_t> outs;          ///< witness indices, grouped by instruction (a long group after its count)
    std::vector<uint32_t> thirds;        ///< the third operand (Operand::packed) of each select, in program order
    std::vector<int64_t> small_consts;   ///< each constant's integer (0 where it is not narrow)
    uint32_t slots = 0, small_slots = 0;
    uint64_t small_instructions = 0;
  };
  /// A plan read back: its program and witness indices lie in bytes that
  /// `backing` keeps alive (a plan file read whole: not copied again).
  struct PlanView {
    std::span<const Instr> code;
    std::span<const uint32_t> outs;
    std::span<const uint32_t> thirds;
    std::vector<int64_t> small_consts;
    uint32_t slots = 0, small_slots = 0;
    std::shared_ptr<const void> backing;
  };


  /// The program, and the witness entries its instructions fill (in order, Instr::outs each, a long group after its count).
  std::span<const Instr> code() const { return code_; }
  std::span<const uint32_t> witness_indices() const { return outs_; }
  /// The selects' third operands, in program order.
  std::span<const uint32_t> third_operands() const { return thirds_; }
  /// Each constant's value as an integer (0 where it is not narrow).
  const std::vector<int64_t>& small_consts() const { return p_.small_consts; }

 private:
  /// kOne: one input (the commonest integer instructions without lanes).
  template <class F, bool kOne>
  void run(const std::vector<const std::vector<U256>*>& inputs, const std::vector<uint8_t*>& out,
           std::vector<InputOutcome>& outcomes) const;

  Graph g_;
  Plan p_;  ///< a plan read back keeps only its sizes and small_consts here
  std::span<const Instr> code_;      ///< p_.code, or a plan file's bytes
  std::span<const uint32_t> outs_;   ///< p_.outs, or a plan file's bytes
  std::span<const uint32_t> thirds_;  ///< p_.thirds, or a plan file's bytes
  std::shared_ptr<const void> backing_;
};

}  // namespace zkfarm::witgen::graph
