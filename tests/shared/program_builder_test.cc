// The program builder's hazard tracking (shared/program_builder.h) with views: an access to a view
// meets the accesses to the whole buffer and to the views whose bytes overlap it; an access to the
// whole buffer meets every access to it and to its views. Only cross-stream edges are stored
// (tasks of one stream are ordered by the stream), so each test puts the accesses it cares about
// on distinct streams and checks Task::deps exactly.
#include <gtest/gtest.h>

#include <vector>

#include "shared/program_builder.h"

namespace tandem {
namespace {

// A 1024-byte buffer with two disjoint halves lo [0, 512), hi [512, 1024) and a middle view
// [256, 768) that overlaps both.
struct Fixture {
  ProgramBuilder b{0};
  BufferId whole = b.buffer("x", 1024, DType::kFp32, BufferRole::kActivation);
  BufferId lo = b.view(whole, 0, 512, DType::kFp32, "x.lo");
  BufferId hi = b.view(whole, 512, 512, DType::kFp32, "x.hi");
  BufferId mid = b.view(whole, 256, 512, DType::kFp32, "x.mid");
  TaskId alloc = b.alloc(whole, Stream::kCompute);

  // A kernel reading `in` and writing `out` on stream s.
  TaskId touch(Stream s, std::vector<BufferId> in, std::vector<BufferId> out) {
    Compute c;
    c.kernel = Kernel::kGelu;
    c.inputs = std::move(in);
    c.outputs = std::move(out);
    return b.compute(std::move(c), {}, s);
  }
  TaskId write(BufferId x, Stream s) { return touch(s, {}, {x}); }
  TaskId read(BufferId x, Stream s) { return touch(s, {x}, {}); }
};

using Deps = std::vector<TaskId>;

Deps deps_of(const Program& p, TaskId t) { return p.tasks.at(t).deps; }

TEST(ProgramBuilderViews, DisjointViewsOnTwoStreamsDoNotWaitForEachOther) {
  Fixture f;
  // Both halves are written right after the Alloc (kCompute), each on its own stream: each waits
  // for the Alloc of the buffer it lives in, and for nothing else (the halves share no byte).
  const TaskId w_lo = f.write(f.lo, Stream::kTpRecv);
  const TaskId w_hi = f.write(f.hi, Stream::kTpSend);
  // A reader of lo on a third stream waits for lo's writer, not for hi's (and for the Alloc: the
  // builder keeps the latest conflicting task of every other stream, without transitive reduction).
  const TaskId r_lo = f.read(f.lo, Stream::kComm);
  // And a writer of hi on a fourth stream waits for hi's writer only (lo's writer and reader
  // touch other bytes).
  const TaskId w_hi2 = f.write(f.hi, Stream::kGradComm);
  const Program p = std::move(f.b).finish();
  EXPECT_EQ(deps_of(p, w_lo), Deps{f.alloc});
  EXPECT_EQ(deps_of(p, w_hi), Deps{f.alloc});  // not w_lo: a root-level tracker would add it
  EXPECT_EQ(deps_of(p, r_lo), (Deps{f.alloc, w_lo}));   // not w_hi
  EXPECT_EQ(deps_of(p, w_hi2), (Deps{f.alloc, w_hi}));  // not w_lo, not r_lo
}

TEST(ProgramBuilderViews, OverlappingViewsDo) {
  Fixture f;
  // mid [256, 768) overlaps lo [0, 512) on [256, 512) and hi [512, 1024) on [512, 768).
  const TaskId w_lo = f.write(f.lo, Stream::kTpRecv);
  const TaskId w_mid = f.write(f.mid, Stream::kTpSend);  // write after write on shared bytes
  const TaskId r_hi = f.read(f.hi, Stream::kComm);        // read after mid's write on [512, 768)
  const TaskId w_lo2 = f.write(f.lo, Stream::kGradComm);  // write after mid's write (and lo's)
  const Program p = std::move(f.b).finish();
  // w_mid: the Alloc (stream kCompute) and lo's writer (kTpRecv), one per stream.
  EXPECT_EQ(deps_of(p, w_mid), (Deps{f.alloc, w_lo}));
  // r_hi: hi was never written through hi or the whole buffer since the Alloc, but mid was.
  EXPECT_EQ(deps_of(p, r_hi), (Deps{f.alloc, w_mid}));
  // w_lo2: lo's writer (kTpRecv) and mid's writer (kTpSend); not r_hi, which read hi's bytes only.
  EXPECT_EQ(deps_of(p, w_lo2), (Deps{f.alloc, w_lo, w_mid}));
}

TEST(ProgramBuilderViews, AWholeBufferAccessAfterViewAccessesWaitsForThemAll) {
  Fixture f;
  const TaskId w_lo = f.write(f.lo, Stream::kTpRecv);
  const TaskId r_hi = f.read(f.hi, Stream::kTpSend);
  // A reader of the whole buffer waits for every writer of any part (lo's), not for readers.
  const TaskId r_all = f.read(f.whole, Stream::kComm);
  // Freeing the whole buffer (a write) waits for every reader and writer of any part: lo's
  // writer, hi's reader and the whole-buffer reader, one per stream.
  const TaskId fr = f.b.free(f.whole, Stream::kGradComm);
  const Program p = std::move(f.b).finish();
  EXPECT_EQ(deps_of(p, r_all), (Deps{f.alloc, w_lo}));
  EXPECT_EQ(deps_of(p, fr), (Deps{f.alloc, w_lo, r_hi, r_all}));
}

TEST(ProgramBuilderViews, AViewAccessAfterAWholeBufferWriteWaitsForIt) {
  Fixture f;
  // The whole buffer written on kTpRecv, after its Alloc on kCompute.
  const TaskId w_all = f.write(f.whole, Stream::kTpRecv);
  // Each half, read on its own stream, waits for the whole-buffer write (and for the Alloc, the
  // latest write on kCompute: no transitive reduction).
  const TaskId r_lo = f.read(f.lo, Stream::kTpSend);
  const TaskId r_hi = f.read(f.hi, Stream::kComm);
  // A whole-buffer read on kGradComm, then a write to hi on kH2D: it waits for the readers of its
  // bytes (r_hi, the whole-buffer reader) and the last writer (w_all), not for r_lo.
  const TaskId r_all = f.read(f.whole, Stream::kGradComm);
  const TaskId w_hi = f.write(f.hi, Stream::kH2D);
  const Program p = std::move(f.b).finish();
  EXPECT_EQ(deps_of(p, w_all), Deps{f.alloc});
  EXPECT_EQ(deps_of(p, r_lo), (Deps{f.alloc, w_all}));
  EXPECT_EQ(deps_of(p, r_hi), (Deps{f.alloc, w_all}));
  EXPECT_EQ(deps_of(p, r_all), (Deps{f.alloc, w_all}));
  EXPECT_EQ(deps_of(p, w_hi), (Deps{f.alloc, w_all, r_hi, r_all}));
}

TEST(ProgramBuilderViews, AViewOfAViewIsPlacedInTheRoot) {
  Fixture f;
  // hi.b1 is bytes [256, 512) of hi, i.e. [768, 1024) of the buffer: it overlaps hi and not lo
  // nor mid [256, 768).
  const BufferId hi_b1 = f.b.view(f.hi, 256, 256, DType::kFp32, "x.hi.b1");
  const TaskId w_lo = f.write(f.lo, Stream::kTpRecv);
  const TaskId w_mid = f.write(f.mid, Stream::kTpSend);
  const TaskId w_b1 = f.write(hi_b1, Stream::kComm);
  const TaskId r_hi = f.read(f.hi, Stream::kGradComm);
  const Program p = std::move(f.b).finish();
  EXPECT_EQ(p.buffers[hi_b1].view_of, f.hi);
  EXPECT_EQ(p.buffers[hi_b1].view_offset_bytes, 256);
  EXPECT_EQ(deps_of(p, w_b1), Deps{f.alloc});  // lo and mid end at or before byte 768
  (void)w_lo;
  // hi [512, 1024) meets mid's write on [512, 768) and hi.b1's on [768, 1024).
  EXPECT_EQ(deps_of(p, r_hi), (Deps{f.alloc, w_mid, w_b1}));
}

}  // namespace
}  // namespace tandem
