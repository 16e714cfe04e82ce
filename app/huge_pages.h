// Transparent huge pages for the simulator's heap (see huge_pages.cpp).
#pragma once

namespace arlsim::app {

// Re-executes the program once with glibc's malloc told to back its heap with transparent huge
// pages, unless GLIBC_TUNABLES already says what to do about them (glibc.malloc.hugetlb=0 opts
// out). Returns, changing nothing, where that cannot be done.
void use_huge_pages(char** argv);

}  // namespace arlsim::app
