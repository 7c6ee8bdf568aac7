// When housekeeping runs (supervisor/housekeeping_schedule.hpp): at start,
// then once a period; the test knob's value parsed strictly.
#include "supervisor/housekeeping_schedule.hpp"

#include <gtest/gtest.h>

namespace zkfarm::supervisor {
namespace {

TEST(HousekeepingSchedule, RunsAtStartThenOnceAPeriod) {
  HousekeepingSchedule s(1000);
  EXPECT_TRUE(s.due(5, true));
  EXPECT_FALSE(s.due(5, false));
  EXPECT_FALSE(s.due(1004, false));
  EXPECT_TRUE(s.due(1005, false));
  EXPECT_FALSE(s.due(1006, false));
  EXPECT_TRUE(s.due(1006, true));  // a start is always a pass
}

TEST(HousekeepingSchedule, APeriodOfZeroRunsEveryPass) {
  HousekeepingSchedule s(0);
  for (int64_t now : {0, 0, 1, 1, 2}) EXPECT_TRUE(s.due(now, false)) << now;
}

TEST(HousekeepingSchedule, TheKnobTakesOnlyADecimalCountInRange) {
  EXPECT_EQ(HousekeepingSchedule::period_of(nullptr), HousekeepingSchedule::kDefaultPeriodMs);
  EXPECT_EQ(HousekeepingSchedule::period_of(""), HousekeepingSchedule::kDefaultPeriodMs);
  EXPECT_EQ(HousekeepingSchedule::period_of("0"), 0);
  EXPECT_EQ(HousekeepingSchedule::period_of("250"), 250);
  EXPECT_EQ(HousekeepingSchedule::period_of("3600000"), 3600000);
  for (const char* bad : {"3600001", "-1", "+5", " 5", "5ms", "0x10", "99999999999999999999"})
    EXPECT_EQ(HousekeepingSchedule::period_of(bad), HousekeepingSchedule::kDefaultPeriodMs) << bad;
}

}  // namespace
}  // namespace zkfarm::supervisor
