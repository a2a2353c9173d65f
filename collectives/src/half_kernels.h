// half_kernels.h — the builds of mirror/coll/half.h's buffer conversions and 2-input sum (one file each: half_generic.cc,
// half_avx2.cc with -mavx2 -mf16c, half_avx512.cc with -mavx512f; the vector ones on x86 only), and the
// shape every build's loops share: a vector body over whole vectors, the tail by half_rules.h's forms.
#pragma once

#include "mirror/coll/half.h"

namespace mirror::coll::detail {

extern const HalfKernels kHalfGeneric;
#ifdef MIRROR_HALF_X86
extern const HalfKernels kHalfAvx2;
extern const HalfKernels kHalfAvx512;
#endif

}  // namespace mirror::coll::detail
