// The main of a native witness generator: circom's C++ output (`circom --c`:
// CIRCUIT.cpp, CIRCUIT.dat, calcwit.*, circom.hpp, fr.*) linked with this file
// instead of circom's own main.cpp, whose main is renamed away
// (-Dmain=circom_generated_main) so that its loadCircuit, which knows the
// .dat layout of the circom version that wrote it, can still be used.
// zkfarm builds it (witgen/generator_build.cpp); the command line and exit
// codes are generator_host.hpp's. The .dat file lies beside the executable,
// as circom's own main expects (EXE.dat).
#include <limits.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "calcwit.hpp"
#include "circom.hpp"
#include "fr.hpp"
#include "witgen/generator_host.hpp"

// From circom's main.cpp (compiled beside this file).
Circom_Circuit* loadCircuit(std::string const& datFileName);

// From the circuit's generated code.
uint get_main_input_signal_no();
uint get_size_of_input_hashmap();
uint get_size_of_witness();

namespace {

using zkfarm::witgen::CircuitBackend;

class NativeCircuit final : public CircuitBackend {
 public:
  const char* kind() const override { return "native"; }

  std::vector<uint8_t> prime() override {
    std::vector<uint8_t> p(Fr_N64 * 8);
    std::memcpy(p.data(), Fr_q.longVal, p.size());
    return p;
  }
  uint32_t witness_size() override { return get_size_of_witness(); }
  uint32_t input_count() override { return get_main_input_signal_no(); }

  std::optional<uint32_t> signal_size(uint64_t hash) override {
    const HashSignalInfo* e = entry(hash);
    if (!e) return std::nullopt;
    return uint32_t(e->signalsize);
  }

  // The witness index of signal `id` when the `size` signals from it are
  // consecutive witness values too (getWitness reads signal
  // witness2SignalList[i]); 0 otherwise (no position is then claimed).
  uint32_t witness_index(u64 id, u64 size) {
    const u64* list = circuit()->witness2SignalList;
    const uint32_t n = witness_size();
    for (uint32_t w = 0; w < n; ++w) {
      if (list[w] != id) continue;
      for (u64 k = 1; k < size; ++k)
        if (w + k >= n || list[w + k] != id + k) return 0;
      return w;
    }
    return 0;
  }

  // The used entries of the input hash map (the ones entry() can stop at:
  // signalid 0 marks a free slot). Their sizes must add up to the circuit's
  // input count, or the map is not what this host reads it as: nullopt.
  std::optional<std::vector<zkfarm::witgen::SignalShape>> input_signals() override {
    std::vector<zkfarm::witgen::SignalShape> out;
    const uint n = get_size_of_input_hashmap();
    uint64_t total = 0;
    for (uint i = 0; i < n; ++i) {
      const HashSignalInfo& e = circuit()->InputHashMap[i];
      if (e.signalid == 0) continue;
      out.push_back({uint64_t(e.hash), uint32_t(e.signalsize), witness_index(e.signalid, e.signalsize)});
      total += e.signalsize;
    }
    if (total != input_count()) return std::nullopt;
    return out;
  }

  void set(uint64_t hash, uint32_t index, const std::vector<uint8_t>& le) override {
    FrElement v;
    const std::string dec = zkfarm::witgen::to_decimal(le);
    Fr_str2element(&v, dec.c_str(), 10);
    ctx()->setInputSignal(hash, index, v);
  }

  void run_without_inputs() override { ctx()->tryRunCircuit(); }

  void witness(uint32_t i, uint8_t* le) override {
    FrElement v;
    ctx()->getWitness(i, &v);
    Fr_toLongNormal(&v, &v);
    std::memcpy(le, v.longVal, Fr_N64 * 8);
  }

 private:
  Circom_Circuit* circuit() {
    if (!circuit_) {
      char exe[PATH_MAX];
      const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
      if (n <= 0) zkfarm::witgen::fail(4, "cannot find this generator's own path (/proc/self/exe)");
      exe[n] = 0;
      circuit_ = loadCircuit(std::string(exe) + ".dat");
    }
    return circuit_;
  }
  Circom_CalcWit* ctx() {
    if (!ctx_) ctx_ = new Circom_CalcWit(circuit());
    return ctx_;
  }
  // The input hash map's entry for `hash`, or nullptr: calcwit.cpp's
  // getInputSignalHashPosition (open addressing from hash mod size), but
  // without its assert for a name that is not there.
  const HashSignalInfo* entry(uint64_t hash) {
    const uint n = get_size_of_input_hashmap();
    if (n == 0) return nullptr;
    const HashSignalInfo* map = circuit()->InputHashMap;
    uint pos = uint(hash % uint64_t(n));
    for (uint k = 0; k < n; ++k, pos = (pos + 1) % n) {
      if (map[pos].hash == hash) return &map[pos];
      if (map[pos].signalid == 0) return nullptr;
    }
    return nullptr;
  }

  Circom_Circuit* circuit_ = nullptr;
  Circom_CalcWit* ctx_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  NativeCircuit c;
  return zkfarm::witgen::generator_main(argc, argv, c);
}
