// render(): one antialiased bilinear resampling from the plan's source rectangle to the output,
// as PIL's (and torchvision's antialias=True) triangle filter: when shrinking, the filter's
// support widens with the shrink factor, so every source pixel under an output pixel counts.
// Separable: a horizontal pass over only the rows the vertical taps reach, then a vertical pass
// that writes uint8 HWC or normalized float CHW, mirrored if the plan flips.
#include <mploader/vision/transforms.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mploader::vision {
namespace {

// One axis: output coordinate o covers [start + o * step, start + (o + 1) * step) in buffer
// pixels. Taps are clipped to [0, extent) and their weights renormalised (as PIL).
struct Axis {
  double start, step;
  int extent, outputs;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

void compute_taps(const Axis& a, RenderScratch::Taps& t) {
  const double filter_scale = std::max(a.step, 1.0);  // the triangle widens when shrinking
  t.stride = static_cast<int>(std::ceil(2 * filter_scale)) + 2;
  t.starts.resize(static_cast<size_t>(a.outputs));
  t.counts.resize(static_cast<size_t>(a.outputs));
  t.weights.assign(static_cast<size_t>(a.outputs) * static_cast<size_t>(t.stride), 0.0f);
  for (int o = 0; o < a.outputs; ++o) {
    const double center = a.start + (o + 0.5) * a.step;
    // Pixel x has weight when |x + 0.5 - center| < filter_scale.
    const int lo = std::max(static_cast<int>(std::floor(center - filter_scale + 0.5)), 0);
    const int hi = std::min(static_cast<int>(std::ceil(center + filter_scale - 0.5)), a.extent);
    const int count = std::max(std::min(hi - lo, t.stride), 1);
    float* w = &t.weights[static_cast<size_t>(o) * static_cast<size_t>(t.stride)];
    double total = 0;
    for (int k = 0; k < count; ++k) {
      const double weight = triangle((lo + k + 0.5 - center) / filter_scale);
      w[k] = static_cast<float>(weight);
      total += weight;
    }
    if (total > 0) {
      for (int k = 0; k < count; ++k) w[k] = static_cast<float>(w[k] / total);
    } else {
      w[0] = 1.0f;  // a rectangle past the last pixel centre: the nearest pixel
    }
    t.starts[static_cast<size_t>(o)] = std::min(lo, a.extent - 1);
    t.counts[static_cast<size_t>(o)] = count;
  }
}

// The buffer axis of the plan's rectangle: source coordinates through the decode's scale.
Axis buffer_axis(double left, double extent, int source, int scaled, int offset, int buffer,
                 int outputs) {
  const double ratio = static_cast<double>(scaled) / source;
  return Axis{left * ratio - offset, extent * ratio / outputs, buffer, outputs};
}

// Pixels [lo, hi) of an RGB row as floats, 4 per pixel (the fourth unused).
void widen_row(const uint8_t* src, int lo, int hi, float* out) {
  int x = lo;
#if defined(__SSE2__)
  // 4 bytes at once (this pixel's 3 and the next one's first; lane 3 is never read), up to
  // the last pixel, whose fourth byte may lie past the row.
  const __m128i zero = _mm_setzero_si128();
  for (; x + 1 < hi; ++x) {
    uint32_t bytes;
    std::memcpy(&bytes, src + 3 * x, 4);
    const __m128i v = _mm_unpacklo_epi16(
        _mm_unpacklo_epi8(_mm_cvtsi32_si128(static_cast<int>(bytes)), zero), zero);
    _mm_storeu_ps(out + 4 * x, _mm_cvtepi32_ps(v));
  }
#endif
  for (; x < hi; ++x) {
    for (int c = 0; c < 3; ++c) out[4 * x + c] = src[3 * x + c];
  }
}

// sum[c] = the weighted sum of channel c over `count` widened pixels from `p`.
void taps4(const float* w, const float* p, int count, float* sum) {
#if defined(__SSE2__)
  __m128 acc = _mm_setzero_ps();
  for (int k = 0; k < count; ++k) {
    acc = _mm_add_ps(acc, _mm_mul_ps(_mm_set1_ps(w[k]), _mm_loadu_ps(p + 4 * k)));
  }
  _mm_storeu_ps(sum, acc);
#else
  for (int c = 0; c < 3; ++c) sum[c] = 0;
  for (int k = 0; k < count; ++k) {
    for (int c = 0; c < 3; ++c) sum[c] += w[k] * p[4 * k + c];
  }
#endif
}

// Rows [first, first + rows) of `image`, resampled to `ow` columns (mirrored when `flip`),
// into s.rows as planes: row r's channel c is s.rows[(r * 3 + c) * ow ...]. Planar, so that the
// vertical pass and the CHW output run over contiguous floats. Each source row is widened to
// floats, 4 per pixel, once: a tap is then one 4-lane multiply-add, which the compiler
// vectorizes, instead of three conversions and three scalar ones.
void horizontal_pass(const RgbImage& image, int first, int rows, int ow, bool flip,
                     RenderScratch& s) {
  const RenderScratch::Taps& t = s.x;
  const size_t plane = static_cast<size_t>(ow);
  s.rows.resize(static_cast<size_t>(rows) * plane * 3);
  int lo = t.starts[0], hi = lo;  // the columns any tap reads
  for (int o = 0; o < ow; ++o) {
    lo = std::min(lo, t.starts[o]);
    hi = std::max(hi, t.starts[o] + t.counts[o]);
  }
  s.pixels.resize(static_cast<size_t>(image.width) * 4 + 4);
  float* __restrict pixels = s.pixels.data();
  for (int r = 0; r < rows; ++r) {
    const uint8_t* src =
        image.pixels.data() + static_cast<size_t>(first + r) * static_cast<size_t>(image.width) * 3;
    widen_row(src, lo, hi, pixels);
    float* red_plane = &s.rows[static_cast<size_t>(r) * plane * 3];
    float* green_plane = red_plane + plane;
    float* blue_plane = green_plane + plane;
    for (int o = 0; o < ow; ++o) {
      const float* w = &t.weights[static_cast<size_t>(o) * static_cast<size_t>(t.stride)];
      float sum[4];
      taps4(w, pixels + static_cast<size_t>(t.starts[o]) * 4, t.counts[o], sum);
      const size_t x = static_cast<size_t>(flip ? ow - 1 - o : o);
      red_plane[x] = sum[0];
      green_plane[x] = sum[1];
      blue_plane[x] = sum[2];
    }
  }
}

// Output row `o` from s.rows (whose row 0 is image row `first`), into s.line (3 planes of ow).
// Plain loops over restrict pointers, so that they vectorize.
void vertical_taps(int o, int first, int ow, RenderScratch& s) {
  const RenderScratch::Taps& t = s.y;
  const float* w = &t.weights[static_cast<size_t>(o) * static_cast<size_t>(t.stride)];
  const size_t width = static_cast<size_t>(ow) * 3;
  s.line.resize(width);
  float* __restrict line = s.line.data();
  const float* __restrict row = &s.rows[static_cast<size_t>(t.starts[o] - first) * width];
  const float w0 = w[0];
  for (size_t x = 0; x < width; ++x) line[x] = w0 * row[x];
  for (int k = 1; k < t.counts[o]; ++k) {
    const float* __restrict next = row + static_cast<size_t>(k) * width;
    const float wk = w[k];
    for (size_t x = 0; x < width; ++x) line[x] += wk * next[x];
  }
}

}  // namespace

Rect Compose::needed_region(const ImagePlan& plan, int source_width, int source_height) const {
  // The filter reaches one output pixel's width (or one source pixel, when enlarging) beyond
  // the rectangle; one more source pixel covers the DCT scale's rounding.
  const double reach_x = std::max(plan.source.width / plan.out_width, 1.0) + 1;
  const double reach_y = std::max(plan.source.height / plan.out_height, 1.0) + 1;
  const double left = std::max(plan.source.left - reach_x, 0.0);
  const double top = std::max(plan.source.top - reach_y, 0.0);
  const double right = std::min(plan.source.left + plan.source.width + reach_x,
                                static_cast<double>(source_width));
  const double bottom = std::min(plan.source.top + plan.source.height + reach_y,
                                 static_cast<double>(source_height));
  return Rect{left, top, right - left, bottom - top};
}

double Compose::min_scale(const ImagePlan& plan) const {
  const double x = plan.out_width / plan.source.width;
  const double y = plan.out_height / plan.source.height;
  return std::min(std::max(x, y), 1.0);
}

void Compose::render(const RgbImage& image, const ImagePlan& plan, void* out,
                     RenderScratch& s) const {
  const int ow = plan.out_width, oh = plan.out_height;
  compute_taps(buffer_axis(plan.source.left, plan.source.width, image.source_width,
                           image.scaled_width, image.offset_x, image.width, ow),
               s.x);
  compute_taps(buffer_axis(plan.source.top, plan.source.height, image.source_height,
                           image.scaled_height, image.offset_y, image.height, oh),
               s.y);
  // Only the rows the vertical taps reach go through the horizontal pass.
  int first = s.y.starts[0], last = first;
  for (int o = 0; o < oh; ++o) {
    first = std::min(first, s.y.starts[o]);
    last = std::max(last, s.y.starts[o] + s.y.counts[o] - 1);
  }
  horizontal_pass(image, first, last - first + 1, ow, plan.flip, s);
  const size_t plane = static_cast<size_t>(oh) * static_cast<size_t>(ow);
  const size_t width = static_cast<size_t>(ow);
  for (int o = 0; o < oh; ++o) {
    vertical_taps(o, first, ow, s);
    const size_t row = static_cast<size_t>(o) * width;
    const float* __restrict line = s.line.data();
    if (layout_ == PixelLayout::kUint8HWC) {
      uint8_t* __restrict dst = static_cast<uint8_t*>(out) + row * 3;
      for (size_t x = 0; x < width; ++x) {
        for (size_t c = 0; c < 3; ++c) {
          dst[3 * x + c] = static_cast<uint8_t>(std::clamp(line[c * width + x], 0.0f, 255.0f) + 0.5f);
        }
      }
      continue;
    }
    for (size_t c = 0; c < 3; ++c) {
      float* __restrict dst = static_cast<float*>(out) + c * plane + row;
      const float* __restrict channel = line + c * width;
      const float scale = scale_[c], offset = offset_[c];
      for (size_t x = 0; x < width; ++x) dst[x] = channel[x] * scale + offset;
    }
  }
}

}  // namespace mploader::vision
