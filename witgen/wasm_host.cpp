// The host of a wasm witness generator: a circom `--wasm` circuit turned into
// C by wasm2c (wabt; module name "circuit": circuit.c, circuit.h), compiled and
// linked with this file and wabt's wasm-rt runtime. It does what
// circom_runtime's witness_calculator.js (WitnessCalculatorCircom2) does for
// snarkjs -- the imports the module calls, the exports it offers -- so the
// witness is byte for byte snarkjs's. The wasm code stays inside its sandbox:
// its memory is bounds-checked (guard pages), and it can call nothing but the
// four imports below. Command line and exit codes: generator_host.hpp.
#include <cstdio>
#include <cstring>
#include <string>

#include "circuit.h"
#include "wasm-rt-impl.h"
#include "witgen/generator_host.hpp"

// The imports' context: wasm2c passes it to every import.
struct Z_runtime_instance_t {
  Z_circuit_instance_t* module = nullptr;
  std::string error;    ///< printErrorMessage's text, for exceptionHandler
  std::string message;  ///< log() output being assembled (writeBufferMessage, showSharedRWMemory)
};

namespace {

std::string message_of(Z_circuit_instance_t* m) {
  std::string s;
  for (u32 c = Z_circuitZ_getMessageChar(m); c != 0; c = Z_circuitZ_getMessageChar(m)) s.push_back(char(c));
  return s;
}

}  // namespace

extern "C" {

// runtime.exceptionHandler(code): the circuit failed; witness_calculator.js's texts.
void Z_runtimeZ_exceptionHandler(struct Z_runtime_instance_t* rt, u32 code) {
  static const char* kinds[] = {"Unknown error. ",       "Signal not found. ",  "Too many signals set. ",
                                "Signal already set. ",  "Assert Failed. ",     "Not enough memory. ",
                                "Input signal array access exceeds the size. "};
  const char* kind = code >= 1 && code <= 6 ? kinds[code] : kinds[0];
  zkfarm::witgen::fail(3, std::string(kind) + rt->error);
}

void Z_runtimeZ_printErrorMessage(struct Z_runtime_instance_t* rt) { rt->error += message_of(rt->module) + "\n"; }

// log(): pieces, then "\n" ends the line (circom >= 2.0.7).
void Z_runtimeZ_writeBufferMessage(struct Z_runtime_instance_t* rt) {
  const std::string m = message_of(rt->module);
  if (m == "\n") {
    std::printf("%s\n", rt->message.c_str());
    rt->message.clear();
  } else {
    if (!rt->message.empty()) rt->message += " ";
    rt->message += m;
  }
}

// log() of a field value: the shared memory holds it, most significant word last.
void Z_runtimeZ_showSharedRWMemory(struct Z_runtime_instance_t* rt) {
  const u32 n32 = Z_circuitZ_getFieldNumLen32(rt->module);
  std::vector<uint8_t> le(size_t(n32) * 4);
  for (u32 j = 0; j < n32; ++j) {
    const u32 w = Z_circuitZ_readSharedRWMemory(rt->module, j);
    for (int b = 0; b < 4; ++b) le[j * 4 + b] = uint8_t(w >> (8 * b));
  }
  if (!rt->message.empty()) rt->message += " ";
  rt->message += zkfarm::witgen::to_decimal(le);
}

}  // extern "C"

namespace {

class WasmCircuit final : public zkfarm::witgen::CircuitBackend {
 public:
  WasmCircuit() {
    wasm_rt_init();
    Z_circuit_init_module();
    runtime_.module = &module_;
    guarded([&] { Z_circuit_instantiate(&module_, &runtime_); });
    if (Z_circuitZ_getVersion(&module_) != 2)
      zkfarm::witgen::fail(4, "this wasm was made by circom " + std::to_string(Z_circuitZ_getVersion(&module_)) +
                                  ".x; zkfarm runs circom 2 circuits");
    n32_ = Z_circuitZ_getFieldNumLen32(&module_);
    guarded([&] { Z_circuitZ_init(&module_, 0); });
  }

  const char* kind() const override { return "wasm"; }

  std::vector<uint8_t> prime() override {
    Z_circuitZ_getRawPrime(&module_);
    return shared();
  }
  uint32_t witness_size() override { return Z_circuitZ_getWitnessSize(&module_); }
  uint32_t input_count() override { return Z_circuitZ_getInputSize(&module_); }

  std::optional<uint32_t> signal_size(uint64_t hash) override {
    // Not an input: negative (circom_runtime's check) or 0 (what circom 2.1's
    // wasm answers for a name it does not know; no input has zero values).
    const int32_t n = int32_t(Z_circuitZ_getInputSignalSize(&module_, u32(hash >> 32), u32(hash)));
    if (n <= 0) return std::nullopt;
    return uint32_t(n);
  }

  void set(uint64_t hash, uint32_t index, const std::vector<uint8_t>& le) override {
    for (u32 j = 0; j < n32_; ++j) {
      u32 w = 0;
      for (int b = 0; b < 4; ++b)
        if (j * 4 + b < le.size()) w |= u32(le[j * 4 + b]) << (8 * b);
      Z_circuitZ_writeSharedRWMemory(&module_, j, w);
    }
    guarded([&] { Z_circuitZ_setInputSignal(&module_, u32(hash >> 32), u32(hash), index); });
  }

  // The wasm runs the circuit when its last input is set; with none, init ran it.
  void run_without_inputs() override {}

  void witness(uint32_t i, uint8_t* le) override {
    Z_circuitZ_getWitness(&module_, i);
    const std::vector<uint8_t> v = shared();
    std::memcpy(le, v.data(), v.size());
  }

 private:
  std::vector<uint8_t> shared() {
    std::vector<uint8_t> le(size_t(n32_) * 4);
    for (u32 j = 0; j < n32_; ++j) {
      const u32 w = Z_circuitZ_readSharedRWMemory(&module_, j);
      for (int b = 0; b < 4; ++b) le[j * 4 + b] = uint8_t(w >> (8 * b));
    }
    return le;
  }
  // A trap of the wasm code (out-of-bounds access, unreachable, stack
  // exhaustion) ends the run as a failure of the circuit.
  template <class F>
  void guarded(F&& f) {
    if (wasm_rt_impl_try() != 0)  // setjmp: only in a comparison (C11 7.13.1.1)
      zkfarm::witgen::fail(3, "the circuit's wasm code trapped (out of bounds, unreachable or its stack exhausted)" +
                                  (runtime_.error.empty() ? std::string() : ": " + runtime_.error));
    f();
  }

  Z_circuit_instance_t module_{};
  Z_runtime_instance_t runtime_;
  u32 n32_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  WasmCircuit c;
  return zkfarm::witgen::generator_main(argc, argv, c);
}
