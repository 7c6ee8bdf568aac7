#include "ctl/results.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include "protocol/control_requests.hpp"
#include "files/file_error.hpp"
#include "files/safe_write.hpp"

namespace zkfarm::ctl {

using protocol::Message;

namespace {

// One page of `result`, asked for again while the refusal is transient.
Message result_page(Caller& client, uint64_t job, uint64_t from, std::chrono::steady_clock::time_point give_up) {
  bool told = false;
  for (;;) {
    const Message req = protocol::to_message(protocol::Result{.job = job, .from = from});
    try {
      return client.call(req);
    } catch (const Refused& e) {
      const auto again = std::chrono::steady_clock::now() + std::chrono::milliseconds(e.retry_after_ms);
      if (e.retry_after_ms <= 0 || again > give_up) throw;
      if (!told) std::cerr << "zkfarmctl: " << e.what() << "; asking again\n";
      told = true;
      std::this_thread::sleep_until(again);
    }
  }
}

}  // namespace

uint64_t write_results(Caller& client, uint64_t job, const std::string& out, int64_t retry_for_ms,
                       nlohmann::json* listing) {
  files::UniqueFd dir;  // made once the first page is there (an unfinished job creates nothing)
  uint64_t written = 0, from = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max<int64_t>(retry_for_ms, 0));
  for (;;) {
    Message reply = result_page(client, job, from, give_up);
    auto results = reply.find("results");
    if (results == reply.end() || !results->is_array()) throw MalformedReply("\"results\" is missing or not a list");
    if (!dir) {
      try {
        dir = files::create_dir_safe(out, 0755);
      } catch (const files::FileError& e) {
        throw CtlError(kExitFailed, std::string("cannot write the proofs of job ") + std::to_string(job) + ": " + e.what());
      }
    }
    for (const auto& r : *results) {
      const uint64_t k = protocol::get_u64(r, "partition");
      const std::string name = std::to_string(k);
      try {
        files::write_file_safe(dir.get(), out, name + ".public.json", protocol::get_str(r, "public"), 0644);
        files::write_file_safe(dir.get(), out, name + ".proof.json", protocol::get_str(r, "proof"), 0644);
      } catch (const files::FileError& e) {
        throw CtlError(kExitFailed, std::string("job ") + std::to_string(job) + ": " + e.what() + " (" +
                                        std::to_string(written) + " partitions written before)");
      }
      ++written;
      if (listing) {
        auto timing = r.find("timing");
        listing->push_back({{"partition", k},
                            {"proof", out + "/" + name + ".proof.json"},
                            {"public", out + "/" + name + ".public.json"},
                            {"timing", timing != r.end() && timing->is_object() ? *timing : nlohmann::json(nullptr)}});
      }
    }
    auto next = reply.find("next");
    if (next == reply.end() || next->is_null()) return written;
    if (!next->is_number_unsigned() || next->get<uint64_t>() <= from) throw MalformedReply("\"next\" does not advance");
    from = next->get<uint64_t>();
  }
}

}  // namespace zkfarm::ctl
