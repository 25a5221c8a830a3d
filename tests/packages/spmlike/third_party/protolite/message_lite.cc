// Stands in for bundled protobuf-lite: object code that only the runtime library carries.
#include <string>

namespace protolite {
std::string Serialize(const std::string& text) { return "pb:" + text; }
}  // namespace protolite
