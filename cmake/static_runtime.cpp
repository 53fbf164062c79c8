// Linked into every executable of a ktr_STATIC_RUNTIME build (binaries that travel to another machine):
// the static libstdc++ of GCC 12 calls arc4random (glibc 2.36) in std::random_device, which would make the
// binaries refuse to start on glibc 2.35 (Ubuntu 22.04). This definition, from getrandom (glibc 2.25), is found
// first, so they need glibc 2.35: the static libgcc's unwinder calls _dl_find_object (glibc 2.35), and going lower
// would need the shared libgcc, which the travelling binaries may not need (scripts/check-travel.sh). So they run
// on Ubuntu 22.04 and newer, not on RHEL 9 (glibc 2.34).
#include <sys/random.h>
#include <cstdint>

extern "C" std::uint32_t arc4random(void) {
  std::uint32_t value = 0;
  while (getrandom(&value, sizeof value, 0) != static_cast<ssize_t>(sizeof value)) {
  }
  return value;
}
