// The built-in collators on their own, without workers: every way a sample's tensor can reach
// a batch row (contiguous memcpy, a strided or lazy view, a shorter padded tensor), and the
// samples they refuse (another dtype than sample 0's, names in another order).
#include "error_text.h"

#include <mploader/collate.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <vector>

namespace test_collate {

using mploader::Sample;

using testing_errors::error_of;

namespace {

// Allocates the batch tensors a worker would map from its slot, then fills them.
std::vector<at::Tensor> collate(mploader::Collator& c, const std::vector<Sample>& samples) {
  std::vector<at::Tensor> out;
  for (const mploader::TensorLayout& t : c.layout(samples)) {
    out.push_back(at::full(t.shape, 7, at::TensorOptions().dtype(t.dtype)));
  }
  c.fill(samples, out);
  return out;
}

}  // namespace

TEST_CASE("collate: stack copies every row, whatever the source's layout", "[collate]") {
  const at::Tensor grid = at::arange(36, at::kFloat).reshape({6, 6});
  REQUIRE_FALSE(grid.t()[1].is_contiguous());
  std::vector<Sample> samples{
      {{"x", grid[0]}, {"y", at::scalar_tensor(10, at::kLong)}},
      {{"x", grid.t()[1]}, {"y", at::scalar_tensor(11, at::kLong)}},  // strided
      {{"x", grid[3]}, {"y", at::scalar_tensor(12, at::kLong)}},
  };
  auto out = collate(*mploader::stack_collate(), samples);
  REQUIRE(out.size() == 2);
  CHECK(out[0].sizes() == at::IntArrayRef({3, 6}));
  for (int i = 0; i < 3; ++i) {
    CHECK(at::equal(out[0][i], samples[i]["x"]));
    CHECK(out[1][i].item<int64_t>() == 10 + i);
  }
}

// Stacks `samples` whole and row by row (as a worker streams them); both must equal `expected`.
void check_both_paths(const std::vector<Sample>& samples, const at::Tensor& expected) {
  auto stack = mploader::stack_collate();
  CHECK(at::equal(collate(*stack, samples)[0], expected));
  const auto layout = stack->layout_from_first(samples[0], samples.size());
  std::vector<at::Tensor> rows{at::empty(layout[0].shape, layout[0].dtype)};
  for (size_t i = 0; i < samples.size(); ++i) stack->fill_row(i, samples[i], layout, rows);
  CHECK(at::equal(rows[0], expected));
}

TEST_CASE("collate: lazy and strided views reach the batch as their values", "[collate]") {
  const at::Tensor z = at::complex(at::arange(4, at::kFloat), at::arange(4, at::kFloat) + 10);
  REQUIRE(z.conj().is_conj());
  // conj() and the imaginary part of a conjugate (a negative-bit view) keep the memory of the
  // original: a byte copy would drop the conjugation and the sign.
  check_both_paths({{{"z", z.conj()}}, {{"z", z.conj()}}},
                   at::stack({z.conj().resolve_conj(), z.conj().resolve_conj()}));
  const at::Tensor negative = at::imag(z.conj());
  REQUIRE(negative.is_neg());
  check_both_paths({{{"v", negative}}, {{"v", negative}}},
                   at::stack({-(at::arange(4, at::kFloat) + 10), -(at::arange(4, at::kFloat) + 10)}));
  const at::Tensor grid = at::arange(12, at::kLong).reshape({3, 4});
  const at::Tensor expanded = at::arange(4, at::kLong).expand({3, 4});  // stride 0
  const at::Tensor offset = grid.flatten().narrow(0, 4, 4);  // a storage offset, contiguous
  REQUIRE(expanded.stride(0) == 0);
  REQUIRE(offset.storage_offset() == 4);
  check_both_paths({{{"m", grid.t()}}, {{"m", expanded.t()}}},
                   at::stack({grid.t().contiguous(), expanded.t().contiguous()}));
  check_both_paths({{{"o", offset}}, {{"o", grid[1]}}}, at::stack({grid[1], grid[1]}));
}

TEST_CASE("collate: a sample of another dtype than sample 0's is refused, never converted",
          "[collate]") {
  const std::vector<Sample> samples{{{"label", at::tensor({1, 2}, at::kLong)}},
                                    {{"label", at::tensor({1.5, 2.5}, at::kFloat)}}};
  auto stack = mploader::stack_collate();
  const auto layout = stack->layout_from_first(samples[0], 2);
  std::vector<at::Tensor> rows{at::empty(layout[0].shape, layout[0].dtype)};
  for (const std::string& text :
       {error_of([&] { mploader::stack_collate()->layout(samples); }),
        error_of([&] { stack->fill_row(1, samples[1], layout, rows); })}) {
    CHECK_THAT(text, Catch::Contains("cannot stack 'label': sample 1 has dtype Float but "
                                     "sample 0 has Long"));
  }
  CHECK_THROWS_WITH(mploader::pad_collate()->layout(samples),
                    Catch::Contains("cannot pad 'label': sample 1 has dtype Float but sample 0 "
                                    "has Long"));
}

TEST_CASE("collate: pad fills short rows' fronts and pads the rest", "[collate]") {
  std::vector<Sample> samples{
      {{"t", at::arange(3, at::kLong)}},
      {{"t", at::arange(5, at::kLong).mul(2).slice(0, 0, 5, 1)}},
      {{"t", at::arange(8, at::kLong).slice(0, 0, 8, 2)}},  // strided, length 4
  };
  auto out = collate(*mploader::pad_collate(-1), samples);
  REQUIRE(out.size() == 2);
  const at::Tensor expected = at::tensor({0, 1, 2, -1, -1, 0, 2, 4, 6, 8, 0, 2, 4, 6, -1},
                                         at::kLong).reshape({3, 5});
  CHECK(at::equal(out[0], expected));
  CHECK(at::equal(out[1], at::tensor({3, 5, 4}, at::kLong)));
}

TEST_CASE("collate: samples naming their tensors in another order are refused", "[collate]") {
  std::vector<Sample> samples{{{"a", at::zeros({2})}, {"b", at::zeros({2})}},
                              {{"b", at::zeros({2})}, {"a", at::zeros({2})}}};
  CHECK_THROWS_WITH(mploader::stack_collate()->layout(samples),
                    Catch::Contains("sample 1 has the tensors of sample 0 in another order "
                                    "('b', 'a' vs 'a', 'b')"));
}

TEST_CASE("collate: stack streams row by row to the same batch, and refuses the same samples",
          "[collate]") {
  auto stack = mploader::stack_collate();
  REQUIRE(stack->streams());
  std::vector<Sample> samples;
  for (int i = 0; i < 4; ++i) {
    samples.push_back({{"x", at::full({2, 3}, i, at::kFloat)}, {"y", at::scalar_tensor(i)}});
  }
  const auto whole = collate(*stack, samples);
  const auto layout = stack->layout_from_first(samples[0], samples.size());
  std::vector<at::Tensor> rows;
  for (const auto& t : layout) rows.push_back(at::empty(t.shape, t.dtype));
  for (size_t i = 0; i < samples.size(); ++i) stack->fill_row(i, samples[i], layout, rows);
  for (size_t k = 0; k < whole.size(); ++k) CHECK(at::equal(rows[k], whole[k]));

  const Sample wrong_shape{{"x", at::zeros({3, 2})}, {"y", at::scalar_tensor(0)}};
  CHECK_THROWS_WITH(stack->fill_row(2, wrong_shape, layout, rows),
                    Catch::Contains("sample 2 has shape [3, 2] but sample 0 has [2, 3]"));
  const Sample wrong_names{{"y", at::scalar_tensor(0)}, {"x", at::zeros({2, 3})}};
  CHECK_THROWS_WITH(stack->fill_row(1, wrong_names, layout, rows),
                    Catch::Contains("sample 1 has the tensors of sample 0 in another order"));
  CHECK_FALSE(mploader::pad_collate()->streams());
}

TEST_CASE("collate: differing names are listed as those only in one sample and in the other",
          "[collate]") {
  const std::vector<Sample> samples{{{"x", at::zeros({2})}, {"label", at::zeros({})}},
                                    {{"x", at::zeros({2})}, {"lbl", at::zeros({})}}};
  auto stack = mploader::stack_collate();
  const auto layout = stack->layout_from_first(samples[0], 2);
  std::vector<at::Tensor> rows;
  for (const auto& t : layout) rows.push_back(at::empty(t.shape, t.dtype));
  for (const std::string& text :
       {error_of([&] { mploader::stack_collate()->layout(samples); }),
        error_of([&] { mploader::pad_collate()->layout(samples); }),
        error_of([&] { stack->fill_row(1, samples[1], layout, rows); })}) {
    CHECK_THAT(text, Catch::Contains("only in sample 1: 'lbl'") &&
                         Catch::Contains("only in sample 0: 'label'"));
  }
}

TEST_CASE("collate: a sample with no tensors is refused by name", "[collate]") {
  const std::vector<Sample> samples{{{"x", at::zeros({2})}}, {}};
  CHECK_THROWS_WITH(mploader::stack_collate()->layout(samples),
                    Catch::Contains("sample 1 has no tensors"));
  CHECK_THROWS_WITH(mploader::pad_collate()->layout(samples),
                    Catch::Contains("sample 1 has no tensors"));
  CHECK_THROWS_WITH(mploader::stack_collate()->layout_from_first(Sample{}, 2),
                    Catch::Contains("sample 0 has no tensors"));
}

TEST_CASE("collate: a sparse tensor is refused naming it and to_dense()", "[collate]") {
  const std::vector<Sample> samples{{{"x", at::zeros({4})}},
                                    {{"x", at::zeros({4}).to_sparse()}}};
  for (const std::string& text : {error_of([&] { collate(*mploader::stack_collate(), samples); }),
                                  error_of([&] { collate(*mploader::pad_collate(), samples); })}) {
    CHECK_THAT(text, Catch::Contains("'x'") && Catch::Contains("sample 1") &&
                         Catch::Contains("sparse") && Catch::Contains("to_dense()"));
  }
  auto returns_sparse = mploader::function_collate([](const std::vector<Sample>&) {
    return mploader::TensorDict{{"x", at::zeros({2, 4}).to_sparse()}};
  });
  CHECK_THAT(error_of([&] { collate(*returns_sparse, samples); }),
             Catch::Contains("'x'") && Catch::Contains("to_dense()"));
}

TEST_CASE("collate: a quantized tensor is refused and one that requires grad is copied",
          "[collate]") {
  const at::Tensor quantized = at::quantize_per_tensor(at::ones({4}), 0.5, 0, at::kQUInt8);
  const std::vector<Sample> samples{{{"x", at::zeros({4})}}, {{"x", quantized}}};
  CHECK_THAT(error_of([&] { collate(*mploader::stack_collate(), samples); }),
             Catch::Contains("'x' of sample 1 is quantized") &&
                 Catch::Contains("dequantize()"));
  // Autograd state is no obstacle: the values are copied, the graph is not.
  const at::Tensor leaf = at::arange(4, at::kFloat).requires_grad_();
  const std::vector<Sample> grads{{{"x", leaf}}, {{"x", leaf.mul(2)}}};
  for (auto collator : {mploader::stack_collate(), mploader::pad_collate()}) {
    const auto out = collate(*collator, grads);
    CHECK(at::equal(out[0][1], at::arange(4, at::kFloat).mul(2)));
  }
}

}  // namespace test_collate
