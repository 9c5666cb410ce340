// AsyncIo on both backends moves exactly the bytes asked for and says when it cannot; a
// failed transfer or submit is reported once and never waited for again; a short transfer
// goes on with the rest; an engine's end lets the transfers in flight land.
#include <fcntl.h>  // open, O_RDONLY, O_DIRECTORY
#include <gtest/gtest.h>
#include <unistd.h>  // close, pread, pwrite

#include <cerrno>      // EAGAIN
#include <chrono>      // std::chrono::seconds
#include <cstring>     // std::memset, std::memcmp, std::strerror
#include <filesystem>  // std::filesystem::is_empty
#include <functional>  // std::function
#include <future>      // std::promise, std::future
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>  // std::thread
#include <vector>

#include "../ci_env.h"  // testing::under_ci
#include "common/aligned_buffer.h"
#include "common/async_io.h"
#include "common/tier_file.h"
#include "tier_test_util.h"  // TempDir, built_backends

namespace trident {
namespace {

constexpr size_t kBlock = kIoAlignment;

/// Block `k`'s bytes: its index and each byte's place, so that a block from the wrong
/// offset, or only part of one, does not match.
char block_byte(int k, size_t i) { return static_cast<char>(k * 31 + static_cast<int>(i % 251)); }

void fill_block(char* p, int k) {
  for (size_t i = 0; i < kBlock; ++i) p[i] = block_byte(k, i);
}

bool holds_block(const char* p, int k) {
  for (size_t i = 0; i < kBlock; ++i)
    if (p[i] != block_byte(k, i)) return false;
  return true;
}

/// Runs `body` on a thread of its own and says whether it returned within `limit`,
/// rethrowing what it threw: a transfer that never completes hangs that thread (left
/// behind, detached, with what `body` holds), not the test program.
bool returns_within(std::chrono::seconds limit, std::function<void()> body) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> returned = done->get_future();
  std::thread([done, body = std::move(body)] {
    try {
      body();
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  }).detach();
  if (returned.wait_for(limit) != std::future_status::ready) return false;
  returned.get();
  return true;
}

// Far longer than any of these transfers of a few blocks takes, even on a loaded machine.
constexpr std::chrono::seconds kHang{20};

void round_trip(IoBackend backend) {
  TempDir dir;
  const size_t block = 3 * kIoAlignment;
  TierFile file(dir.path + "/f.tier", static_cast<off_t>(4 * block));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path));  // unlinked at once
  const std::unique_ptr<AsyncIo> io = make_async_io(8, backend);
  std::vector<AlignedBuffer> out, in;
  std::vector<uint64_t> tickets;
  for (int k = 0; k < 4; ++k) {
    out.emplace_back(block);
    std::memset(out.back().data(), 'a' + k, block);
    tickets.push_back(
        io->submit({file.fd(), true, out.back().data(), block, static_cast<off_t>(k * block)}));
  }
  for (uint64_t t : tickets) io->wait(t);
  tickets.clear();
  for (int k = 3; k >= 0; --k) {  // completion order does not matter
    in.emplace_back(block);
    tickets.push_back(
        io->submit({file.fd(), false, in.back().data(), block, static_cast<off_t>(k * block)}));
  }
  for (uint64_t t : tickets) io->wait(t);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(std::memcmp(in[3 - k].data(), out[k].data(), block), 0);
  // Past the end of the file: a short read, named as one.
  AlignedBuffer past(block);
  const uint64_t t =
      io->submit({file.fd(), false, past.data(), block, static_cast<off_t>(4 * block)});
  try {
    io->wait(t);
    ADD_FAILURE() << "a read past the end completed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("short read"), std::string::npos) << e.what();
  }
}

TEST(AsyncIo, threads_move_every_byte) { round_trip(IoBackend::kThreads); }

TEST(AsyncIo, auto_backend_moves_every_byte) {
  // io_uring where the kernel allows it, threads where it is refused: the same bytes.
  round_trip(IoBackend::kAuto);
}

// Each backend asked for is the one used: kAuto falls back silently, so without these a
// build or kernel that lost io_uring would pass every other test on threads.
TEST(AsyncIo, io_uring_asked_for_is_io_uring) {
  if (!io_uring_built()) {
    // The build says so rather than running on threads.
    EXPECT_THROW(make_async_io(8, IoBackend::kUring), std::runtime_error);
    if (testing::under_ci())
      ADD_FAILURE() << "CI builds with liburing (scripts/setup.sh installs liburing-dev)";
    return;
  }
  const std::unique_ptr<AsyncIo> io = make_async_io(8, IoBackend::kUring);
  EXPECT_EQ(io->name(), "io_uring");
  round_trip(IoBackend::kUring);
  EXPECT_EQ(make_async_io(8, IoBackend::kAuto)->name(), "io_uring");
}

TEST(AsyncIo, threads_asked_for_are_threads) {
  EXPECT_EQ(make_async_io(8, IoBackend::kThreads)->name(), "threads");
}

TEST(AsyncIo, a_failed_transfer_throws_once_and_then_is_forgotten) {
  for (IoBackend backend : built_backends()) {
    TempDir dir;
    const int fd = ::open(dir.path.c_str(), O_RDONLY | O_DIRECTORY);  // writes fail: EBADF
    ASSERT_GE(fd, 0);
    const std::unique_ptr<AsyncIo> io = make_async_io(8, backend);
    SCOPED_TRACE(io->name());
    AlignedBuffer buffer(kIoAlignment);
    const uint64_t t = io->submit({fd, true, buffer.data(), kIoAlignment, 0});
    EXPECT_THROW(io->wait(t), std::runtime_error);
    // Waiting again used to block for ever: the ticket is gone.
    EXPECT_THROW(io->wait(t), std::logic_error);
    ::close(fd);
  }
}

TEST(AsyncIo, destroyed_with_transfers_in_flight_lets_them_land) {
  constexpr int kBlocks = 16;
  const size_t half = kBlocks * kBlock;
  for (IoBackend backend : built_backends()) {
    TempDir dir;
    TierFile file(dir.path + "/f.tier", static_cast<off_t>(2 * half));
    // The first half of the file holds the blocks to read; the writes go to the second.
    AlignedBuffer stored(half);
    for (int k = 0; k < kBlocks; ++k) fill_block(stored.data() + k * kBlock, k);
    ASSERT_EQ(::pwrite(file.fd(), stored.data(), half, 0), static_cast<ssize_t>(half));
    std::vector<AlignedBuffer> out(kBlocks), in(kBlocks);
    std::string backend_name;
    {
      const std::unique_ptr<AsyncIo> io = make_async_io(4, backend);
      backend_name = io->name();
      for (int k = 0; k < kBlocks; ++k) {
        out[k] = AlignedBuffer(kBlock);
        fill_block(out[k].data(), kBlocks + k);
        in[k] = AlignedBuffer(kBlock);
        std::memset(in[k].data(), 0, kBlock);
        const off_t at = static_cast<off_t>(k * kBlock);
        io->submit({file.fd(), true, out[k].data(), kBlock, static_cast<off_t>(half) + at});
        io->submit({file.fd(), false, in[k].data(), kBlock, at});
      }
    }  // none waited for: the destructor lets all of them land before the buffers can go
    SCOPED_TRACE(backend_name);
    for (int k = 0; k < kBlocks; ++k) EXPECT_TRUE(holds_block(in[k].data(), k)) << "read " << k;
    AlignedBuffer written(half);
    ASSERT_EQ(::pread(file.fd(), written.data(), half, static_cast<off_t>(half)),
              static_cast<ssize_t>(half));
    for (int k = 0; k < kBlocks; ++k)
      EXPECT_TRUE(holds_block(written.data() + k * kBlock, kBlocks + k)) << "write " << k;
  }
}

TEST(AsyncIo, io_uring_a_failed_submit_is_reported_and_never_waited_for) {
  if (!io_uring_built()) GTEST_SKIP() << "built without liburing";
  // What the drain on another thread needs, kept alive by it if it never returns.
  struct State {
    TempDir dir;
    TierFile file{dir.path + "/f.tier", static_cast<off_t>(2 * kBlock)};
    AlignedBuffer out{kBlock}, in{kBlock};
    int failures = 1;
    std::unique_ptr<AsyncIo> io;
  };
  auto s = std::make_shared<State>();
  UringSeams seams;
  State* state = s.get();  // owns the engine that owns the seam
  seams.submit_error = [state] { return state->failures-- > 0 ? -EAGAIN : 0; };
  s->io = make_uring_io(4, seams);
  fill_block(s->out.data(), 7);
  try {
    s->io->submit({s->file.fd(), true, s->out.data(), kBlock, 0});
    ADD_FAILURE() << "a submit that failed returned a ticket";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("io_uring_submit"), std::string::npos) << what;
    EXPECT_NE(what.find(std::strerror(EAGAIN)), std::string::npos) << what;
  }
  const bool returned = returns_within(kHang, [s] {
    s->io->drain();  // nothing is in flight
    // The ring goes on: the same write submitted again lands, and reads back.
    s->io->wait(s->io->submit({s->file.fd(), true, s->out.data(), kBlock, 0}));
    s->io->wait(s->io->submit({s->file.fd(), false, s->in.data(), kBlock, 0}));
    s->io.reset();
  });
  ASSERT_TRUE(returned) << "drain() waited for the transfer whose submit failed";
  EXPECT_TRUE(holds_block(s->in.data(), 7));
}

TEST(AsyncIo, io_uring_short_transfers_go_on_with_the_rest) {
  if (!io_uring_built()) GTEST_SKIP() << "built without liburing";
  constexpr int kPerTransfer = 5, kTransfers = 3;
  const size_t length = kPerTransfer * kBlock;
  struct State {
    TempDir dir;
    TierFile file{dir.path + "/f.tier", static_cast<off_t>(kTransfers* kPerTransfer* kBlock)};
    std::vector<AlignedBuffer> out, in;
    AlignedBuffer past{2 * kPerTransfer * kBlock};
    std::unique_ptr<AsyncIo> io;
    std::string past_error;
  };
  auto s = std::make_shared<State>();
  UringSeams seams;
  seams.max_entry_bytes = kBlock;   // each entry moves one block: every completion is short
  s->io = make_uring_io(2, seams);  // fewer entries than blocks in flight
  for (int t = 0; t < kTransfers; ++t) {
    s->out.emplace_back(length);
    s->in.emplace_back(length);
    for (int k = 0; k < kPerTransfer; ++k)
      fill_block(s->out[t].data() + k * kBlock, t * kPerTransfer + k);
    std::memset(s->in[t].data(), 0, length);
  }
  const bool returned = returns_within(kHang, [s, length] {
    std::vector<uint64_t> tickets;
    for (int t = 0; t < kTransfers; ++t)
      tickets.push_back(s->io->submit(
          {s->file.fd(), true, s->out[t].data(), length, static_cast<off_t>(t * length)}));
    for (uint64_t ticket : tickets) s->io->wait(ticket);
    tickets.clear();
    for (int t = kTransfers - 1; t >= 0; --t)
      tickets.push_back(s->io->submit(
          {s->file.fd(), false, s->in[t].data(), length, static_cast<off_t>(t * length)}));
    for (uint64_t ticket : tickets) s->io->wait(ticket);
    // Two transfers' length from the last block of the file: one block, then the end.
    const off_t last = static_cast<off_t>(kTransfers * length - kBlock);
    try {
      s->io->wait(s->io->submit({s->file.fd(), false, s->past.data(), 2 * length, last}));
    } catch (const std::runtime_error& e) {
      s->past_error = e.what();
    }
  });
  ASSERT_TRUE(returned) << "the short transfers never completed";
  for (int t = 0; t < kTransfers; ++t)
    for (int k = 0; k < kPerTransfer; ++k)
      EXPECT_TRUE(holds_block(s->in[t].data() + k * kBlock, t * kPerTransfer + k))
          << "transfer " << t << ", block " << k;
  EXPECT_NE(s->past_error.find("short read (4096 of 40960 bytes"), std::string::npos)
      << s->past_error;
  EXPECT_TRUE(holds_block(s->past.data(), kTransfers * kPerTransfer - 1));
}

}  // namespace
}  // namespace trident
