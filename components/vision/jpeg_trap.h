// libjpeg reports errors by longjmp: a trap that keeps the message and jumps back to the setjmp
// of the function that called libjpeg (decode_jpeg.cc, encode_jpeg.cc). That function holds no
// C++ object with a destructor in its frame, so the jump skips none.
#pragma once

#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>

namespace mploader::vision::detail {

struct JpegTrap {
  jpeg_error_mgr manager;  // first: libjpeg sees a jpeg_error_mgr*
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] inline void jump_on_jpeg_error(j_common_ptr cinfo) {
  auto* trap = reinterpret_cast<JpegTrap*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, trap->message);
  std::longjmp(trap->jump, 1);
}

// Points `cinfo` (a compress or decompress struct) at `trap`.
template <typename Info>
void install_jpeg_trap(Info& cinfo, JpegTrap& trap) {
  cinfo.err = jpeg_std_error(&trap.manager);
  trap.manager.error_exit = jump_on_jpeg_error;
  trap.message[0] = '\0';
}

}  // namespace mploader::vision::detail
