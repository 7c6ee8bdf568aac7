// The loop's event bus (supervisor/model/event_bus.hpp): typed dispatch in
// subscription order, events of other types untouched, an event without a
// handler dropped, an event emitted from a handler handled at once, and a
// subscription during a dispatch refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "supervisor/model/event_bus.hpp"

namespace zkfarm::supervisor {
namespace {

struct BusTestProved {
  int partition;
};
struct BusTestEnded {
  std::string why;
};

TEST(EventBus, HandsEachEventToItsTypesHandlersInSubscriptionOrder) {
  EventBus bus;
  std::vector<std::string> seen;
  bus.on<BusTestProved>([&](const BusTestProved& e) { seen.push_back("first " + std::to_string(e.partition)); });
  bus.on<BusTestEnded>([&](const BusTestEnded& e) { seen.push_back("ended " + e.why); });
  bus.on<BusTestProved>([&](const BusTestProved& e) { seen.push_back("second " + std::to_string(e.partition)); });
  bus.emit(BusTestProved{7});
  bus.emit(BusTestEnded{"cancelled"});
  EXPECT_EQ(seen, (std::vector<std::string>{"first 7", "second 7", "ended cancelled"}));
  EXPECT_EQ(bus.handlers<BusTestProved>(), 2u);
  EXPECT_EQ(bus.handlers<BusTestEnded>(), 1u);
}

TEST(EventBus, AnEventWithoutAHandlerIsDropped) {
  EventBus bus;
  EXPECT_NO_THROW(bus.emit(BusTestProved{1}));
  EXPECT_EQ(bus.handlers<BusTestProved>(), 0u);
}

TEST(EventBus, AnEventEmittedByAHandlerIsHandledBeforeEmitReturns) {
  EventBus bus;
  std::vector<std::string> seen;
  bus.on<BusTestProved>([&](const BusTestProved& e) {
    seen.push_back("proved");
    bus.emit(BusTestEnded{"job of partition " + std::to_string(e.partition)});
    seen.push_back("after ended");
  });
  bus.on<BusTestEnded>([&](const BusTestEnded& e) { seen.push_back(e.why); });
  bus.emit(BusTestProved{3});
  EXPECT_EQ(seen, (std::vector<std::string>{"proved", "job of partition 3", "after ended"}));
}

TEST(EventBus, ASubscriptionDuringADispatchIsRefusedAndTheBusStaysUsable) {
  EventBus bus;
  bus.on<BusTestProved>([&](const BusTestProved&) { bus.on<BusTestEnded>([](const BusTestEnded&) {}); });
  EXPECT_THROW(bus.emit(BusTestProved{1}), std::logic_error);
  EXPECT_EQ(bus.handlers<BusTestEnded>(), 0u);
  // Outside a dispatch, subscribing works again (the throw reset the flag).
  EXPECT_NO_THROW(bus.on<BusTestEnded>([](const BusTestEnded&) {}));
  EXPECT_EQ(bus.handlers<BusTestEnded>(), 1u);
}

}  // namespace
}  // namespace zkfarm::supervisor
