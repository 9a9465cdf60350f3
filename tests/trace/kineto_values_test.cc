// Token-level helpers of the Kineto reader: exact µs → ns, tolerant integers, escapes, dtypes and
// NCCL kernel names.
#include "trace/kineto_values.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace powertrain::trace::detail {
namespace {

std::int64_t ns(std::string_view token) {
  std::int64_t value = 0;
  EXPECT_TRUE(parse_us_as_ns(token, &value)) << token;
  return value;
}

TEST(KinetoValues, MicrosecondsBecomeExactNanoseconds) {
  EXPECT_EQ(ns("0"), 0);
  EXPECT_EQ(ns("12"), 12'000);
  EXPECT_EQ(ns("12.5"), 12'500);
  EXPECT_EQ(ns("1.0005"), 1'001);  // half a nanosecond rounds away from zero
  EXPECT_EQ(ns("1.00049999"), 1'000);
  EXPECT_EQ(ns("-0.0005"), -1);
  EXPECT_EQ(ns("-2.25"), -2'250);
  // 19 significant digits: a double would lose the last ones.
  EXPECT_EQ(ns("1711964646123456.789"), 1'711'964'646'123'456'789);
  EXPECT_EQ(ns("1689179601896060"), 1'689'179'601'896'060'000);
  EXPECT_EQ(ns("4458676522690.655 \n"), 4'458'676'522'690'655);  // simdjson keeps trailing spaces
  EXPECT_EQ(ns("\"123.25\""), 123'250);                          // strings holding numbers
  EXPECT_EQ(ns("\" 7 \""), 7'000);
  EXPECT_EQ(ns("1.5e3"), 1'500'000);  // exponents go through double
  EXPECT_EQ(ns("2E-3"), 2);
}

TEST(KinetoValues, NonNumbersAndOverflowAreRejected) {
  std::int64_t value = 0;
  for (const char* bad : {"", "-", ".", "abc", "\"\"", "\"12x\"", "12x", "true", "null", "[1]",
                          "9223372036854776", "99999999999999999999", "1e400", "\"1", "1..2"}) {
    EXPECT_FALSE(parse_us_as_ns(bad, &value)) << bad;
  }
}

TEST(KinetoValues, IntegersAcceptFloatsAndStrings) {
  std::int64_t value = 0;
  ASSERT_TRUE(parse_integer("42", &value));
  EXPECT_EQ(value, 42);
  ASSERT_TRUE(parse_integer("-549452224", &value));
  EXPECT_EQ(value, -549452224);
  ASSERT_TRUE(parse_integer("4294967295", &value));
  EXPECT_EQ(value, 4294967295);
  ASSERT_TRUE(parse_integer("3.0", &value));
  EXPECT_EQ(value, 3);
  ASSERT_TRUE(parse_integer("2.5", &value));
  EXPECT_EQ(value, 3);
  ASSERT_TRUE(parse_integer("\"17\"", &value));
  EXPECT_EQ(value, 17);
  ASSERT_TRUE(parse_integer("9223372036854775807", &value));
  EXPECT_EQ(value, INT64_MAX);
  EXPECT_FALSE(parse_integer("9223372036854775808", &value));
  EXPECT_FALSE(parse_integer("\"Spans\"", &value));
  EXPECT_FALSE(parse_integer("{", &value));
}

TEST(KinetoValues, UnescapesJsonStrings) {
  std::string out;
  ASSERT_TRUE(json_unescape(R"j(a\"b\\c\/d\n\t)j", &out));
  EXPECT_EQ(out, "a\"b\\c/d\n\t");
  ASSERT_TRUE(json_unescape(R"j(\u00e9\u4e2d\ud83d\ude00)j", &out));
  EXPECT_EQ(out, "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
  EXPECT_FALSE(json_unescape(R"j(\x)j", &out));
  EXPECT_FALSE(json_unescape(R"j(\u12)j", &out));
  EXPECT_FALSE(json_unescape(R"j(\ud83d)j", &out));  // lone high surrogate
  EXPECT_FALSE(json_unescape("\\", &out));
}

TEST(KinetoValues, ElementBytesFromDtypeNames) {
  EXPECT_EQ(element_bytes("Float"), 4);
  EXPECT_EQ(element_bytes("BFloat16"), 2);
  EXPECT_EQ(element_bytes("c10::BFloat16"), 2);
  EXPECT_EQ(element_bytes("c10::Half"), 2);
  EXPECT_EQ(element_bytes("long int"), 8);
  EXPECT_EQ(element_bytes("int"), 4);
  EXPECT_EQ(element_bytes("Double"), 8);
  EXPECT_EQ(element_bytes("Byte"), 1);
  EXPECT_EQ(element_bytes("Float8_e4m3fn"), 1);
  EXPECT_EQ(element_bytes("__nv_bfloat16"), 2);
  EXPECT_EQ(element_bytes("TensorList"), -1);
  EXPECT_EQ(element_bytes(""), -1);
}

TEST(KinetoValues, NcclKernelNames) {
  auto c = collective_from_kernel_name(
      "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)");
  EXPECT_EQ(c.name, "allreduce");
  EXPECT_EQ(c.element_bytes, 4);
  c = collective_from_kernel_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)");
  EXPECT_EQ(c.name, "sendrecv");
  EXPECT_EQ(c.element_bytes, 1);
  c = collective_from_kernel_name(
      "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(c.name, "allgather");
  EXPECT_EQ(c.element_bytes, -1);
  c = collective_from_kernel_name("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(x)");
  EXPECT_EQ(c.name, "reducescatter");
  EXPECT_EQ(c.element_bytes, 2);
  c = collective_from_kernel_name("ncclDevKernel_AllReduce_Sum___nv_bfloat16_RING_LL");
  EXPECT_EQ(c.element_bytes, 2);
  c = collective_from_kernel_name("ncclDevKernel_Generic");
  EXPECT_EQ(c.name, "");
  c = collective_from_kernel_name("void at::native::kernel<float>()");
  EXPECT_EQ(c.name, "");
}

}  // namespace
}  // namespace powertrain::trace::detail
