// gzip and tar bytes built in memory for the reader tests (zlib's deflate; ustar headers with
// valid checksums).
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <string>

namespace powertrain::test_support {

/// `data` as one gzip member.
inline std::string gzip_bytes(const std::string& data) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, data.size()) + 64, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

/// One ustar header plus data padded to 512-byte blocks; `type` '0' file, '5' directory, ...
inline std::string tar_entry(const std::string& name, const std::string& data, char type = '0') {
  std::string header(512, '\0');
  header.replace(0, name.size(), name);
  std::snprintf(&header[100], 8, "%07o", 0644);
  std::snprintf(&header[108], 8, "%07o", 0);
  std::snprintf(&header[116], 8, "%07o", 0);
  std::snprintf(&header[124], 12, "%011o", static_cast<unsigned>(data.size()));
  std::snprintf(&header[136], 12, "%011o", 0);
  header[156] = type;
  header.replace(257, 6, std::string("ustar\0", 6));
  header.replace(263, 2, "00");
  header.replace(148, 8, "        ");
  unsigned sum = 0;
  for (unsigned char c : header) sum += c;
  std::snprintf(&header[148], 8, "%06o", sum);
  header[155] = ' ';
  std::string padded = data;
  padded.resize((data.size() + 511) / 512 * 512, '\0');
  return header + padded;
}

}  // namespace powertrain::test_support
