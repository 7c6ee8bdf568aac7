#include "protocol/worker_messages.hpp"

#include <string>

namespace zkfarm::protocol {

namespace {

// Optional fields keep the leniency the workers had when they read them in
// place: absent means the default; present of another type is malformed.
uint64_t u64_or(const Message& msg, const char* name, uint64_t fallback) {
  return msg.contains(name) ? get_u64(msg, name) : fallback;
}

std::string str_or(const Message& msg, const char* name, std::string fallback) {
  return find_str(msg, name).value_or(std::move(fallback));
}

WorkRef work_ref(const Message& msg) {
  return {get_u64(msg, "job"), get_u32(msg, "partition"), get_u32(msg, "slot"), get_u64(msg, "generation")};
}

SlotSpan slot_span(const Message& msg) { return {get_u64(msg, "offset"), get_u64(msg, "size")}; }

void put_ref(Message& m, const WorkRef& ref) {
  m["job"] = ref.job;
  m["partition"] = ref.partition;
  m["slot"] = ref.slot;
  m["generation"] = ref.generation;
}

void put_span(Message& m, const SlotSpan& span) {
  m["offset"] = span.offset;
  m["size"] = span.size;
}

// SYNTH_DONE and PROVE_DONE share every field but the proof and key_cached.
WorkResult work_result(const Message& msg, bool prove) {
  WorkResult r;
  r.ok = get_bool(msg, "ok");
  if (!r.ok) r.error = str_or(msg, "error", "unknown error");
  if (prove && r.ok) r.proof = get_bin(msg, "proof");
  // Not a boolean reads as absent: only a metric depends on it.
  if (auto it = msg.find("key_cached"); prove && it != msg.end() && it->is_boolean()) r.key_cached = it->get<bool>();
  // Likewise: anything but true is the partition's own fault (its job fails,
  // as from a worker that never sends it).
  if (auto it = msg.find("device_fault"); prove && !r.ok && it != msg.end() && it->is_boolean())
    r.device_fault = it->get<bool>();
  return r;
}

std::string encode_done(const char* type, const WorkRef& ref, const WorkResult& r, bool prove) {
  Message m = make(type);
  put_ref(m, ref);
  m["ok"] = r.ok;
  if (!r.ok) m["error"] = r.error;
  if (prove && r.ok) m["proof"] = bin(r.proof);
  if (prove && r.key_cached) m["key_cached"] = *r.key_cached;
  if (prove && !r.ok && r.device_fault) m["device_fault"] = true;
  return encode(m);
}

Synth synth_body(const Message& msg, const WorkRef& ref) {
  Synth s{ref, slot_span(msg), get_str(msg, "zkey"), WitnessFile{}};
  if (msg.contains("generator")) {
    CircuitInput in;
    in.generator = get_str(msg, "generator");
    in.input = get_str(msg, "input");
    in.input_name = str_or(msg, "input_name", in.input);
    in.witness_timeout_ms = u64_or(msg, "witness_timeout_ms", in.witness_timeout_ms);
    in.witness_memory_mib = u64_or(msg, "witness_memory_mib", in.witness_memory_mib);
    in.witness_cpu_s = u64_or(msg, "witness_cpu_s", in.witness_cpu_s);
    in.sandbox_user = str_or(msg, "sandbox_user", in.sandbox_user);
    in.sandbox_uid_base = u64_or(msg, "sandbox_uid_base", in.sandbox_uid_base);
    in.sandbox_uid_count = u64_or(msg, "sandbox_uid_count", in.sandbox_uid_count);
    in.witness_engine = str_or(msg, "witness_engine", in.witness_engine);
    in.statement = str_or(msg, "statement", in.statement);
    in.graph_sha256 = str_or(msg, "graph_sha256", in.graph_sha256);
    s.witness = std::move(in);
  } else {
    s.witness = WitnessFile{get_str(msg, "wtns")};
  }
  // Lenient as "priority": a count it cannot read is no batch.
  if (auto it = msg.find("batch_of"); it != msg.end() && it->is_number_unsigned())
    s.batch_of = std::max<uint64_t>(1, it->get<uint64_t>());
  return s;
}

Prove prove_body(const Message& msg, const WorkRef& ref) {
  Prove p{ref, slot_span(msg), get_str(msg, "zkey"), 0};
  // Lenient as the worker's queue always was: a priority it cannot read sorts lowest.
  if (auto it = msg.find("priority"); it != msg.end() && it->is_number_unsigned()) p.priority = it->get<uint64_t>();
  return p;
}

// A request's body, once its ids are known: a fault in it becomes
// MalformedRequest, which the worker answers.
template <class Body>
auto request(const Message& msg, const char* type, Body body) {
  const WorkRef ref = work_ref(msg);  // without the ids: a plain ProtocolError, nobody to answer
  try {
    return body(msg, ref);
  } catch (const ProtocolError& e) {
    throw MalformedRequest(type, ref, e.what());
  }
}

}  // namespace

FromWorker from_worker(const Message& msg) {
  const std::string t = type_of(msg);
  if (t == kHeartbeat) return Heartbeat{str_or(msg, "worker", "")};
  if (t == kReady) {
    return Ready{get_str(msg, "worker"), get_str(msg, "kind"), get_str(msg, "version"), get_u64(msg, "pid"),
                 get_str(msg, "backend")};
  }
  if (t == kStarted) return Started{work_ref(msg)};
  if (t == kSynthDone) return SynthDone{work_ref(msg), work_result(msg, false)};
  if (t == kProveDone) return ProveDone{work_ref(msg), work_result(msg, true)};
  throw ProtocolError("a worker does not send " + t);
}

FromWorker decode_from_worker(std::string_view frame) { return from_worker(decode(frame)); }

FromSupervisor from_supervisor(const Message& msg) {
  const std::string t = type_of(msg);
  if (t == kHeartbeat) return Heartbeat{};
  if (t == kShutdown) return Shutdown{};
  if (t == kAbort) return Abort{work_ref(msg)};
  if (t == kSynth) return request(msg, kSynth, synth_body);
  if (t == kProve) return request(msg, kProve, prove_body);
  throw ProtocolError("a worker does not take " + t);
}

FromSupervisor decode_from_supervisor(std::string_view frame) { return from_supervisor(decode(frame)); }

std::string encode(const Ready& r) {
  Message m = make(kReady);
  m["worker"] = r.worker;
  m["kind"] = r.kind;
  m["version"] = r.version;
  m["pid"] = r.pid;
  m["backend"] = r.backend;
  return encode(m);
}

std::string encode(const Heartbeat& h) {
  Message m = make(kHeartbeat);
  if (!h.worker.empty()) m["worker"] = h.worker;
  return encode(m);
}

std::string encode(const Synth& s) {
  Message m = make(kSynth);
  put_ref(m, s.ref);
  put_span(m, s.span);
  m["zkey"] = s.zkey;
  if (const auto* in = std::get_if<CircuitInput>(&s.witness)) {
    m["generator"] = in->generator;
    m["input"] = in->input;
    m["input_name"] = in->input_name;
    m["witness_timeout_ms"] = in->witness_timeout_ms;
    m["witness_memory_mib"] = in->witness_memory_mib;
    m["witness_cpu_s"] = in->witness_cpu_s;
    m["sandbox_user"] = in->sandbox_user;
    m["sandbox_uid_base"] = in->sandbox_uid_base;
    m["sandbox_uid_count"] = in->sandbox_uid_count;
    m["witness_engine"] = in->witness_engine;
    if (!in->statement.empty()) m["statement"] = in->statement;
    if (!in->graph_sha256.empty()) m["graph_sha256"] = in->graph_sha256;
  } else {
    m["wtns"] = std::get<WitnessFile>(s.witness).path;
  }
  if (s.batch_of > 1) m["batch_of"] = s.batch_of;
  return encode(m);
}

std::string encode(const Prove& p) {
  Message m = make(kProve);
  put_ref(m, p.ref);
  put_span(m, p.span);
  m["zkey"] = p.zkey;
  m["priority"] = p.priority;
  return encode(m);
}

std::string encode(const Started& s) {
  Message m = make(kStarted);
  put_ref(m, s.ref);
  return encode(m);
}

std::string encode(const SynthDone& d) { return encode_done(kSynthDone, d.ref, d.result, false); }

std::string encode(const ProveDone& d) { return encode_done(kProveDone, d.ref, d.result, true); }

std::string encode(const Abort& a) {
  Message m = make(kAbort);
  put_ref(m, a.ref);
  return encode(m);
}

std::string encode(const Shutdown&) { return encode(make(kShutdown)); }

}  // namespace zkfarm::protocol
