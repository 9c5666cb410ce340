// Cluster files: the presets load with their datasheet figures, errors name the key, a
// written cluster reads back, and measured matmul rates are interpolated by size.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <cstdlib>  // std::getenv
#include <string>   // std::string

#include "plan/cluster.h"  // load_cluster, parse_cluster, cluster_to_toml

namespace trident::plan {
namespace {

std::vector<std::string> preset_dirs() {
  const char* root = std::getenv("TRIDENT_SOURCE_DIR");
  std::string here = __FILE__;  // .../tests/plan/test_cluster.cpp
  here = here.substr(0, here.rfind("/tests/"));
  return {root ? std::string(root) + "/configs/clusters" : here + "/configs/clusters",
          "configs/clusters"};
}

std::string error_of(const std::string& text) {
  try {
    parse_cluster(text, "test.toml");
  } catch (const ClusterError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ClusterError";
  return "";
}

TEST(Presets, load_with_datasheet_figures) {
  const Cluster a100 = load_cluster("a100-80gb", preset_dirs());
  EXPECT_EQ(a100.devices_per_node, 8);
  EXPECT_DOUBLE_EQ(a100.memory_per_device_gb, 80);
  EXPECT_DOUBLE_EQ(a100.peak_tflops.at("bf16"), 312);
  const Cluster h100 = load_cluster("h100", preset_dirs());
  EXPECT_DOUBLE_EQ(h100.peak_tflops.at("bf16"), 989);
  EXPECT_DOUBLE_EQ(h100.memory_per_device_gb, 80);
  EXPECT_DOUBLE_EQ(h100.inter_node_gbps, 50);  // 8 x 400 Gb/s per node
  const Cluster h200 = load_cluster("h200", preset_dirs());
  EXPECT_DOUBLE_EQ(h200.peak_tflops.at("bf16"), 989);
  EXPECT_DOUBLE_EQ(h200.memory_per_device_gb, 141);
  const Cluster example = load_cluster("example", preset_dirs());
  EXPECT_EQ(example.devices_per_node, 4);
  EXPECT_GT(h100.matmul_flops("bf16", 8192), 0.5 * 989e12);
  const auto names = preset_names(preset_dirs());
  for (const char* n : {"a100-80gb", "example", "h100", "h200"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}

TEST(Presets, unknown_name_lists_the_presets) {
  try {
    load_cluster("b300", preset_dirs());
    FAIL() << "expected a ClusterError";
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("h100"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_cluster("/nonexistent/cluster.toml", preset_dirs()), ClusterError);
}

TEST(ClusterFile, errors_name_the_key_and_line) {
  const std::string base = "devices_per_node = 8\nmemory_per_device_gb = 80\npeak_tflops = 100\n";
  EXPECT_NE(error_of(base + "intra_gbps = 3\n").find("test.toml:4: unknown key 'intra_gbps'"),
            std::string::npos);
  EXPECT_NE(error_of(base + "latency_us = \"fast\"\n").find("latency_us must be a number"),
            std::string::npos);
  EXPECT_NE(error_of("memory_per_device_gb = 80\npeak_tflops = 1\n").find("devices_per_node"),
            std::string::npos);
  EXPECT_NE(error_of(base + "[matmul_tflops.fp16]\n\"64\" = 1\n").find("unknown precision"),
            std::string::npos);
  EXPECT_NE(error_of("devices_per_node = 8\nmemory_per_device_gb = 80\n").find("peak_tflops"),
            std::string::npos);
  // One number for peak_tflops sets every precision.
  const Cluster c = parse_cluster(base, "test.toml");
  EXPECT_DOUBLE_EQ(c.peak_tflops.at("fp64"), 100);
  EXPECT_THROW(Cluster{}.matmul_flops("bf16", 64), ClusterError);
}

TEST(ClusterFile, writes_what_it_reads) {
  Cluster c;
  c.name = "here";
  c.devices_per_node = 2;
  c.cores_per_node = 2;
  c.memory_per_device_gb = 11.5;
  c.layer_overhead_us = 250;
  c.layer_overhead_tp_us = 400;
  c.elementwise_gbps = {{3e6, 6.5}};
  c.sync_us = 40;
  c.sync_fraction = 0.125;
  c.peak_tflops = {{"fp32", 0.05}};
  c.matmul_tflops["fp32"] = {{64, 0.01}, {256, 0.04}};
  c.intra_node_gbps = c.inter_node_gbps = 3.5;
  c.latency_us = 1.25;
  c.dp_overlap = 0;
  c.all_reduce_overlap = 0.25;
  c.disk_overlap = 0.8;
  c.tier_stream_s_per_gb = 0.375;
  c.weight_gbps = 4.25;
  c.llama_elementwise_gbps = {{3e6, 4.5}, {5e7, 3.25}};
  c.llama_layer_overhead_us = 410;
  c.sendrecv_seconds = {{1024, 15e-6}, {1 << 20, 1e-4}};
  c.inter_ring_seconds = {{1024, 40e-6}, {1 << 20, 2e-3}};
  const Cluster back = parse_cluster(cluster_to_toml(c, "measured here\nby test"), "back");
  EXPECT_EQ(back.name, "here");
  EXPECT_EQ(back.devices_per_node, 2);
  EXPECT_EQ(back.cores_per_node, 2);
  EXPECT_DOUBLE_EQ(back.layer_overhead_us, 250);
  EXPECT_DOUBLE_EQ(back.layer_overhead_tp_us, 400);
  EXPECT_DOUBLE_EQ(back.elementwise_gbps.at(3e6), 6.5);
  EXPECT_DOUBLE_EQ(back.sync_us, 40);
  EXPECT_DOUBLE_EQ(back.sync_fraction, 0.125);
  EXPECT_DOUBLE_EQ(back.memory_per_device_gb, 11.5);
  EXPECT_DOUBLE_EQ(back.matmul_tflops.at("fp32").at(256), 0.04);
  EXPECT_DOUBLE_EQ(back.latency_us, 1.25);
  EXPECT_DOUBLE_EQ(back.dp_overlap, 0);
  EXPECT_DOUBLE_EQ(back.all_reduce_overlap, 0.25);
  EXPECT_DOUBLE_EQ(back.disk_overlap, 0.8);
  EXPECT_DOUBLE_EQ(back.tier_stream_s_per_gb, 0.375);
  // Not measured (no disk): not written, and read back as not measured.
  c.tier_stream_s_per_gb = -1;
  const std::string unmeasured = cluster_to_toml(c, "");
  EXPECT_EQ(unmeasured.find("tier_stream_s_per_gb"), std::string::npos);
  EXPECT_LT(parse_cluster(unmeasured, "back").tier_stream_s_per_gb, 0);
  EXPECT_DOUBLE_EQ(back.weight_gbps, 4.25);
  EXPECT_EQ(back.llama_elementwise_gbps, c.llama_elementwise_gbps);
  EXPECT_DOUBLE_EQ(back.llama_layer_overhead_us, 410);
  EXPECT_DOUBLE_EQ(back.sendrecv_seconds.at(1 << 20), 1e-4);
  EXPECT_DOUBLE_EQ(back.sendrecv_seconds.at(1024), 15e-6);
  EXPECT_EQ(back.inter_ring_seconds.size(), 2u);
  EXPECT_DOUBLE_EQ(back.inter_ring_seconds.at(1 << 20), 2e-3);
}

TEST(ClusterFile, elementwise_rate_by_activation_bytes) {
  Cluster c;
  c.memory_gbps = 100;
  EXPECT_DOUBLE_EQ(c.elementwise_bytes_per_s(1e6), 100e9);  // no table: memory_gbps
  c.elementwise_gbps = {{1e6, 8.0}, {1e8, 2.0}};
  EXPECT_DOUBLE_EQ(c.elementwise_bytes_per_s(1e3), 8e9);
  EXPECT_NEAR(c.elementwise_bytes_per_s(1e7), 4e9, 1);  // halfway in log: sqrt(8 * 2)
  EXPECT_DOUBLE_EQ(c.elementwise_bytes_per_s(1e9), 2e9);
}

TEST(ClusterFile, measured_rates_interpolate_in_log_size) {
  Cluster c;
  c.matmul_tflops["fp32"] = {{64, 0.01}, {256, 0.04}};
  EXPECT_DOUBLE_EQ(c.matmul_flops("fp32", 32), 0.01e12);    // clamped below
  EXPECT_DOUBLE_EQ(c.matmul_flops("fp32", 1024), 0.04e12);  // clamped above
  EXPECT_NEAR(c.matmul_flops("fp32", 128), 0.02e12, 1e3);   // halfway in log: sqrt(0.01*0.04)
}

}  // namespace
}  // namespace trident::plan
