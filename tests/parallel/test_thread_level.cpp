// The MPI library's thread support against what trident needs (parallel/thread_level.h):
// enough passes, less stops the job with a message naming both levels and the fix.
#include <gtest/gtest.h>

#include <string>

#include "parallel/thread_level.h"

namespace trident {
namespace {

TEST(ThreadLevel, serialized_or_multiple_is_enough) {
  EXPECT_EQ(kThreadLevelNeeded, ThreadLevel::kSerialized);
  EXPECT_EQ(thread_level_shortfall(ThreadLevel::kSerialized), "");
  EXPECT_EQ(thread_level_shortfall(ThreadLevel::kMultiple), "");
}

TEST(ThreadLevel, less_names_both_levels_and_the_fix) {
  for (const ThreadLevel given : {ThreadLevel::kSingle, ThreadLevel::kFunneled}) {
    const std::string message = thread_level_shortfall(given);
    EXPECT_EQ(
        message.rfind(std::string("the MPI library gives thread support ") +
                          thread_level_name(given) + ", but trident needs MPI_THREAD_SERIALIZED",
                      0),
        size_t{0})
        << message;
    EXPECT_NE(message.find("use an MPI library built with thread support"), std::string::npos)
        << message;
  }
  EXPECT_NE(thread_level_shortfall(ThreadLevel::kSerialized, ThreadLevel::kMultiple), "");
}

TEST(ThreadLevel, names_are_mpi_constants) {
  EXPECT_STREQ(thread_level_name(ThreadLevel::kSingle), "MPI_THREAD_SINGLE");
  EXPECT_STREQ(thread_level_name(ThreadLevel::kFunneled), "MPI_THREAD_FUNNELED");
  EXPECT_STREQ(thread_level_name(ThreadLevel::kSerialized), "MPI_THREAD_SERIALIZED");
  EXPECT_STREQ(thread_level_name(ThreadLevel::kMultiple), "MPI_THREAD_MULTIPLE");
}

}  // namespace
}  // namespace trident
