// Device tensors through a host communicator: copy out, communicate, copy back.
#include "parallel/host_staged_communicator.h"

#include <ATen/ATen.h>  // at::empty, Tensor::to

namespace trident {

namespace {

bool on_device(const at::Tensor& t) { return t.defined() && !t.device().is_cpu(); }

/// A host copy of `t` (or `t` itself when it is on the host already).
at::Tensor to_host(const at::Tensor& t) { return on_device(t) ? t.cpu() : t; }

/// The host operation's Work; on completion, `host` is copied back into `device`.
class StagedWork : public Work {
 public:
  StagedWork(WorkHandle inner, at::Tensor device, at::Tensor host)
      : inner_(std::move(inner)), device_(std::move(device)), host_(std::move(host)) {}

  void wait() override {
    inner_->wait();
    copy_back();
  }
  bool test() override {
    if (!inner_->test()) return false;
    copy_back();
    return true;
  }

 private:
  void copy_back() {
    if (!device_.defined()) return;
    device_.copy_(host_);
    device_ = at::Tensor();
    host_ = at::Tensor();
  }

  WorkHandle inner_;
  at::Tensor device_, host_;  // undefined once copied (or when nothing comes back)
};

WorkHandle staged(WorkHandle inner, const at::Tensor& device, const at::Tensor& host) {
  if (!on_device(device)) return inner;
  return std::make_shared<StagedWork>(std::move(inner), device, host);
}

}  // namespace

HostStagedCommunicator::HostStagedCommunicator(std::unique_ptr<Communicator> host)
    : host_(std::move(host)) {
  count_also(host_.get());
}

WorkHandle HostStagedCommunicator::all_reduce(at::Tensor tensor, ReduceOp op) {
  at::Tensor host = to_host(tensor);
  return staged(host_->all_reduce(host, op), tensor, host);
}

WorkHandle HostStagedCommunicator::reduce_scatter(at::Tensor output, at::Tensor input,
                                                  ReduceOp op) {
  at::Tensor out =
      on_device(output) ? at::empty(output.sizes(), output.options().device(at::kCPU)) : output;
  return staged(host_->reduce_scatter(out, to_host(input), op), output, out);
}

WorkHandle HostStagedCommunicator::all_gather(at::Tensor output, at::Tensor input) {
  at::Tensor out =
      on_device(output) ? at::empty(output.sizes(), output.options().device(at::kCPU)) : output;
  return staged(host_->all_gather(out, to_host(input)), output, out);
}

WorkHandle HostStagedCommunicator::broadcast(at::Tensor tensor, int root) {
  at::Tensor host = to_host(tensor);
  return staged(host_->broadcast(host, root), tensor, host);
}

WorkHandle HostStagedCommunicator::send(at::Tensor tensor, int dst, int tag) {
  return host_->send(to_host(tensor), dst, tag);  // the host backend keeps the copy alive
}

WorkHandle HostStagedCommunicator::recv(at::Tensor tensor, int src, int tag) {
  at::Tensor host =
      on_device(tensor) ? at::empty(tensor.sizes(), tensor.options().device(at::kCPU)) : tensor;
  return staged(host_->recv(host, src, tag), tensor, host);
}

WorkHandle HostStagedCommunicator::all_to_all(at::Tensor output, at::Tensor input,
                                              const std::vector<int64_t>& send_rows,
                                              const std::vector<int64_t>& recv_rows) {
  at::Tensor out =
      on_device(output) ? at::empty(output.sizes(), output.options().device(at::kCPU)) : output;
  return staged(host_->all_to_all(out, to_host(input), send_rows, recv_rows), output, out);
}

std::string HostStagedCommunicator::broadcast_bytes(std::string bytes, int root) {
  return host_->broadcast_bytes(std::move(bytes), root);
}

std::vector<std::string> HostStagedCommunicator::gather_bytes(const std::string& bytes, int root) {
  return host_->gather_bytes(bytes, root);
}

std::vector<std::string> HostStagedCommunicator::all_gather_bytes(const std::string& bytes) {
  return host_->all_gather_bytes(bytes);
}

std::unique_ptr<Communicator> HostStagedCommunicator::split(int color, int key,
                                                            const std::string& name,
                                                            double timeout_s) {
  std::unique_ptr<Communicator> sub = host_->split(color, key, name, timeout_s);
  if (!sub) return nullptr;
  return std::make_unique<HostStagedCommunicator>(std::move(sub));
}

}  // namespace trident
