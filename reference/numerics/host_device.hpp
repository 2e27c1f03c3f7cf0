#pragma once
// TS_HD marks the numerics that the CUDA mirrors of the references call on the
// device too (reference/cuda/*.cu, compiled with -fmad=false): one definition
// for host and device, so both compute the same bits.
#if defined(__CUDACC__)
#define TS_HD __host__ __device__
#else
#define TS_HD
#endif
