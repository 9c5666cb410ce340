// data.skip: windows of left-out batches parse, merge, and shift the batch each step reads.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "config/data_windows.h"

namespace trident {
namespace {

TEST(DataWindows, parse_merges_overlapping_and_adjacent_windows) {
  const std::vector<DataWindow> w = parse_data_windows("20-25,3-4,5,24-30,40-40");
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0], (DataWindow{3, 5}));
  EXPECT_EQ(w[1], (DataWindow{20, 30}));
  EXPECT_EQ(w[2], (DataWindow{40, 40}));
  EXPECT_EQ(format_data_windows(w), "3-5,20-30,40-40");
  EXPECT_TRUE(parse_data_windows("").empty());
}

TEST(DataWindows, bad_text_says_what_is_wrong) {
  for (const char* bad : {"3-", "a-4", "0-2", "5-3", "1,,2", "1-2-3"}) {
    try {
      parse_data_windows(bad);
      ADD_FAILURE() << bad << " parsed";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(DataWindows, a_step_reads_the_nth_batch_not_left_out) {
  const std::vector<DataWindow> w = parse_data_windows("3-4,6");
  // Batches 1, 2, 5, 7, 8, ...
  const std::vector<int64_t> expected = {1, 2, 5, 7, 8, 9};
  for (size_t s = 0; s < expected.size(); ++s)
    EXPECT_EQ(data_batch_of_step(w, static_cast<int64_t>(s) + 1), expected[s]) << "step " << s + 1;
  EXPECT_EQ(data_batch_of_step({}, 17), 17);
  // Leaving out the batches steps 3-4 read (5 and 7) shifts step 3 to batch 8.
  std::vector<DataWindow> more = w;
  more.push_back({data_batch_of_step(w, 3), data_batch_of_step(w, 4)});
  EXPECT_EQ(data_batch_of_step(merge_windows(more), 3), 8);
}

}  // namespace
}  // namespace trident
