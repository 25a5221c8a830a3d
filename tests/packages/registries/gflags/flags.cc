#include <gflags/gflags.h>
DEFINE_int32(demo_threads, 1, "worker threads");
int shared_work() { return FLAGS_demo_threads; }
