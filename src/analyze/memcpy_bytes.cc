#include "analyze/memcpy_bytes.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <filesystem>

#include "trace/gzip.h"
#include "trace/tar.h"

namespace powertrain::analyze {
namespace {

core::Result<trace::PaddedBuffer> inflate_if_gzip(trace::PaddedBuffer buffer,
                                                  const std::string& source,
                                                  std::size_t max_bytes) {
  if (!trace::is_gzip(buffer.view())) return buffer;
  return trace::gunzip(buffer.view(), source, max_bytes);
}

core::Result<MemcpyBytes> walk(const trace::PaddedBuffer& buffer, const std::string& source) {
  simdjson::ondemand::parser parser(buffer.size() + 1);
  simdjson::padded_string_view view(buffer.data(), buffer.size(), buffer.capacity());
  simdjson::ondemand::document doc;
  if (auto error = parser.iterate(view).get(doc))
    return core::Error{fmt::format("{}: invalid JSON: {}", source, simdjson::error_message(error))};
  simdjson::ondemand::array events;
  simdjson::ondemand::json_type type;
  if (auto error = doc.type().get(type))
    return core::Error{fmt::format("{}: invalid JSON: {}", source, simdjson::error_message(error))};
  if (type == simdjson::ondemand::json_type::array) {
    if (doc.get_array().get(events))
      return core::Error{fmt::format("{}: the top-level array cannot be read", source)};
  } else if (doc["traceEvents"].get_array().get(events)) {
    return core::Error{fmt::format("{}: no traceEvents array", source)};
  }
  MemcpyBytes bytes;
  for (auto element : events) {
    simdjson::ondemand::object object;
    if (element.get_object().get(object)) continue;
    std::string_view cat;
    if (object["cat"].get_string().get(cat)) continue;
    if (cat != "gpu_memcpy" && cat != "Memcpy") continue;
    simdjson::ondemand::object args;
    if (object["args"].get_object().get(args)) continue;
    std::int64_t correlation = -1, size = -1;
    for (auto field : args) {
      std::string_view key;
      if (field.unescaped_key().get(key)) break;
      if (key != "correlation" && key != "bytes") continue;
      double number = 0.0;
      if (field.value().get_double().get(number)) continue;
      (key == "correlation" ? correlation : size) = static_cast<std::int64_t>(number);
    }
    if (correlation >= 0 && size >= 0) bytes[correlation] = size;
  }
  return bytes;
}

}  // namespace

core::Result<MemcpyBytes> parse_memcpy_bytes(std::string_view json, const std::string& source) {
  trace::PaddedBuffer buffer;
  buffer.set_size(json.size());
  std::copy(json.begin(), json.end(), buffer.data());
  return walk(buffer, source);
}

core::Result<MemcpyBytes> read_memcpy_bytes(const std::string& source, std::size_t max_bytes) {
  namespace fs = std::filesystem;
  std::string path = source;
  std::string member;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    // "archive:member": the archive is the longest prefix before a ':' that is a file.
    for (std::size_t colon = source.rfind(':'); colon != std::string::npos && colon > 0;
         colon = source.rfind(':', colon - 1)) {
      if (fs::is_regular_file(source.substr(0, colon), ec)) {
        path = source.substr(0, colon);
        member = source.substr(colon + 1);
        break;
      }
    }
  }
  auto raw = trace::read_file_padded(path, max_bytes);
  if (!raw) return raw.error();
  auto data = inflate_if_gzip(std::move(*raw), path, max_bytes);
  if (!data) return data.error();
  if (member.empty()) return walk(*data, source);
  auto members = trace::list_tar_members(data->view(), path);
  if (!members) return members.error();
  for (const trace::TarMember& m : *members) {
    if (m.name != member) continue;
    trace::PaddedBuffer part;
    part.set_size(m.size);
    std::copy_n(data->data() + m.offset, m.size, part.data());
    auto inflated = inflate_if_gzip(std::move(part), source, max_bytes);
    if (!inflated) return inflated.error();
    return walk(*inflated, source);
  }
  return core::Error{fmt::format("{}: no member '{}' in the archive", path, member)};
}

}  // namespace powertrain::analyze
