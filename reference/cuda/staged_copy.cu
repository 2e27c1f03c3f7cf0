#include "reference/cuda/staged_copy.cuh"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace ts::cuda {
namespace {

constexpr size_t kChunk = size_t(64) << 20;

// The staging buffers and stream, made on first use and kept for the process (pinning
// 128 MB costs tens of ms: once, not per copy). One copy at a time uses them.
struct Staging {
  unsigned char* host[2] = {nullptr, nullptr};
  cudaEvent_t done[2] = {nullptr, nullptr};
  cudaStream_t stream = nullptr;
  cudaError_t err = cudaSuccess;
  std::mutex m;
  Staging() {
    for (int b = 0; b < 2 && err == cudaSuccess; ++b) {
      err = cudaMallocHost(reinterpret_cast<void**>(&host[b]), kChunk);
      if (err == cudaSuccess) err = cudaEventCreateWithFlags(&done[b], cudaEventDisableTiming);
    }
    if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  }
};

Staging& staging() {
  static Staging* s = new Staging();  // never destroyed: the CUDA runtime may be gone at exit
  return *s;
}

// dst[0, n) = bytes [off, off + n) of the pieces, on several threads: one core copies pageable
// memory at about 10 GB/s. first: the first piece that reaches past off.
void gather(unsigned char* dst, const HostPiece* pieces, size_t n_pieces, size_t first, size_t off, size_t n) {
  const auto part_of = [&](size_t lo_all, size_t hi_all) {
    for (size_t q = first; q < n_pieces && pieces[q].offset < hi_all; ++q) {
      const size_t lo = std::max(lo_all, pieces[q].offset), hi = std::min(hi_all, pieces[q].offset + pieces[q].bytes);
      if (lo < hi)
        std::memcpy(dst + (lo - off), static_cast<const unsigned char*>(pieces[q].src) + (lo - pieces[q].offset),
                    hi - lo);
    }
  };
  const size_t threads = std::min<size_t>(8, std::max(1u, std::thread::hardware_concurrency() / 2));
  const size_t part = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads && t * part < n; ++t)
    pool.emplace_back([=] { part_of(off + t * part, off + std::min(n, (t + 1) * part)); });
  part_of(off, off + std::min(part, n));
  for (auto& t : pool) t.join();
}

void parallel_memcpy(unsigned char* dst, const unsigned char* src, size_t n) {
  const HostPiece whole{0, n, src};
  gather(dst, &whole, 1, 0, 0, n);
}

}  // namespace

cudaError_t copy_to_device(void* dst, const void* src, size_t bytes) {
  const HostPiece whole{0, bytes, src};
  return copy_pieces_to_device(dst, &whole, 1, bytes);
}

cudaError_t copy_pieces_to_device(void* dst, const HostPiece* pieces, size_t n_pieces, size_t total) {
  auto* d = static_cast<unsigned char*>(dst);
  Staging& s = staging();
  if (total < kChunk || s.err != cudaSuccess) {
    for (size_t i = 0; i < n_pieces; ++i)
      if (const cudaError_t e = cudaMemcpy(d + pieces[i].offset, pieces[i].src, pieces[i].bytes, cudaMemcpyHostToDevice);
          e != cudaSuccess)
        return e;
    return cudaSuccess;
  }
  std::lock_guard<std::mutex> g(s.m);
  cudaError_t e = cudaSuccess;
  size_t p = 0;  // the first piece that reaches past this chunk's start
  for (size_t off = 0, i = 0; off < total && e == cudaSuccess; off += kChunk, ++i) {
    const int b = static_cast<int>(i % 2);
    const size_t n = std::min(kChunk, total - off);
    if (i >= 2 && (e = cudaEventSynchronize(s.done[b])) != cudaSuccess) break;  // its last chunk has crossed
    while (p < n_pieces && pieces[p].offset + pieces[p].bytes <= off) ++p;
    gather(s.host[b], pieces, n_pieces, p, off, n);
    if ((e = cudaMemcpyAsync(d + off, s.host[b], n, cudaMemcpyHostToDevice, s.stream)) != cudaSuccess) break;
    e = cudaEventRecord(s.done[b], s.stream);
  }
  const cudaError_t sync = cudaStreamSynchronize(s.stream);
  return e != cudaSuccess ? e : sync;
}

cudaError_t copy_input_to_device(void* dst, const StoredInput& in) {
  std::vector<HostPiece> pieces(static_cast<size_t>(in.n_pieces));
  const size_t es = stored_input_bytes(in.type);
  size_t total = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const StoredPiece& p = in.pieces[i];
    pieces[i] = {static_cast<size_t>(p.first) * es, static_cast<size_t>(p.count) * es, p.bytes};
    total = pieces[i].offset + pieces[i].bytes;
  }
  return copy_pieces_to_device(dst, pieces.data(), pieces.size(), total);
}

cudaError_t copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes < kChunk) return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
  Staging& s = staging();
  if (s.err != cudaSuccess) return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
  std::lock_guard<std::mutex> g(s.m);
  auto* h = static_cast<unsigned char*>(dst);
  const auto* d = static_cast<const unsigned char*>(src);
  // The device's pending work (the kernel that wrote src) first: the staging stream does not wait
  // for the legacy default stream.
  cudaError_t e = cudaDeviceSynchronize();
  const size_t chunks = (bytes + kChunk - 1) / kChunk;
  auto start = [&](size_t i) {
    const int b = static_cast<int>(i % 2);
    const size_t off = i * kChunk, n = std::min(kChunk, bytes - off);
    cudaError_t r = cudaMemcpyAsync(s.host[b], d + off, n, cudaMemcpyDeviceToHost, s.stream);
    return r == cudaSuccess ? cudaEventRecord(s.done[b], s.stream) : r;
  };
  if (e == cudaSuccess) e = start(0);
  for (size_t i = 0; i < chunks && e == cudaSuccess; ++i) {
    const int b = static_cast<int>(i % 2);
    if (i + 1 < chunks && (e = start(i + 1)) != cudaSuccess) break;  // the next chunk crosses meanwhile
    if ((e = cudaEventSynchronize(s.done[b])) != cudaSuccess) break;
    const size_t off = i * kChunk;
    parallel_memcpy(h + off, s.host[b], std::min(kChunk, bytes - off));
  }
  const cudaError_t sync = cudaStreamSynchronize(s.stream);
  return e != cudaSuccess ? e : sync;
}

}  // namespace ts::cuda
