// The library's own entry point (NAME is one or two), exported whatever the visibility.
int shared_work();
extern "C" __attribute__((visibility("default"))) int NAME() { return shared_work(); }
