#pragma once
// One request's context inside the Service: who asks, which route, the ids
// its path names. Made by Service::admit, used by the routes.
#include <cstdint>
#include <memory>
#include <string>

#include "api/service.hpp"

namespace zkfarm::api {

struct Service::Call {
  Principal who;
  Route route = Route::kHealth;
  std::string id;          ///< an upload id or a circuit name from the path
  uint64_t job = 0;        ///< a job id from the path
  uint64_t partition = 0;  ///< …/partitions/K/…
  std::string file;        ///< "proof.json" or "public.json"
  std::shared_ptr<void> reservation;  ///< upload bytes held against the quota until the request ends
};

}  // namespace zkfarm::api
