// The Driver seam's contract (exec/driver.h): the runtime names each call's task (id and stream)
// and the dtype of each transfer, and both drivers check a task's operand counts against one
// table (shared/kernel_signature.h).
#include <gtest/gtest.h>

#include <map>

#include "exec/driver.h"
#include "exec/host_driver.h"
#include "exec/runtime.h"
#include "shared/error.h"
#include "shared/kernel_signature.h"

namespace tandem::exec {
namespace {

Schedule tiny(std::vector<std::string> sets) {
  return Schedule(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
}

// The host driver, recording what the runtime tells it and checking it against the program.
class RecordingDriver : public Driver {
 public:
  explicit RecordingDriver(const Program& program) : program_(program), host_(make_host_driver(nullptr)) {}
  const char* name() const override { return host_->name(); }
  std::string machine() const override { return host_->machine(); }
  void* allocate(int64_t bytes, Placement placement) override {
    void* p = host_->allocate(bytes, placement);
    live_[static_cast<char*>(p)] = bytes;
    return p;
  }
  void release(void* p, int64_t bytes, Placement placement) override {
    live_.erase(static_cast<char*>(p));
    host_->release(p, bytes, placement);
  }
  void write(void* dst, DType dtype, Placement placement, const float* src, int64_t count) override {
    expect_inside(dst, count * dtype_bytes(dtype));
    ++writes;
    host_->write(dst, dtype, placement, src, count);
  }
  void read(float* dst, const void* src, DType dtype, Placement placement, int64_t count) override {
    expect_inside(src, count * dtype_bytes(dtype));
    ++reads;
    host_->read(dst, src, dtype, placement, count);
  }
  void begin_step() override { ++steps_begun; }
  void end_step(std::vector<TaskTimes>& times) override {
    EXPECT_EQ(times.size(), program_.tasks.size());
    ++steps_ended;
  }
  Pending compute(const TaskRef& task, const Compute& c, const std::vector<void*>& in, const std::vector<void*>& out,
                  const StepContext& ctx) override {
    const Compute& mine = std::get<Compute>(check(task).op);
    EXPECT_EQ(mine.kernel, c.kernel) << "task " << task.id;
    EXPECT_EQ(mine.inputs, c.inputs) << "task " << task.id;
    return host_->compute(task, c, in, out, ctx);
  }
  Pending collective(const TaskRef& task, const Collective& c, void* in, void* out) override {
    EXPECT_EQ(std::get<Collective>(check(task).op).group, c.group);
    return host_->collective(task, c, in, out);
  }
  Pending p2p(const TaskRef& task, const SendRecv& m, void* buffer) override {
    EXPECT_EQ(std::get<SendRecv>(check(task).op).peer, m.peer);
    return host_->p2p(task, m, buffer);
  }
  Pending copy(const TaskRef& task, const Copy& c, void* src, void* dst) override {
    EXPECT_EQ(std::get<Copy>(check(task).op).src, c.src);
    return host_->copy(task, c, src, dst);
  }
  bool test(Pending p) override { return host_->test(p); }

  std::map<TaskId, int> calls;  // by task id
  int writes = 0, reads = 0, steps_begun = 0, steps_ended = 0;

 private:
  const Task& check(const TaskRef& task) {
    const Task& t = program_.tasks.at(task.id);
    EXPECT_EQ(t.stream, task.stream) << "task " << task.id;
    ++calls[task.id];
    return t;
  }
  // [p, p + bytes) lies inside one live allocation.
  void expect_inside(const void* p, int64_t bytes) {
    const char* c = static_cast<const char*>(p);
    auto it = live_.upper_bound(const_cast<char*>(c));
    ASSERT_NE(it, live_.begin()) << "transfer outside any allocation";
    --it;
    EXPECT_LE(c + bytes, it->first + it->second) << "transfer past its allocation";
  }

  const Program& program_;
  std::unique_ptr<Driver> host_;
  std::map<char*, int64_t> live_;
};

TEST(DriverSeam, EveryTaskCallNamesItsTaskAndStreamOncePerStep) {
  // Optimizer offload: the one-rank program has H2D/D2H copies as well as compute tasks.
  Schedule s = tiny({"strategy.offload=optimizer"});
  const Program program = s.program(0);
  RecordingDriver driver(program);
  Runtime rt(s, 0, driver, ExecOptions());
  const int writes_at_start = driver.writes;
  EXPECT_GT(writes_at_start, 0);  // the parameters' initial values
  for (int step = 0; step < 2; ++step) rt.run_step(step);
  int driver_tasks = 0, copies = 0;
  for (const Task& t : program.tasks) {
    if (std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op)) continue;
    ++driver_tasks;
    if (std::holds_alternative<Copy>(t.op)) ++copies;
    EXPECT_EQ(driver.calls[t.id], 2) << "task " << t.id;
  }
  EXPECT_GT(copies, 0);
  EXPECT_EQ(int(driver.calls.size()), driver_tasks);
  EXPECT_EQ(driver.writes, writes_at_start);  // no writes during steps
  EXPECT_EQ(driver.reads, 2);                 // the loss, once a step
  EXPECT_EQ(driver.steps_begun, 2);
  EXPECT_EQ(driver.steps_ended, 2);
}

TEST(DriverSeam, HostDriverRefusesTransfersOfOtherDtypes) {
  auto d = make_host_driver(nullptr);
  void* p = d->allocate(8, Placement::kDevice);
  const float v[2] = {1, 2};
  try {
    d->write(p, DType::kBf16, Placement::kDevice, v, 2);
    FAIL() << "a bf16 write accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
  }
  float back[2] = {0, 0};
  d->write(p, DType::kFp32, Placement::kDevice, v, 2);
  d->read(back, p, DType::kFp32, Placement::kDevice, 2);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 2.0f);
  d->release(p, 8, Placement::kDevice);
}

TEST(KernelSignature, TooFewOperandsIsAnInternalErrorNamingTheKernel) {
  Compute c;
  c.kernel = Kernel::kLayerNormBwd;  // in {dy, x, gamma, mean, rstd} out {dx, dgamma, dbeta}
  c.inputs = {0, 1, 2, 3};
  c.outputs = {4, 5, 6};
  try {
    check_arity(c);
    FAIL() << "four inputs accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_NE(std::string(e.what()).find("layernorm-bwd needs 5 inputs and 3 outputs, the task has 4 and 3"),
              std::string::npos)
        << e.what();
  }
  c.inputs.push_back(7);
  EXPECT_NO_THROW(check_arity(c));
  // Attention's probabilities are optional: {qkv} -> {ctx, lse} is enough.
  c.kernel = Kernel::kAttention;
  c.inputs = {0};
  c.outputs = {1, 2};
  EXPECT_NO_THROW(check_arity(c));
}

}  // namespace
}  // namespace tandem::exec
