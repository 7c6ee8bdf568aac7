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
  for (u32 c = Z_circuitZ_getMessageChar(m); c != 0; c = Z_circuitZ_getMessageChar(m)) {
    if (s.size() >= (1u << 20)) zkfarm::witgen::fail(3, "the circuit's message is longer than 1 MiB");
    s.push_back(char(c));
  }
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
  if (n32 == 0 || n32 > 64) zkfarm::witgen::fail(3, "the wasm's field has " + std::to_string(n32) + " words");
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
    const u32 version = guarded([&] { return Z_circuitZ_getVersion(&module_); });
    if (version != 2)
      zkfarm::witgen::fail(4, "this wasm was made by circom " + std::to_string(version) +
                                  ".x; zkfarm runs circom 2 circuits");
    n32_ = guarded([&] { return Z_circuitZ_getFieldNumLen32(&module_); });
    // A field element of more than 64 words is no circom prime: refused
    // before any buffer is sized by it.
    if (n32_ == 0 || n32_ > 64) zkfarm::witgen::fail(4, "the wasm's field has " + std::to_string(n32_) + " words");
    guarded([&] { Z_circuitZ_init(&module_, 0); });
  }

  const char* kind() const override { return "wasm"; }

  std::vector<uint8_t> prime() override {
    guarded([&] { Z_circuitZ_getRawPrime(&module_); });
    return shared();
  }
  uint32_t witness_size() override { return guarded([&] { return Z_circuitZ_getWitnessSize(&module_); }); }
  uint32_t input_count() override { return guarded([&] { return Z_circuitZ_getInputSize(&module_); }); }

  std::optional<uint32_t> signal_size(uint64_t hash) override {
    // Not an input: negative (circom_runtime's check) or 0 (what circom 2.1's
    // wasm answers for a name it does not know; no input has zero values).
    const int32_t n =
        int32_t(guarded([&] { return Z_circuitZ_getInputSignalSize(&module_, u32(hash >> 32), u32(hash)); }));
    if (n <= 0) return std::nullopt;
    return uint32_t(n);
  }

  // circom's wasm exports no way to list its inputs: its input hash map (256
  // slots of {u64 hash, u32 signal, u32 size}, free slots all zero) lies in
  // the module's memory at an offset its code holds but does not export. So
  // the memory is searched for 256 such slots whose sizes add up to the
  // input count, and each hash found is confirmed through the module's own
  // getInputSignalSize: what is listed is then exactly the inputs (each one
  // real, sizes positive, and their sum the whole). Found by nothing: nullopt.
  std::optional<std::vector<zkfarm::witgen::SignalShape>> input_signals() override {
    const uint32_t total = input_count();
    if (total == 0) return std::vector<zkfarm::witgen::SignalShape>{};
    const wasm_rt_memory_t* mem = Z_circuitZ_memory(&module_);
    constexpr size_t kSlots = 256, kSlot = 16;
    if (mem->size < kSlots * kSlot) return std::nullopt;
    auto u32_at = [&](size_t at) {
      u32 v;
      std::memcpy(&v, mem->data + at, 4);
      return v;
    };
    auto u64_at = [&](size_t at) {
      uint64_t v;
      std::memcpy(&v, mem->data + at, 8);
      return v;
    };
    // A slot: free (16 zero bytes) or {hash != 0, size 1..total}; anything
    // else rules out every window holding it. One sliding window per
    // alignment (start mod 16 = 0 or 8), linear in the memory's size.
    for (size_t phase = 0; phase < kSlot; phase += 8) {
      size_t bad = 0, used = 0;
      uint64_t sum = 0;
      auto account = [&](size_t at, int sign) {
        const uint64_t h = u64_at(at);
        const u32 id = u32_at(at + 8), size = u32_at(at + 12);
        if (h == 0 && id == 0 && size == 0) return;
        if (h == 0 || size == 0 || size > total) {
          bad += sign;
          return;
        }
        used += sign;
        sum += sign > 0 ? size : -uint64_t(size);
      };
      const size_t last = (mem->size - phase) / kSlot;  // slots that fit
      for (size_t k = 0; k < last; ++k) {
        account(phase + k * kSlot, +1);
        if (k + 1 < kSlots) continue;
        const size_t start = phase + (k + 1 - kSlots) * kSlot;
        if (bad == 0 && used > 0 && sum == total)
          if (auto found = confirm(start, kSlots, u64_at, u32_at)) return found;
        account(start, -1);
      }
    }
    return std::nullopt;
  }

  void set(uint64_t hash, uint32_t index, const std::vector<uint8_t>& le) override {
    for (u32 j = 0; j < n32_; ++j) {
      u32 w = 0;
      for (int b = 0; b < 4; ++b)
        if (j * 4 + b < le.size()) w |= u32(le[j * 4 + b]) << (8 * b);
      guarded([&] { Z_circuitZ_writeSharedRWMemory(&module_, j, w); });
    }
    guarded([&] { Z_circuitZ_setInputSignal(&module_, u32(hash >> 32), u32(hash), index); });
  }

  // The wasm runs the circuit when its last input is set; with none, init ran it.
  void run_without_inputs() override {}

  void witness(uint32_t i, uint8_t* le) override {
    guarded([&] { Z_circuitZ_getWitness(&module_, i); });
    const std::vector<uint8_t> v = shared();
    std::memcpy(le, v.data(), v.size());
  }

 private:
  // The used slots of the window at `start`, when the module confirms each.
  template <class U64, class U32>
  std::optional<std::vector<zkfarm::witgen::SignalShape>> confirm(size_t start, size_t slots, U64 u64_at, U32 u32_at) {
    std::vector<zkfarm::witgen::SignalShape> out;
    for (size_t i = 0; i < slots; ++i) {
      const uint64_t h = u64_at(start + i * 16);
      if (h == 0) continue;
      const u32 size = u32_at(start + i * 16 + 12);
      for (const auto& seen : out)
        if (seen.hash == h) return std::nullopt;
      if (signal_size(h) != std::optional<uint32_t>(size)) return std::nullopt;
      // The slot's signal id: main's inputs lie in the witness's prefix (one,
      // outputs, inputs), which circom's simplification never removes, so the
      // id is the witness index.
      out.push_back({h, size, u32_at(start + i * 16 + 8)});
    }
    return out;
  }

  std::vector<uint8_t> shared() {
    std::vector<uint8_t> le(size_t(n32_) * 4);
    for (u32 j = 0; j < n32_; ++j) {
      const u32 w = guarded([&] { return Z_circuitZ_readSharedRWMemory(&module_, j); });
      for (int b = 0; b < 4; ++b) le[j * 4 + b] = uint8_t(w >> (8 * b));
    }
    return le;
  }
  // Every call from here into the module: a trap of the wasm code
  // (out-of-bounds access, unreachable, stack exhaustion) longjmps to the
  // setjmp of the call it happened in, which must still be running, so each
  // call sets its own (a trap outside one jumped into a frame that had
  // returned: undefined behaviour, seen as a 100 % CPU spin). It ends the run
  // as a failure of the circuit. The imports the module calls back run inside
  // the guarded call that made them and call the module unguarded.
  template <class F>
  auto guarded(F&& f) -> decltype(f()) {
    if (wasm_rt_impl_try() != 0)  // setjmp: only in a comparison (C11 7.13.1.1)
      zkfarm::witgen::fail(3, "the circuit's wasm code trapped (out of bounds, unreachable or its stack exhausted)" +
                                  (runtime_.error.empty() ? std::string() : ": " + runtime_.error));
    return f();
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
