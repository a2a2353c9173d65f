// tb_write_scalars.cc — test driver: writes the scalars read from stdin into a TensorBoard event file with
// mirror::telemetry::TensorBoardWriter, so that tensorboard_read.py can read them back with TensorBoard.
// Usage: tb_write_scalars DIR START_AFTER_STEP < lines "TAG STEP FLOAT32_BITS_HEX WALL_TIME_REPR"
// Prints "path PATH" and "written N kept of M" on stdout. Values travel as their bits, so nothing rounds.
#include <bit>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>

#include "mirror/telemetry/tensorboard_writer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: tb_write_scalars DIR START_AFTER_STEP < scalars\n";
    return 2;
  }
  try {
    mirror::telemetry::TensorBoardOptions options;
    options.dir = argv[1];
    options.start_after_step = std::stoll(argv[2]);
    mirror::telemetry::TensorBoardWriter writer(options);
    std::string line;
    std::int64_t lines = 0;
    while (std::getline(std::cin, line)) {
      std::istringstream in(line);
      std::string tag, bits_hex, wall;
      std::int64_t step = 0;
      if (!(in >> tag >> step >> bits_hex >> wall)) continue;
      const auto bits = static_cast<std::uint32_t>(std::stoul(bits_hex, nullptr, 16));
      writer.add_scalar(tag, step, std::bit_cast<float>(bits), std::stod(wall));
      ++lines;
      if (lines % 7 == 0) writer.flush();
    }
    writer.flush();
    std::cout << "path " << writer.path() << "\nwritten " << writer.written() << " kept of " << lines << "\n";
  } catch (const std::exception& e) {
    std::cerr << "tb_write_scalars: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
