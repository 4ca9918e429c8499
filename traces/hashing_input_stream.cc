#include "traces/hashing_input_stream.h"

namespace tandem {

void HashingInputStream::settle() {
  if (pending_size_ > 0) hash_ = fnv1a64({static_cast<const char*>(pending_), size_t(pending_size_)}, hash_);
  pending_ = nullptr;
  pending_size_ = 0;
}

uint64_t HashingInputStream::digest() {
  settle();
  return hash_;
}

bool HashingInputStream::Next(const void** data, int* size) {
  settle();
  if (!in_->Next(data, size)) return false;
  pending_ = *data;
  pending_size_ = *size;
  return true;
}

void HashingInputStream::BackUp(int count) {
  // Only the part of the last buffer that was consumed counts; the rest comes again from Next.
  if (count > pending_size_) count = pending_size_;
  pending_size_ -= count;
  settle();
  in_->BackUp(count);
}

bool HashingInputStream::Skip(int count) {
  // Skipped bytes are part of the file: hash them too.
  while (count > 0) {
    const void* data;
    int size;
    if (!Next(&data, &size)) return false;
    if (size > count) {
      BackUp(size - count);
      return true;
    }
    count -= size;
  }
  return true;
}

}  // namespace tandem
