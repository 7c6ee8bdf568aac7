#pragma once
// The loop's events: what one part of the supervisor tells the others (a job
// ended, a partition's proof verified, a worker answered …) as a typed value
// dispatched through one bus, instead of a callback one part holds of
// another. Each event type is declared beside the part that emits it (its
// header lists what it emits and what it handles); a part subscribes to the
// types it handles in its own constructor, so the supervisor's constructor
// wires parts to the bus, not to each other (Envoy's typed messages at every
// edge are the model).
//
// Dispatch is synchronous, on the loop thread, in subscription order: an
// event is handled before emit() returns, as the callbacks it replaces were,
// so the order of the farm's effects does not change. An event nobody
// handles is dropped. Subscribing while an event is being dispatched throws
// std::logic_error (a handler list must not move under the dispatch).
#include <functional>
#include <stdexcept>
#include <typeindex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace zkfarm::supervisor {

class EventBus {
 public:
  /// Calls `handler` with every event of type E emitted from now on.
  template <class E, class F>
  void on(F&& handler) {
    if (dispatching_) throw std::logic_error("EventBus: a subscription during a dispatch");
    handlers_[std::type_index(typeid(E))].push_back(
        [h = std::forward<F>(handler)](const void* e) { h(*static_cast<const E*>(e)); });
  }
  /// Hands `event` to each handler of its type, in subscription order.
  template <class E>
  void emit(const E& event) const {
    const auto it = handlers_.find(std::type_index(typeid(E)));
    if (it == handlers_.end()) return;
    const bool outer = !dispatching_;
    dispatching_ = true;
    try {
      for (const auto& h : it->second) h(&event);
    } catch (...) {
      if (outer) dispatching_ = false;
      throw;
    }
    if (outer) dispatching_ = false;
  }
  /// How many handlers events of type E have (for tests of the wiring).
  template <class E>
  size_t handlers() const {
    const auto it = handlers_.find(std::type_index(typeid(E)));
    return it == handlers_.end() ? 0 : it->second.size();
  }

 private:
  std::unordered_map<std::type_index, std::vector<std::function<void(const void*)>>> handlers_;
  mutable bool dispatching_ = false;
};

}  // namespace zkfarm::supervisor
