// Tar headers are 512-byte blocks: name[100] mode[8] uid[8] gid[8] size[12] mtime[12] chksum[8]
// typeflag[1] linkname[100] magic[6] version[2] uname[32] gname[32] devmajor[8] devminor[8]
// prefix[155]; data follows in whole blocks; two zero blocks (or the end of data) end the archive.
#include "trace/tar.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace powertrain::trace {
namespace {

constexpr std::size_t kBlock = 512;

std::string_view field(std::string_view header, std::size_t offset, std::size_t length) {
  std::string_view text = header.substr(offset, length);
  return text.substr(0, std::min(text.find('\0'), text.size()));
}

// Octal (NUL/space padded) or, when the high bit of the first byte is set, GNU base-256.
bool parse_number(std::string_view raw, std::uint64_t* value) {
  std::uint64_t result = 0;
  if (!raw.empty() && (static_cast<unsigned char>(raw[0]) & 0x80) != 0) {
    for (std::size_t i = 0; i < raw.size(); ++i) {
      const unsigned char byte =
          i == 0 ? static_cast<unsigned char>(raw[0]) & 0x7f : static_cast<unsigned char>(raw[i]);
      if (result > (UINT64_MAX >> 8)) return false;
      result = result << 8 | byte;
    }
    *value = result;
    return true;
  }
  std::size_t i = 0;
  while (i < raw.size() && raw[i] == ' ') ++i;
  bool any = false;
  for (; i < raw.size() && raw[i] >= '0' && raw[i] <= '7'; ++i) {
    if (result > (UINT64_MAX >> 3)) return false;
    result = result * 8 + static_cast<std::uint64_t>(raw[i] - '0');
    any = true;
  }
  for (; i < raw.size(); ++i) {
    if (raw[i] != ' ' && raw[i] != '\0') return false;
  }
  *value = result;
  return any;
}

bool checksum_ok(std::string_view header) {
  std::uint64_t stored = 0;
  if (!parse_number(header.substr(148, 8), &stored)) return false;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(header[i]);
  }
  return sum == stored;
}

bool is_zero_block(std::string_view block) {
  return std::all_of(block.begin(), block.end(), [](char c) { return c == 0; });
}

// The "path" record of a pax extended header ("<length> path=<value>\n" records), or empty.
std::string pax_path(std::string_view records) {
  std::size_t pos = 0;
  while (pos < records.size()) {
    const std::size_t space = records.find(' ', pos);
    if (space == std::string_view::npos) break;
    std::size_t length = 0;
    for (std::size_t i = pos; i < space; ++i) {
      if (records[i] < '0' || records[i] > '9') return {};
      length = length * 10 + static_cast<std::size_t>(records[i] - '0');
      if (length > records.size()) return {};
    }
    if (length <= space - pos || pos + length > records.size()) return {};
    std::string_view record = records.substr(space + 1, pos + length - space - 1);
    if (!record.empty() && record.back() == '\n') record.remove_suffix(1);
    if (record.substr(0, 5) == "path=") return std::string(record.substr(5));
    pos += length;
  }
  return {};
}

}  // namespace

bool is_tar(std::string_view bytes) {
  if (bytes.size() < kBlock) return false;
  const std::string_view header = bytes.substr(0, kBlock);
  return header.substr(257, 5) == "ustar" && checksum_ok(header);
}

core::Result<std::vector<TarMember>> list_tar_members(std::string_view archive,
                                                      const std::string& source,
                                                      std::size_t max_members) {
  std::vector<TarMember> members;
  std::string long_name;  // from a preceding GNU 'L' or pax 'x' header
  std::size_t offset = 0;
  while (offset + kBlock <= archive.size()) {
    const std::string_view header = archive.substr(offset, kBlock);
    if (is_zero_block(header)) break;  // end-of-archive marker
    if (!checksum_ok(header)) {
      return core::Error{
          fmt::format("{}: tar header at byte {}: bad checksum (not a tar archive, or corrupt)",
                      source, offset)};
    }
    std::uint64_t size = 0;
    if (!parse_number(header.substr(124, 12), &size)) {
      return core::Error{fmt::format("{}: tar header at byte {}: bad size field", source, offset)};
    }
    const std::size_t data_offset = offset + kBlock;
    if (size > archive.size() - data_offset) {
      return core::Error{
          fmt::format("{}: truncated tar archive: member at byte {} needs {} bytes, only {} remain",
                      source, offset, size, archive.size() - data_offset)};
    }
    const char type = header[156];
    const std::string_view data = archive.substr(data_offset, size);
    if (type == 'L') {
      long_name = std::string(data.substr(0, std::min(data.find('\0'), data.size())));
    } else if (type == 'x') {
      long_name = pax_path(data);
    } else {
      if (type == '0' || type == '\0' || type == '7') {
        if (members.size() >= max_members) {
          return core::Error{
              fmt::format("{}: more than {} members in the tar archive", source, max_members)};
        }
        std::string name = long_name;
        if (name.empty()) {
          // Only POSIX ustar ("ustar\0") has the prefix field; GNU ("ustar  ") stores times there.
          if (header.substr(257, 6) == std::string_view("ustar\0", 6)) {
            name = std::string(field(header, 345, 155));
          }
          if (!name.empty()) name += '/';
          name += field(header, 0, 100);
        }
        members.push_back(TarMember{std::move(name), data_offset, static_cast<std::size_t>(size)});
      }
      long_name.clear();
    }
    const std::uint64_t padded = (size + kBlock - 1) / kBlock * kBlock;
    offset = data_offset + static_cast<std::size_t>(padded);
  }
  return members;
}

}  // namespace powertrain::trace
