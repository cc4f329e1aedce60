// Report.cpp
#include "testkit/Report.h"

#include <sstream>

namespace nn::testkit {

bool Report::expect(bool passed, const std::string& what) {
  ++checks;
  if (!passed) failures.push_back(what);
  return passed;
}

void Report::merge(const Report& other) {
  checks += other.checks;
  for (const std::string& f : other.failures) failures.push_back(other.subject.empty() ? f : other.subject + ": " + f);
}

std::string Report::str() const {
  std::ostringstream os;
  os << (subject.empty() ? "check" : subject) << ": ";
  if (ok()) {
    os << "ok (" << checks << " checks)";
    return os.str();
  }
  os << failures.size() << " of " << checks << " checks failed:";
  for (const std::string& f : failures) os << "\n  " << f;
  return os.str();
}

const Report& Report::require() const {
  if (!ok()) throw Failure(str());
  return *this;
}

}  // namespace nn::testkit
