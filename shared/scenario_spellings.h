// The user spellings of every enumerated choice of a scenario (as written in the literature), in
// the order error messages list them. to_string (shared/scenario.cc) and the loader's parsing of
// the text (shared/scenario_resolver.cc) both read these tables, so a spelling lives in one place.
#pragma once

#include <cstddef>

#include "shared/scenario.h"

namespace tandem {

template <class E>
struct Spelling {
  E value;
  const char* name;
};

inline constexpr Spelling<DType> kDTypeSpellings[] = {
    {DType::kFp32, "fp32"},   {DType::kFp16, "fp16"},  {DType::kBf16, "bf16"},         {DType::kFp8, "fp8"},
    {DType::kInt32, "int32"}, {DType::kUint8, "uint8"}, {DType::kFp8E4M3, "fp8_e4m3"}, {DType::kFp8E5M2, "fp8_e5m2"}};
// strategy.dtype takes the first four; int32 and uint8 are the element types of tokens and masks,
// fp8_e4m3 and fp8_e5m2 those of the GEMMs of an fp8 strategy.
inline constexpr size_t kStrategyDTypeCount = 4;
inline constexpr Spelling<GradDType> kGradDTypeSpellings[] = {
    {GradDType::kParam, "param"}, {GradDType::kFp32, "fp32"}, {GradDType::kFp32IfBf16, "fp32-if-bf16"}};
inline constexpr Spelling<OptimizerStateDType> kOptimizerStateDTypeSpellings[] = {
    {OptimizerStateDType::kFp32, "fp32"}, {OptimizerStateDType::kParam, "param"}};
inline constexpr Spelling<MasterParams> kMasterParamsSpellings[] = {
    {MasterParams::kFp32, "fp32"}, {MasterParams::kRemainder, "remainder"}, {MasterParams::kNone, "none"}};
inline constexpr Spelling<Norm> kNormSpellings[] = {{Norm::kLayerNorm, "layernorm"}, {Norm::kRmsNorm, "rmsnorm"}};
inline constexpr Spelling<Activation> kActivationSpellings[] = {{Activation::kGelu, "gelu"},
                                                                {Activation::kSwiglu, "swiglu"}};
inline constexpr Spelling<TpMode> kTpModeSpellings[] = {
    {TpMode::k1d, "1d"}, {TpMode::k2d, "2d"}, {TpMode::k2p5d, "2.5d"}, {TpMode::k3d, "3d"}};
inline constexpr Spelling<PpSchedule> kPpScheduleSpellings[] = {
    {PpSchedule::kGpipe, "gpipe"}, {PpSchedule::k1f1b, "1f1b"}, {PpSchedule::kInterleaved, "interleaved"}};
inline constexpr Spelling<SpMode> kSpModeSpellings[] = {
    {SpMode::kNone, "none"}, {SpMode::kMegatron, "megatron"}, {SpMode::kRing, "ring"}, {SpMode::kUlysses, "ulysses"},
    {SpMode::kRingAttention, "ring_attention"}};
inline constexpr Spelling<Recompute> kRecomputeSpellings[] = {
    {Recompute::kNone, "none"}, {Recompute::kSelective, "selective"}, {Recompute::kFull, "full"}};
inline constexpr Spelling<Offload> kOffloadSpellings[] = {{Offload::kNone, "none"},
                                                          {Offload::kOptimizer, "optimizer"},
                                                          {Offload::kParams, "params"},
                                                          {Offload::kAuto, "auto"}};
inline constexpr Spelling<Topology> kTopologySpellings[] = {{Topology::kFatTree, "fat-tree"},
                                                            {Topology::kRailOptimized, "rail-optimized"}};
inline constexpr Spelling<CollectiveAlgorithm> kCollectiveAlgorithmSpellings[] = {
    {CollectiveAlgorithm::kAuto, "auto"}, {CollectiveAlgorithm::kRing, "ring"}, {CollectiveAlgorithm::kTree, "tree"}};
inline constexpr Spelling<CpuVendor> kCpuVendorSpellings[] = {
    {CpuVendor::kIntel, "intel"}, {CpuVendor::kAmd, "amd"}, {CpuVendor::kArm, "arm"}};

}  // namespace tandem
