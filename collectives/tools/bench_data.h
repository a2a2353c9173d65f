// bench_data.h — exact-sum test data for mirror-bench's check (-c 1): every rank's inputs are small
// integers, so sums, averages, minima, maxima and products are exact in every data type and the result
// is compared with zero tolerance against a serial reference.
#pragma once

#include <cstddef>

#include "mirror/coll/types.h"

namespace mirror::bench {

// Element i of `rank`'s input for a reduction `op` over `nranks` ranks (an integer value).
double input_value(coll::ReduceOp op, int rank, std::size_t i, int nranks);
// The reduction of input_value over all ranks, computed serially.
double expected_value(coll::ReduceOp op, std::size_t i, int nranks);

// Element access through the data type (16-bit floats converted with Mirror's own conversion).
void store_value(void* buf, std::size_t i, coll::DataType type, double v);
double load_value(const void* buf, std::size_t i, coll::DataType type);

}  // namespace mirror::bench
