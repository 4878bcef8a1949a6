// Human-readable sizes: "8GiB", "512MB", "1.5e9" <-> bytes. Used by every
// command-line option that takes memory (budgets, caps, activation sizes).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace pw {

// Parses a byte count: a non-negative number with an optional unit
// B, KB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (powers of 1024),
// case-insensitive, optional space. Errors say what was expected.
Result<double> ParseByteSize(std::string_view text);

// "1.50 GiB", "512 B": three significant digits, binary units.
std::string FormatBytes(double bytes);

}  // namespace pw
