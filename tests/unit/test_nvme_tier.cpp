// The nvme tier's pieces: NvmeTier's streamed pipeline hands every piece's planes back as
// they were written, across ring wrap-arounds, with reads of one plane alone, and a full
// disk ends it with the path; TierFile (another job's file of the same name left alone) and
// StagingPool. AsyncIo: test_async_io.cpp.
#include <ATen/ATen.h>  // at::arange, at::equal
#include <fcntl.h>      // open
#include <gtest/gtest.h>
#include <sys/stat.h>  // fstat
#include <unistd.h>    // pwrite, pread, close

#include <cerrno>
#include <cstring>     // std::strerror
#include <filesystem>  // std::filesystem::is_empty
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/aligned_buffer.h"
#include "common/async_io.h"
#include "common/tier_file.h"
#include "tier_test_util.h"  // TempDir, built_backends
#include "zero/nvme_tier.h"
#include "zero/staging_pool.h"

namespace trident {
namespace {

/// Plane `plane` of piece `piece` (`n` elements of `dtype`), read alone from the file.
at::Tensor read_back(NvmeTier& tier, size_t piece, size_t plane, int64_t n, at::ScalarType dtype) {
  auto pool = std::make_shared<StagingPool>();
  at::Tensor got = pool->take(n, dtype);
  tier.finish(tier.post_read(piece, plane, got.data_ptr()));
  return got.clone();
}

/// A real backend whose `fail_at`-th write reports a full disk once the transfer is done,
/// as a backend does (the ticket is forgotten before the error is thrown).
class FullDiskIo : public AsyncIo {
 public:
  FullDiskIo(std::unique_ptr<AsyncIo> real, int fail_at) : real_(std::move(real)), left_(fail_at) {}
  uint64_t submit(const IoRequest& r) override {
    const uint64_t t = real_->submit(r);
    if (r.write && --left_ == 0) failing_ = t;
    return t;
  }
  void wait(uint64_t t) override {
    real_->wait(t);
    if (t == failing_) throw std::runtime_error("nvme tier: write failed: No space left on device");
  }
  void drain() noexcept override { real_->drain(); }
  std::string name() const override { return real_->name(); }

 private:
  std::unique_ptr<AsyncIo> real_;
  int left_;
  uint64_t failing_ = 0;
};

TEST(NvmeTier, a_full_disk_mid_stream_ends_it_with_the_path_instead_of_hanging) {
  for (IoBackend backend : built_backends()) {
    TempDir dir;
    const std::vector<int64_t> pieces = {4096, 4096, 4096, 4096, 4096, 4096};
    const std::vector<at::ScalarType> planes = {at::kFloat, at::kFloat};
    auto ring = std::make_shared<TierRing>();
    for (int i = 0; i < 3; ++i) ring->buffers.emplace_back(NvmeTier::record_bytes(planes, 4096));
    FullDiskIo io(make_async_io(12, backend), /*fail_at=*/5);
    SCOPED_TRACE(io.name());
    NvmeTier tier(dir.path + "/t.tier", planes, pieces, ring, io);
    try {
      tier.stream([](size_t, std::vector<at::Tensor>& pl) { pl[0].fill_(1.0f); }, false, true);
      ADD_FAILURE() << "a stream whose write failed completed";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("No space left on device"), std::string::npos) << what;
      EXPECT_NE(what.find(dir.path + "/t.tier"), std::string::npos) << what;
      EXPECT_NE(what.find("parallel.nvme_path"), std::string::npos) << what;
    }
  }
}

TEST(TierFile, no_room_for_the_reservation_names_the_path_and_the_key) {
  // A file larger than the filesystem could ever hold: the reservation fails at once.
  TempDir dir;
  try {
    TierFile file(dir.path + "/huge.tier", static_cast<off_t>(1) << 60);
    ADD_FAILURE() << "an exabyte tier file was reserved";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(dir.path + "/huge.tier"), std::string::npos) << what;
    EXPECT_NE(what.find("parallel.nvme_path"), std::string::npos) << what;
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path));  // nothing left behind
}

TEST(TierFile, missing_directory_names_the_key_to_fix) {
  try {
    TierFile file("/nonexistent-dir/for/the/tier/f.tier", 4096);
    ADD_FAILURE() << "a tier file in a missing directory opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("parallel.nvme_path"), std::string::npos) << e.what();
  }
}

TEST(TierFile, leaves_a_file_of_the_same_name_alone) {
  // Another job's tier file of the same name (two jobs sharing parallel.nvme_path), open
  // and not yet unlinked: a new tier file neither truncates it nor shares its blocks.
  TempDir dir;
  const std::string path = dir.path + "/rank0.buffer0.tier";
  const int other = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(other, 0) << std::strerror(errno);
  const std::string data(8192, 'x');
  ASSERT_EQ(::pwrite(other, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  {
    TierFile file(path, 4096);
    struct stat mine {
    }, theirs{};
    ASSERT_EQ(::fstat(file.fd(), &mine), 0);
    ASSERT_EQ(::fstat(other, &theirs), 0);
    EXPECT_NE(mine.st_ino, theirs.st_ino) << "the tier file opened the other job's file";
    EXPECT_EQ(theirs.st_size, static_cast<off_t>(data.size())) << "the other job's file was cut";
    std::string back(data.size(), '\0');
    EXPECT_EQ(::pread(other, back.data(), back.size(), 0), static_cast<ssize_t>(back.size()));
    EXPECT_TRUE(back == data) << "the other job's file was overwritten";
    EXPECT_TRUE(std::filesystem::exists(path)) << "the other job's file was unlinked";
  }
  EXPECT_EQ(std::vector<std::string>{"rank0.buffer0.tier"}, [&] {
    std::vector<std::string> names;  // nothing of the closed tier file is left
    for (const auto& e : std::filesystem::directory_iterator(dir.path))
      names.push_back(e.path().filename().string());
    return names;
  }());
  ::close(other);
}

TEST(NvmeTier, streams_planes_of_every_piece_back_as_written) {
  TempDir dir;
  // Pieces of odd lengths, more of them than buffers: the ring wraps around twice.
  const std::vector<int64_t> pieces = {5, 70000, 1, 4096, 333, 65536, 7};
  const std::vector<at::ScalarType> planes = {at::kFloat, at::kDouble, at::kBFloat16};
  auto ring = std::make_shared<TierRing>();
  for (int i = 0; i < 3; ++i) ring->buffers.emplace_back(NvmeTier::record_bytes(planes, 70000));
  const std::unique_ptr<AsyncIo> io = make_async_io(12);
  NvmeTier tier(dir.path + "/t.tier", planes, pieces, ring, *io);
  auto expected = [&](size_t k, size_t p) {
    return at::arange(pieces[k], at::kDouble).mul_(0.5).add_(1000.0 * k + p).to(planes[p]);
  };
  tier.stream(
      [&](size_t k, std::vector<at::Tensor>& pl) {
        for (size_t p = 0; p < planes.size(); ++p) pl[p].copy_(expected(k, p));
      },
      /*read=*/false, /*write=*/true);
  // A read-modify-write pass, as the AdamW step makes.
  tier.stream(
      [&](size_t k, std::vector<at::Tensor>& pl) {
        for (size_t p = 0; p < planes.size(); ++p) {
          EXPECT_TRUE(at::equal(pl[p], expected(k, p))) << "piece " << k << " plane " << p;
          pl[p].add_(1);
        }
      },
      /*read=*/true, /*write=*/true);
  for (size_t k = 0; k < pieces.size(); ++k) {
    const at::Tensor got = read_back(tier, k, 1, pieces[k], at::kDouble);
    EXPECT_TRUE(at::equal(got, expected(k, 1).add(1))) << "piece " << k;
  }
  const TierStats& s = tier.stats();
  EXPECT_EQ(s.bytes_written, 2 * tier.file_bytes());
  int64_t double_plane = 0;  // what the read_back calls moved: whole blocks per piece
  for (int64_t n : pieces) double_plane += static_cast<int64_t>(align_up(n * sizeof(double)));
  EXPECT_EQ(s.bytes_read, tier.file_bytes() + double_plane);
}

TEST(NvmeTier, a_plane_the_visit_only_reads_is_not_written_back) {
  TempDir dir;
  const std::vector<int64_t> pieces = {5, 70000, 1, 4096};
  const std::vector<at::ScalarType> planes = {at::kFloat, at::kFloat};
  auto ring = std::make_shared<TierRing>();
  for (int i = 0; i < 3; ++i) ring->buffers.emplace_back(NvmeTier::record_bytes(planes, 70000));
  const std::unique_ptr<AsyncIo> io = make_async_io(12);
  NvmeTier tier(dir.path + "/t.tier", planes, pieces, ring, *io);
  tier.stream([](size_t, std::vector<at::Tensor>& pl) { pl[0].fill_(1), pl[1].fill_(2); }, false,
              true);
  const int64_t written = tier.stats().bytes_written;
  // Plane 1 (the gradient, in the AdamW step) is read; a change to it stays in the ring.
  tier.stream([](size_t, std::vector<at::Tensor>& pl) { pl[0].add_(pl[1]), pl[1].fill_(9); }, true,
              true, /*unchanged=*/1);
  int64_t plane0 = 0;
  for (int64_t n : pieces) plane0 += static_cast<int64_t>(align_up(n * sizeof(float)));
  EXPECT_EQ(tier.stats().bytes_written - written, plane0);
  for (size_t k = 0; k < pieces.size(); ++k) {
    EXPECT_TRUE(
        at::equal(read_back(tier, k, 0, pieces[k], at::kFloat), at::full({pieces[k]}, 3.0f)))
        << "piece " << k;
    EXPECT_TRUE(
        at::equal(read_back(tier, k, 1, pieces[k], at::kFloat), at::full({pieces[k]}, 2.0f)))
        << "piece " << k;
  }
}

TEST(NvmeTier, posted_transfers_move_a_piece_straight_between_a_tensor_and_the_file) {
  TempDir dir;
  // Pieces of whole 64 Ki-element chunks but the last, as the optimizer cuts them: each
  // piece but the last ends on a block boundary of the tensor.
  const std::vector<int64_t> pieces = {65536, 3};
  const std::vector<at::ScalarType> planes = {at::kFloat, at::kDouble};
  auto ring = std::make_shared<TierRing>();
  for (int i = 0; i < 3; ++i) ring->buffers.emplace_back(NvmeTier::record_bytes(planes, 65536));
  const std::unique_ptr<AsyncIo> io = make_async_io(12);
  NvmeTier tier(dir.path + "/t.tier", planes, pieces, ring, *io);
  auto pool = std::make_shared<StagingPool>();
  // Both pieces of plane 1 written from one tensor, the last piece's tail in its room.
  at::Tensor out = pool->take(pieces[0] + pieces[1], at::kDouble);
  out.copy_(at::arange(out.numel(), at::kDouble));
  const uint64_t w0 = tier.post_write(0, 1, out.data_ptr());
  const uint64_t w1 = tier.post_write(1, 1, out.data_ptr<double>() + pieces[0]);
  tier.finish(w1);
  tier.finish(w0);
  at::Tensor in = pool->take(out.numel(), at::kDouble);
  const uint64_t r1 = tier.post_read(1, 1, in.data_ptr<double>() + pieces[0]);
  const uint64_t r0 = tier.post_read(0, 1, in.data_ptr());
  tier.finish(r0);
  tier.finish(r1);
  EXPECT_TRUE(at::equal(in, out));
  // Plane 0 was never written: its pieces' file space is untouched by the transfers.
  EXPECT_EQ(tier.stats().bytes_written,
            static_cast<int64_t>(align_up(65536 * 8) + align_up(3 * 8)));
  // Memory off a block boundary is refused before anything is posted.
  EXPECT_THROW(tier.post_read(1, 1, in.data_ptr<double>() + 1), c10::Error);
}

TEST(StagingPool, lends_aligned_tensors_with_whole_blocks_of_room_and_reuses_them) {
  auto pool = std::make_shared<StagingPool>();
  void* first = nullptr;
  {
    at::Tensor t = pool->take(1000, at::kFloat);
    first = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % kIoAlignment, 0u);
    EXPECT_EQ(t.numel(), 1000);
    EXPECT_GE(t.storage().nbytes(), align_up(4000));
    at::Tensor other = pool->take(1000, at::kFloat);  // both lent at once: two buffers
    EXPECT_NE(other.data_ptr(), first);
    EXPECT_EQ(pool->bytes(), static_cast<int64_t>(2 * align_up(4000)));
  }
  // Returned (`t` last, as locals go in reverse): the next tensor of that room gets the
  // last returned buffer back instead of a new one.
  at::Tensor again = pool->take(1024, at::kFloat);
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(pool->bytes(), static_cast<int64_t>(2 * align_up(4000)));
  // A tensor outliving the pool's last other owner keeps it alive until it goes.
  std::weak_ptr<StagingPool> weak = pool;
  pool.reset();
  EXPECT_FALSE(weak.expired());
  again = at::Tensor();
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace trident
