// The heap of a process that generates rank programs of millions of tasks (tandem plan, the
// search and its forked children, the simulation's child): keep freed memory for the next program
// (instead of returning it to the OS and faulting it in again), and back the heap with transparent
// huge pages where the kernel offers them on request (THP "madvise" mode).
//
// Why: generating a program is first-touch bound. The 530B search's best point (tandem sim, 4.2 M
// tasks in 21 class programs): 865 k page faults, 16.7 s of CPU; with the heap on 2 MiB pages
// 17 k faults, 8.3 s (docs/sim.md "Speed of program generation"). glibc offers the same through
// the environment only (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, read at start); this does it from
// inside the process: it takes a large block from the top of the heap, advises it
// (madvise MADV_HUGEPAGE) and gives it back to the heap, which keeps it (the trim threshold is
// above it) and carves the next allocations from it. Untouched, the block costs address space
// only. A performance hint: where the kernel refuses it, nothing changes but the speed.
#pragma once

#include <cstddef>

namespace tandem {

// Address space advised for huge pages: the 530B search's largest process holds about 1.5 GB.
inline constexpr size_t kGenerationHeapHugeBytes = size_t(1536) << 20;

// Sets the heap's thresholds (no mmap under 1 GiB, no trim under 2 GiB) and advises
// `huge_bytes` at its top for huge pages. Call it once a process (or a forked child) is about to
// generate programs; calling it again advises a new block if the last one was used up.
void keep_generation_heap(size_t huge_bytes = kGenerationHeapHugeBytes);

// For a forked child: returns to the kernel the free memory it inherited (its pages are shared
// with the parent, and writing a new program into them would copy each one: a copy-on-write
// fault that costs more than a fresh page), then keep_generation_heap().
void fresh_generation_heap(size_t huge_bytes = kGenerationHeapHugeBytes);

}  // namespace tandem
